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
//
// --fused-phases N (CUDA, where the update runs fused): probes the last N
// fused updates' phases (DqnLearner::set_fused_update_probe) and prints a
// second JSON line, "fused_update_phases": per phase the median over those
// updates of the slowest block's time (us, from the SM clock), and the
// median span of the kernel (first block's start to last block's end, us,
// from the global timer). The probe's block barriers slow the kernel a
// little, so the timed windows of such a run are not the benchmark's.
//
// --kernel-trace FILE [--trace-iterations N] (CUDA builds with CUPTI): after
// the timed windows, runs N more iterations (default 200), each followed by
// a fence, under a CUPTI activity trace (perf/kernel_trace.hpp) and writes
// one CSV row per kernel, copy or fill: iteration, start_ns and end_ns
// (from the iteration's start), graph_node, name. perf/kernel_trace.py
// summarises it: per iteration the GPU span, the time kernels ran and the
// gaps between them, and each node's warm time in place. The fences
// separate the iterations; they are not in the timed windows.
#include "core/host_mirror.hpp"
#include "core/kokkos_tools_audit.hpp"
#include "kernel_trace.hpp"
#include "train/online_trainer.hpp"

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

namespace {

/// The "fused_update_phases" line of --fused-phases (see the file comment).
template <class Context, class Stamps>
void print_fused_phases(Context& context, const std::string& label, const Stamps& stamps) {
  const auto host = foxrl::host_mirror(stamps);
  Kokkos::deep_copy(context.space(), host, stamps);
  context.fence("bench::fused_phases");
  [[maybe_unused]] int device = 0;
  int clock_khz = 0;
#ifdef KOKKOS_ENABLE_CUDA
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device);
#endif
  const double us_per_cycle = clock_khz > 0 ? 1e3 / clock_khz : 0.0;
  const char* names[] = {"stage", "forward", "loss", "backward", "first_barrier", "sum_partials", "decide_and_step"};
  constexpr int phases = sizeof names / sizeof names[0];
  std::vector<std::vector<double>> slowest(phases);
  std::vector<double> spans;
  for (std::size_t u = 0; u < host.extent(0); ++u) {
    if (host(u, 0, foxrl::fused_update_stamp_end_ns) == 0) continue;  // never written
    unsigned long long first = ~0ull, last = 0;
    for (std::size_t b = 0; b < host.extent(1); ++b) {
      first = std::min(first, host(u, b, foxrl::fused_update_stamp_start_ns));
      last = std::max(last, host(u, b, foxrl::fused_update_stamp_end_ns));
    }
    spans.push_back(static_cast<double>(last - first) * 1e-3);
    for (int k = 0; k < phases; ++k) {
      double worst = 0.0;
      for (std::size_t b = 0; b < host.extent(1); ++b)
        worst = std::max(worst, static_cast<double>(host(u, b, k + 1) - host(u, b, k)) * us_per_cycle);
      slowest[k].push_back(worst);
    }
  }
  auto median = [](std::vector<double> v) {
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  std::printf(
      "{\"bench\":\"fused_update_phases\",\"config\":\"%s\",\"updates\":%zu,\"blocks\":%zu,"
      "\"span_us\":%.2f,\"phases_us\":{",
      label.c_str(), spans.size(), host.extent(1), median(spans));
  for (int k = 0; k < phases; ++k) std::printf("%s\"%s\":%.2f", k ? "," : "", names[k], median(slowest[k]));
  std::printf("}}\n");
}

/// --kernel-trace: `iterations` fenced iterations under a CUPTI trace, one
/// CSV row per activity (see the file comment).
template <class Trainer>
void write_kernel_trace(Trainer& trainer, const std::string& path, int iterations) {
  auto& context = trainer.context();
  std::ofstream out(path);
  if (!out) throw foxrl::UsageError("--kernel-trace: cannot write " + path);
  foxrl::bench::KernelTrace trace;
  context.fence("bench::trace_before");
  trace.start();
  std::vector<std::uint64_t> begins;
  for (int i = 0; i < iterations; ++i) {
    begins.push_back(foxrl::bench::KernelTrace::now());
    trainer.iterate();
    context.fence("bench::trace_iteration");
  }
  begins.push_back(foxrl::bench::KernelTrace::now());
  const auto activities = trace.stop();
  out << "iteration,start_ns,end_ns,graph_node,name\n";
  std::size_t it = 0;
  for (const auto& a : activities) {
    if (a.start_ns < begins.front()) continue;
    while (it + 1 < begins.size() && a.start_ns >= begins[it + 1]) ++it;
    if (it + 1 >= begins.size()) break;
    std::string name = a.name;
    for (char& c : name)
      if (c == '"') c = '\'';
    out << it << ',' << a.start_ns - begins[it] << ',' << a.end_ns - begins[it] << ',' << a.graph_node << ",\"" << name
        << "\"\n";
  }
  if (!out) throw foxrl::UsageError("--kernel-trace: writing " + path + " failed");
  std::cerr << "foxrl_bench_pipeline: traced " << activities.size() << " activities over " << iterations
            << " iterations into " << path << "\n";
}

}  // namespace

