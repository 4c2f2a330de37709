// evaluate_first_episodes (src/envs/episode_evaluation.hpp): CartPole's
// first episodes under constant policies against the float64 CartPole
// equations (tests/support/env_test_util.hpp) from the same initial states;
// episodes cut by max_steps; the summary statistics against hand-computed
// values.
#include "core/execution_context.hpp"
#include "envs/cartpole_env.hpp"
#include "envs/episode_evaluation.hpp"
#include "support/device_copy.hpp"
#include "support/env_test_util.hpp"
#include "support/test_spaces.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <vector>

namespace {

/// A policy that always takes `action`; records the observations of its
/// first call (the envs' initial states) on the host.
template <class Exec>
struct ConstantPolicy {
  int action = 0;
  std::vector<float>* initial = nullptr;
  void operator()(const Exec& space, const Kokkos::View<float**, Kokkos::LayoutRight, typename Exec::memory_space>& obs,
                  const Kokkos::View<std::int32_t*, typename Exec::memory_space>& actions) const {
    if (initial->empty()) {
      const auto h = foxrl::test::to_host(space, obs);
      initial->assign(h.data(), h.data() + h.size());
    }
    const int a = action;
    Kokkos::parallel_for(
        "foxrl::test::constant_policy", Kokkos::RangePolicy<Exec>(space, 0, actions.extent(0)),
        KOKKOS_LAMBDA(int i) { actions(i) = a; });
  }
};

/// Steps of the first episode from `init` under a constant action, in
/// float64 (terminal step included; 500 at most, CartPole-v1's limit).
int reference_length(const float* init, int action) {
  double s[4] = {init[0], init[1], init[2], init[3]};
  for (int t = 1; t <= 500; ++t) {
    foxrl::test::cartpole_step_f64(s, action);
    if (foxrl::test::cartpole_terminal_f64(s)) return t;
  }
  return 500;
}

}  // namespace

TEMPLATE_TEST_CASE("first episodes of CartPole under constant policies match the float64 equations", "[evaluation]",
                   FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  const int n = 64;
  for (const int action : {0, 1}) {
    INFO("action " << action);
    foxrl::VectorEnv<Exec> env(foxrl::CartPoleEnv<Exec>(space, n, 17));
    std::vector<float> initial;
    const auto e = foxrl::evaluate_first_episodes(space, env, ConstantPolicy<Exec>{action, &initial}, 1000, 7);
    REQUIRE(initial.size() == std::size_t(n) * 4);
    REQUIRE(e.returns.size() == std::size_t(n));
    double sum = 0.0;
    for (int i = 0; i < n; ++i) {
      const int expected = reference_length(&initial[std::size_t(i) * 4], action);
      INFO("env " << i);
      CHECK(e.finished[i] == 1);
      CHECK(e.lengths[i] == expected);
      CHECK(e.returns[i] == double(expected));  // reward 1 per step, the terminal one included
      sum += expected;
    }
    CHECK(e.episodes == n);
    CHECK(e.unfinished == 0);
    CHECK(e.mean == Approx(sum / n).epsilon(1e-12));
  }
}

TEMPLATE_TEST_CASE("episodes still running at max_steps are left out", "[evaluation]", FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  foxrl::VectorEnv<Exec> env(foxrl::CartPoleEnv<Exec>(space, 16, 3));
  std::vector<float> initial;
  // A constant push ends every episode after 8 or more steps.
  const auto e = foxrl::evaluate_first_episodes(space, env, ConstantPolicy<Exec>{1, &initial}, 5);
  CHECK(e.episodes == 0);
  CHECK(e.unfinished == 16);
  for (int i = 0; i < 16; ++i) {
    CHECK(e.lengths[i] == 5);
    CHECK(e.returns[i] == 5.0);
  }
  CHECK_THROWS_AS(foxrl::evaluate_first_episodes(space, env, ConstantPolicy<Exec>{1, &initial}, 0), foxrl::LogicError);
}

TEST_CASE("episode summary: mean, population std, extremes over finished episodes", "[evaluation]") {
  foxrl::EpisodeEvaluation e;
  e.returns = {10.0, 20.0, 30.0, 1000.0};
  e.lengths = {10, 20, 30, 7};
  e.finished = {1, 1, 1, 0};
  foxrl::summarise(e);
  CHECK(e.episodes == 3);
  CHECK(e.unfinished == 1);
  CHECK(e.mean == 20.0);
  CHECK(e.std == Approx(std::sqrt(200.0 / 3.0)).epsilon(1e-12));
  CHECK(e.min == 10.0);
  CHECK(e.max == 30.0);
  CHECK(e.mean_length == 20.0);
}
