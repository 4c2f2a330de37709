// VectorEnv::step_choosing (the collector's env step): each env's action
// is chosen inside the step's launch (ActionSelector::greedy_choice, the
// epsilon-greedy choice around given greedy actions) and the observations
// acted on are kept in a caller's View there, so the collector launches
// neither a selection nor a copy of its own. Against two references: the
// observations read back before each step (bit for bit), and a twin env
// driven the way the collector drove it before, select_from_greedy then
// step() (every action, observation, reward and flag bit for bit), through
// explorations and greedy choices, terminations, truncations and
// auto-resets of both envs, with the global step a host value and one read
// on the device.
#include "collect/action_selector.hpp"
#include "core/execution_context.hpp"
#include "envs/vector_env.hpp"
#include "market/market_data.hpp"
#include "support/env_test_util.hpp"
#include "support/test_spaces.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

template <class Exec>
foxrl::VectorEnv<Exec> make_env(const Exec& space, const std::string& kind, const foxrl::MarketFeatures<Exec>& market) {
  if (kind == "cartpole") return foxrl::VectorEnv<Exec>(foxrl::CartPoleEnv<Exec>(space, 16, 7));
  foxrl::MarketEnvConfig config;
  config.episode_length = 30;  // many truncations and new episodes in the run
  return foxrl::VectorEnv<Exec>(foxrl::MarketEnv<Exec>(space, market, {0, market.size()}, 16, 7, config));
}

/// Whether two host Views hold the same bytes.
template <class A, class B>
bool same_bits(const A& a, const B& b) {
  return a.span() == b.span() && std::memcmp(a.data(), b.data(), a.span() * sizeof(*a.data())) == 0;
}

}  // namespace

TEMPLATE_TEST_CASE("an env step choosing its actions equals selecting then stepping, and keeps what it acted on",
                   "[envs][collect]", FOXRL_TEST_SPACES) {
  using Exec = TestType;
  using Mem = typename Exec::memory_space;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  const foxrl::MarketFeatures<Exec> market(space, foxrl::generate_benchmark_market(1500, 3), 64);
  for (const std::string kind : {"cartpole", "market"}) {
    for (const bool device_step : {false, true}) {
      INFO(kind << ", global step " << (device_step ? "read on the device" : "a host value"));
      auto choosing = make_env(space, kind, market);
      auto plain = make_env(space, kind, market);
      const int n = choosing.num_envs(), d = choosing.obs_dim(), A = choosing.num_actions();
      // Epsilon falls from 1 to 0.05 over the run: both explorations and greedy choices.
      foxrl::EpsilonSchedule schedule;
      schedule.decay_env_steps = 60.0 * n;
      const foxrl::ActionSelector<Exec> selector(A, 5, schedule);
      Kokkos::View<float**, Kokkos::LayoutRight, Mem> acted_on("foxrl::test::acted_on", n, d);
      Kokkos::View<std::int32_t*, Mem> chosen("foxrl::test::chosen", n), selected("foxrl::test::selected", n);
      Kokkos::View<std::int64_t, Mem> clock("foxrl::test::clock");
      std::mt19937 rng(11);
      std::uniform_int_distribution<int> pick(0, A - 1);
      std::vector<std::int32_t> greedy(n);
      int ended = 0, wrong_kept = 0, differ = 0, explored = 0;
      for (int step = 0; step < 120; ++step) {
        for (auto& a : greedy) a = pick(rng);
        const auto device_greedy = foxrl::test::to_device(space, greedy);
        const std::int64_t global_step = std::int64_t(step) * n;
        Kokkos::deep_copy(space, clock, global_step);
        const auto before = foxrl::test::to_host(space, choosing.observations());
        if (device_step)
          choosing.step_choosing(space, selector.greedy_choice(device_greedy, {clock.data(), 0}, chosen), acted_on);
        else
          choosing.step_choosing(space, selector.greedy_choice(device_greedy, global_step, chosen), acted_on);
        selector.select_from_greedy(space, device_greedy, global_step, selected);
        plain.step(space, selected);
        wrong_kept += same_bits(foxrl::test::to_host(space, acted_on), before) ? 0 : 1;
        const auto actions = foxrl::test::to_host(space, chosen);
        differ += same_bits(actions, foxrl::test::to_host(space, selected)) ? 0 : 1;
        for (int i = 0; i < n; ++i) explored += actions(i) != greedy[i] ? 1 : 0;
        const auto& k = choosing.step_result();
        const auto& p = plain.step_result();
        differ += same_bits(foxrl::test::to_host(space, choosing.observations()),
                            foxrl::test::to_host(space, plain.observations()))
                      ? 0
                      : 1;
        differ += same_bits(foxrl::test::to_host(space, k.next_observations),
                            foxrl::test::to_host(space, p.next_observations))
                      ? 0
                      : 1;
        differ += same_bits(foxrl::test::to_host(space, k.rewards), foxrl::test::to_host(space, p.rewards)) ? 0 : 1;
        const auto terminated = foxrl::test::to_host(space, k.terminated);
        const auto truncated = foxrl::test::to_host(space, k.truncated);
        differ += same_bits(terminated, foxrl::test::to_host(space, p.terminated)) ? 0 : 1;
        differ += same_bits(truncated, foxrl::test::to_host(space, p.truncated)) ? 0 : 1;
        for (int i = 0; i < n; ++i) ended += terminated(i) != 0 || truncated(i) != 0 ? 1 : 0;
      }
      CHECK(wrong_kept == 0);
      CHECK(differ == 0);
      CHECK(ended > 0);     // the run crossed episode ends, where observations reset
      CHECK(explored > 0);  // and took exploring actions besides greedy ones
    }
  }
}