int main(int argc, char** argv) {
  std::string config_path, label;
  std::vector<std::string> overrides;
  int iterations = 1000, repeats = 3;
  bool list_launches = false;
  int fused_phases = 0;
  std::string kernel_trace;
  int trace_iterations = 200;
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
    else if (a == "--fused-phases" && i + 1 < argc)
      fused_phases = std::max(1, std::atoi(argv[++i]));
    else if (a == "--kernel-trace" && i + 1 < argc)
      kernel_trace = argv[++i];
    else if (a == "--trace-iterations" && i + 1 < argc)
      trace_iterations = std::max(1, std::atoi(argv[++i]));
    else {
      std::cerr << "usage: " << argv[0]
                << " --config FILE [--set key=value ...] [--iterations N] [--repeats R] [--label NAME]"
                   " [--list-launches] [--fused-phases N] [--kernel-trace FILE [--trace-iterations N]]\n";
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
    if (std::string why; !kernel_trace.empty() && !foxrl::bench::KernelTrace::available(why))
      throw foxrl::UsageError("--kernel-trace: " + why);
    foxrl::DqnTrainer<Exec> trainer(config);
    auto& context = trainer.context();
    foxrl::FusedUpdateStamps<Exec::memory_space> stamps;
    if (fused_phases > 0) {
      const int blocks = trainer.learner().fused_update_blocks();
      if (blocks == 0) {
        const std::string why = trainer.learner().fused_update_unfit();
        throw foxrl::UsageError(
            "--fused-phases: the update does not run as the fused CUDA kernel here (" +
            (why.empty()
                 ? std::string("it needs a CUDA build, the blas backend in fp32 and the kernel path fused_cuda on")
                 : why) +
            ")");
      }
      stamps = decltype(stamps)("bench::fused_stamps", fused_phases, blocks, foxrl::fused_update_stamp_count);
      trainer.learner().set_fused_update_probe(stamps);
    }

    const auto setup_start = std::chrono::steady_clock::now();
    while (trainer.global_step() < config.learning_starts) trainer.iterate();
    for (int i = 0; i < 20; ++i) trainer.iterate();
    context.fence("bench::warm");
    const double warm_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - setup_start).count();

    std::size_t launches = 0, copies = 0, fences = 0;
    {
      foxrl::KokkosToolsAudit audit;
      trainer.iterate();
      context.fence("bench::count");
      launches = audit.record().launches.size();
      copies = audit.record().copies.size();
      for (const auto& f : audit.record().fences) fences += f.name != "foxrl::bench::count";
      if (list_launches) {
        for (const auto& l : audit.record().launches) {
          const char* kind = l.kind == foxrl::AuditRecord::LaunchKind::parallel_for      ? "for"
                             : l.kind == foxrl::AuditRecord::LaunchKind::parallel_reduce ? "reduce"
                                                                                         : "scan";
          std::cerr << kind << ' ' << l.name << (l.regions.empty() ? "" : "  [" + l.regions.back() + "]") << '\n';
        }
        for (const auto& c : audit.record().copies)
          std::cerr << "copy " << c.dst_label << " (" << c.dst_space << ") <- " << c.src_label << " (" << c.src_space
                    << "), " << c.bytes << " bytes\n";
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
        "\"repeats\":%d,\"launches_per_iteration\":%zu,\"copies_per_iteration\":%zu,\"fences_per_iteration\":%zu,"
        "\"fill_and_warmup_s\":%.2f,"
        "\"update_graph_replays\":%lld,\"iteration_graph_replays\":%lld,\"iteration_graph_keys\":%zu,"
        "\"iteration_graph_failed_captures\":%d,\"gemm_epilogues\":%s,\"fused_update_threads\":%d,\"windows_s\":[",
        label.c_str(), Exec::name(), static_cast<long long>(config.num_envs), us_per_iteration, us_per_iteration,
        static_cast<double>(config.num_envs) / us_per_iteration * 1e6,
        static_cast<double>(config.updates_per_iteration) / us_per_iteration * 1e6, iterations, repeats, launches,
        copies, fences, warm_s, static_cast<long long>(trainer.learner().graph_replays()),
        static_cast<long long>(trainer.iteration_graph_replays()), trainer.iteration_graph_keys(),
        trainer.iteration_graph_failed_captures(), trainer.learner().fused_gemm_epilogues() ? "true" : "false",
        trainer.learner().fused_update_threads());
    for (std::size_t i = 0; i < window_s.size(); ++i) std::printf("%s%.4f", i ? "," : "", window_s[i]);
    std::printf("]}\n");
    if (fused_phases > 0) print_fused_phases(context, label, stamps);
    if (!kernel_trace.empty()) write_kernel_trace(trainer, kernel_trace, trace_iterations);
  } catch (const std::exception& e) {
    std::cerr << "foxrl_bench_pipeline: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
