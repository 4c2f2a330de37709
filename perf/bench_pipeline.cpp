// Whole-pipeline throughput of DqnTrainer, measured as BENCHMARKS.md defines
// it for the peers: fill the buffer with collect-only iterations up to
// learning_starts, warm up with 20 training iterations, then time `repeats`
// windows of `iterations` training iterations, fencing the instance before
// and after each window; report the median window.
//
//   foxrl_bench_pipeline --config perf/configs/market-throughput.json [--set key=value ...]
//                        [--iterations 1000] [--repeats 3] [--label NAME] [--list-launches]
//
// --list-launches: also prints the audited iteration's kernel launches to
// stderr, one "kind name [innermost profiling region]" line each, in launch
// order (perf/README.md's launch counts come from it).
#include "agents/dqn/dqn_trainer.hpp"
#include "core/kokkos_tools_audit.hpp"

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  std::string config_path, label;
  std::vector<std::string> overrides;
  int iterations = 1000, repeats = 3;
  bool list_launches = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--config" && i + 1 < argc)
      config_path = argv[++i];
    else if (a == "--set" && i + 1 < argc)
      overrides.emplace_back(argv[++i]);
    else if (a == "--iterations" && i + 1 < argc)
      iterations = std::max(1, std::atoi(argv[++i]));
    else if (a == "--repeats" && i + 1 < argc)
      repeats = std::max(1, std::atoi(argv[++i]));
    else if (a == "--label" && i + 1 < argc)
      label = argv[++i];
    else if (a == "--list-launches")
      list_launches = true;
    else {
      std::cerr << "usage: " << argv[0]
                << " --config FILE [--set key=value ...] [--iterations N] [--repeats R] [--label NAME]"
                   " [--list-launches]\n";
      return 2;
    }
  }
  Kokkos::ScopeGuard kokkos(argc, argv);
  try {
    using Exec = Kokkos::DefaultExecutionSpace;
    foxrl::TrainConfig config =
        config_path.empty() ? foxrl::TrainConfig{} : foxrl::TrainConfig::from_json_file(config_path);
    config.apply_overrides(overrides);
    if (label.empty()) label = config_path.empty() ? "defaults" : config_path;
    foxrl::DqnTrainer<Exec> trainer(config);
    auto& context = trainer.context();

    const auto setup_start = std::chrono::steady_clock::now();
    while (trainer.global_step() < config.learning_starts) trainer.iterate();
    for (int i = 0; i < 20; ++i) trainer.iterate();
    context.fence("bench::warm");
    const double warm_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - setup_start).count();

    std::size_t launches = 0, fences = 0;
    {
      foxrl::KokkosToolsAudit audit;
      trainer.iterate();
      context.fence("bench::count");
      launches = audit.record().launches.size();
      for (const auto& f : audit.record().fences) fences += f.name != "foxrl::bench::count";
      if (list_launches) {
        for (const auto& l : audit.record().launches) {
          const char* kind = l.kind == foxrl::AuditRecord::LaunchKind::parallel_for      ? "for"
                             : l.kind == foxrl::AuditRecord::LaunchKind::parallel_reduce ? "reduce"
                                                                                         : "scan";
          std::cerr << kind << ' ' << l.name << (l.regions.empty() ? "" : "  [" + l.regions.back() + "]") << '\n';
        }
      }
    }
    std::vector<double> window_s;
    for (int r = 0; r < repeats; ++r) {
      context.fence("bench::before");
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < iterations; ++i) trainer.iterate();
      context.fence("bench::after");
      window_s.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    std::vector<double> sorted = window_s;
    std::sort(sorted.begin(), sorted.end());
    const double median = sorted[sorted.size() / 2];
    const double us_per_iteration = median / iterations * 1e6;
    std::printf(
        "{\"bench\":\"pipeline\",\"config\":\"%s\",\"backend\":\"%s\",\"num_envs\":%lld,\"median_us\":%.2f,"
        "\"us_per_iteration\":%.2f,\"env_steps_per_s\":%.0f,\"updates_per_s\":%.0f,\"iterations\":%d,"
        "\"repeats\":%d,\"launches_per_iteration\":%zu,\"fences_per_iteration\":%zu,\"fill_and_warmup_s\":%.2f,"
        "\"update_graph_replays\":%lld,\"iteration_graph_replays\":%lld,\"windows_s\":[",
        label.c_str(), Exec::name(), static_cast<long long>(config.num_envs), us_per_iteration, us_per_iteration,
        static_cast<double>(config.num_envs) / us_per_iteration * 1e6,
        static_cast<double>(config.updates_per_iteration) / us_per_iteration * 1e6, iterations, repeats, launches,
        fences, warm_s, static_cast<long long>(trainer.learner().graph_replays()),
        static_cast<long long>(trainer.iteration_graph_replays()));
    for (std::size_t i = 0; i < window_s.size(); ++i) std::printf("%s%.4f", i ? "," : "", window_s[i]);
    std::printf("]}\n");
  } catch (const std::exception& e) {
    std::cerr << "foxrl_bench_pipeline: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
