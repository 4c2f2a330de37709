// VectorEnv::step_keeping (the collector's env step): besides stepping as
// step() does, it writes the observations the actions were chosen from
// into a caller's View inside the env's own launch, so the collector needs
// no copy launch of its own. Against two references: the observations read
// back before each step (bit for bit), and a twin env stepped with plain
// step() on the same actions (every observation, reward and flag bit for
// bit), through terminations, truncations and auto-resets of both envs.
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

TEMPLATE_TEST_CASE("an env step keeping the observations acted on equals a plain step, and keeps them",
                   "[envs][collect]", FOXRL_TEST_SPACES) {
  using Exec = TestType;
  using Mem = typename Exec::memory_space;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  const foxrl::MarketFeatures<Exec> market(space, foxrl::generate_benchmark_market(1500, 3), 64);
  for (const std::string kind : {"cartpole", "market"}) {
    INFO(kind);
    auto keeping = make_env(space, kind, market);
    auto plain = make_env(space, kind, market);
    const int n = keeping.num_envs(), d = keeping.obs_dim();
    Kokkos::View<float**, Kokkos::LayoutRight, Mem> acted_on("foxrl::test::acted_on", n, d);
    std::mt19937 rng(11);
    std::uniform_int_distribution<int> pick(0, keeping.num_actions() - 1);
    std::vector<std::int32_t> actions(n);
    int ended = 0, wrong_kept = 0, differ = 0;
    for (int step = 0; step < 120; ++step) {
      for (auto& a : actions) a = pick(rng);
      const auto device_actions = foxrl::test::to_device(space, actions);
      const auto before = foxrl::test::to_host(space, keeping.observations());
      keeping.step_keeping(space, device_actions, acted_on);
      plain.step(space, device_actions);
      wrong_kept += same_bits(foxrl::test::to_host(space, acted_on), before) ? 0 : 1;
      const auto& k = keeping.step_result();
      const auto& p = plain.step_result();
      differ += same_bits(foxrl::test::to_host(space, keeping.observations()),
                          foxrl::test::to_host(space, plain.observations()))
                    ? 0
                    : 1;
      differ +=
          same_bits(foxrl::test::to_host(space, k.next_observations), foxrl::test::to_host(space, p.next_observations))
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
    CHECK(ended > 0);  // the run crossed episode ends, where observations reset
  }
}
