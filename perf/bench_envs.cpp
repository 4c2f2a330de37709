// Env throughput: 4096 CartPole envs and 4096 market envs (window 64, the
// benchmark's 65-float observation) stepping with uniformly random actions
// (action selection + step + observation build). Prints one JSON line per
// measurement: median microseconds per vectorized step over the repeats,
// env steps per second, and kernel launches per step (Kokkos Tools).
#include "collect/action_selector.hpp"
#include "core/execution_context.hpp"
#include "core/kokkos_tools_audit.hpp"
#include "envs/cartpole_env.hpp"
#include "market/market_data.hpp"
#include "market/market_env.hpp"

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

using Exec = Kokkos::DefaultExecutionSpace;
using Mem = Exec::memory_space;

struct Settings {
  int num_envs = 4096;
  int steps = 1000;  // vectorized steps per repeat
  int repeats = 5;
  int warmup = 100;
  std::size_t market_bars = 1000000;
};

template <class Env>
void measure(const char* name, foxrl::ExecutionContext<Exec>& context, Env& env, const Settings& s) {
  const auto& space = context.space();
  foxrl::EpsilonSchedule random_actions;
  random_actions.start = random_actions.end = 1.0;  // always explore: uniform random actions
  foxrl::ActionSelector<Exec> selector(env.num_actions(), context.seed(), random_actions);
  Kokkos::View<float**, Kokkos::LayoutRight, Mem> q(Kokkos::view_alloc(space, "foxrl::bench::q"), s.num_envs,
                                                    env.num_actions());
  Kokkos::View<std::int32_t*, Mem> actions(Kokkos::view_alloc(space, "foxrl::bench::actions"), s.num_envs);
  std::int64_t global_step = 0;
  auto one_step = [&] {
    selector.select(space, q, global_step, actions);
    env.step(space, actions);
    global_step += s.num_envs;
  };
  for (int i = 0; i < s.warmup; ++i) one_step();
  context.fence("bench::warmup");

  const auto record = foxrl::audit([&] { one_step(); });
  const auto launches = record.launches.size();
  const bool clean = record.violations(foxrl::tools_device_id(space)).empty();

  std::vector<double> per_step_us;
  for (int r = 0; r < s.repeats; ++r) {
    context.fence("bench::before_repeat");
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < s.steps; ++i) one_step();
    context.fence("bench::after_repeat");
    const auto t1 = std::chrono::steady_clock::now();
    per_step_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / s.steps);
  }
  std::sort(per_step_us.begin(), per_step_us.end());
  const double median = per_step_us[per_step_us.size() / 2];
  std::printf(
      "{\"bench\":\"envs\",\"config\":\"%s num_envs=%d obs_dim=%d steps=%d\",\"median_us\":%.3f,\"repeats\":%d,"
      "\"backend\":\"%s\",\"env_steps_per_s\":%.0f,\"launches_per_step\":%zu,\"one_stream_clean\":%s}\n",
      name, s.num_envs, env.obs_dim(), s.steps, median, s.repeats, Exec::name(), s.num_envs / median * 1e6, launches,
      clean ? "true" : "false");
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  Settings s;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) {
      s.steps = 50;
      s.repeats = 3;
      s.warmup = 5;
      s.market_bars = 100000;
    } else if (std::strcmp(argv[i], "--help") == 0) {
      std::printf("usage: %s [--quick]\n", argv[0]);
      return 0;
    } else {
      std::fprintf(stderr, "unknown argument %s (usage: %s [--quick])\n", argv[i], argv[0]);
      return 2;
    }
  }
  Kokkos::ScopeGuard kokkos(argc, argv);
  {
    foxrl::ExecutionContext<Exec> context(0);
    foxrl::CartPoleEnv<Exec> cartpole(context.space(), s.num_envs, context.seed());
    measure("cartpole", context, cartpole, s);
  }
  {
    foxrl::ExecutionContext<Exec> context(0);
    const auto series = foxrl::generate_benchmark_market(s.market_bars, 0);
    foxrl::MarketFeatures<Exec> market(context.space(), series, 64);
    foxrl::MarketEnv<Exec> env(context.space(), market, {0, market.size()}, s.num_envs, context.seed());
    measure("market", context, env, s);
  }
  return 0;
}
