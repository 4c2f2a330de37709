// CartPoleEnv against a float64 transcription of Gymnasium's CartPole-v1,
// plus termination, truncation and auto-reset (whose draws are recomputed on
// the host from the counter-based RNG).
#include "core/execution_context.hpp"
#include "envs/cartpole_env.hpp"
#include "kernels/core/counter_rng.hpp"
#include "support/env_test_util.hpp"
#include "support/test_spaces.hpp"

#include <catch2/catch.hpp>

#include <array>
#include <cmath>
#include <cstdint>
#include <vector>

namespace {

// float32 arithmetic against float64: relative 2e-6 (BENCHMARKS.md's check),
// with magnitudes below 1 compared absolutely (cancellation in x + tau*v).
bool close_f32(double got, double ref) { return std::fabs(got - ref) <= 2e-6 * std::max(1.0, std::fabs(ref)); }

std::array<float, 4> host_reset_state(std::uint64_t seed, int env, std::uint64_t episode) {
  const std::uint64_t s = foxrl::kernels::derive_seed(seed, foxrl::kernels::rng_tag::cartpole_reset);
  std::array<float, 4> v{};
  for (int k = 0; k < 4; ++k) {
    v[static_cast<std::size_t>(k)] =
        -0.05f + 0.1f * foxrl::kernels::counter_uniform(s, static_cast<std::uint64_t>(env), 4 * episode + k);
  }
  return v;
}

}  // namespace

TEMPLATE_TEST_CASE("CartPole step matches float64 Gymnasium equations", "[cartpole]", FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  const int n = 64;
  foxrl::CartPoleEnv<Exec> env(space, n, 7);
  // Spread the states over the region where the nonlinear terms matter.
  for (int i = 0; i < n; ++i) {
    const float f = static_cast<float>(i) / n;
    env.set_state(space, i, {-2.0f + 4.0f * f, -2.0f + 3.0f * f, -0.2f + 0.4f * f, 3.0f - 6.0f * f});
  }
  std::vector<std::int32_t> actions(n);
  for (int step = 0; step < 3; ++step) {
    for (int i = 0; i < n; ++i) actions[static_cast<std::size_t>(i)] = (i * 7 + step) % 2;
    const auto before = foxrl::test::to_host(space, env.observations());
    const auto d_actions = foxrl::test::to_device(space, actions);
    env.step(space, d_actions);
    const auto next = foxrl::test::to_host(space, env.step_result().next_observations);
    const auto term = foxrl::test::to_host(space, env.step_result().terminated);
    const auto reward = foxrl::test::to_host(space, env.step_result().rewards);
    for (int i = 0; i < n; ++i) {
      double s[4] = {before(i, 0), before(i, 1), before(i, 2), before(i, 3)};
      foxrl::test::cartpole_step_f64(s, actions[static_cast<std::size_t>(i)]);
      for (int k = 0; k < 4; ++k) {
        INFO("env " << i << " step " << step << " component " << k << ": " << next(i, k) << " vs " << s[k]);
        CHECK(close_f32(next(i, k), s[k]));
      }
      // The float state decides termination; the float64 rule applied to it must agree.
      const double got[4] = {next(i, 0), next(i, 1), next(i, 2), next(i, 3)};
      CHECK(static_cast<bool>(term(i)) == foxrl::test::cartpole_terminal_f64(got));
      CHECK(reward(i) == 1.0f);
    }
  }
}

TEMPLATE_TEST_CASE("CartPole resets draw from the per-env counter RNG", "[cartpole]", FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  const int n = 100;
  const std::uint64_t seed = 12345;
  foxrl::CartPoleEnv<Exec> env(space, n, seed);
  auto obs = foxrl::test::to_host(space, env.observations());
  for (int i = 0; i < n; ++i) {
    const auto ref = host_reset_state(seed, i, 0);
    for (int k = 0; k < 4; ++k) {
      CHECK(obs(i, k) == ref[static_cast<std::size_t>(k)]);  // bitwise: integer RNG + one exact multiply-add
      CHECK(std::fabs(obs(i, k)) <= 0.05f);
    }
  }
  env.reset(space);  // episode 1 of every env
  obs = foxrl::test::to_host(space, env.observations());
  for (int i = 0; i < n; ++i) {
    const auto ref = host_reset_state(seed, i, 1);
    for (int k = 0; k < 4; ++k) CHECK(obs(i, k) == ref[static_cast<std::size_t>(k)]);
  }
}

TEMPLATE_TEST_CASE("CartPole terminates, truncates at 500 and auto-resets in the same step", "[cartpole]",
                   FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  const int n = 16;
  const std::uint64_t seed = 3;
  foxrl::CartPoleEnv<Exec> env(space, n, seed);
  // Envs 0..3 start at the edge and terminate on step 1 (each bound).
  env.set_state(space, 0, {2.39f, 1.0f, 0.0f, 0.0f});
  env.set_state(space, 1, {-2.39f, -1.0f, 0.0f, 0.0f});
  env.set_state(space, 2, {0.0f, 0.0f, 0.208f, 1.0f});
  env.set_state(space, 3, {0.0f, 0.0f, -0.208f, -1.0f});

  std::vector<int> host_steps(n, 0);
  std::vector<std::uint64_t> host_episode(n, 1);  // construction consumed episode 0
  std::vector<std::int32_t> actions(n);
  int truncations = 0, terminations = 0;
  for (int step = 0; step < 520; ++step) {
    const auto obs = foxrl::test::to_host(space, env.observations());
    // A balancing controller on most envs (so some reach the time limit),
    // alternating pushes on the rest.
    for (int i = 0; i < n; ++i) {
      actions[static_cast<std::size_t>(i)] =
          i < 12 ? (obs(i, 2) + 0.5f * obs(i, 3) + 0.01f * obs(i, 0) + 0.1f * obs(i, 1) > 0 ? 1 : 0) : (step + i) % 2;
    }
    env.step(space, foxrl::test::to_device(space, actions));
    const auto next = foxrl::test::to_host(space, env.step_result().next_observations);
    const auto term = foxrl::test::to_host(space, env.step_result().terminated);
    const auto trunc = foxrl::test::to_host(space, env.step_result().truncated);
    const auto after = foxrl::test::to_host(space, env.observations());
    const auto counters = foxrl::test::to_host(space, env.episode_steps());
    for (int i = 0; i < n; ++i) {
      const double s[4] = {next(i, 0), next(i, 1), next(i, 2), next(i, 3)};
      const bool terminal = foxrl::test::cartpole_terminal_f64(s);
      ++host_steps[static_cast<std::size_t>(i)];
      INFO("env " << i << " step " << step);
      CHECK(static_cast<bool>(term(i)) == terminal);
      CHECK(static_cast<bool>(trunc(i)) == (host_steps[static_cast<std::size_t>(i)] == 500));
      if (step == 0 && i < 4) CHECK(term(i) == 1);
      if (term(i) || trunc(i)) {
        terminations += term(i);
        truncations += trunc(i);
        const auto ref = host_reset_state(seed, i, host_episode[static_cast<std::size_t>(i)]++);
        for (int k = 0; k < 4; ++k) CHECK(after(i, k) == ref[static_cast<std::size_t>(k)]);
        host_steps[static_cast<std::size_t>(i)] = 0;
      } else {
        for (int k = 0; k < 4; ++k) CHECK(after(i, k) == next(i, k));
      }
      CHECK(counters(i) == host_steps[static_cast<std::size_t>(i)]);
    }
  }
  CHECK(terminations >= 4);
  CHECK(truncations >= 1);  // the controller keeps at least one pole up for 500 steps
}

TEST_CASE("CartPole rejects bad construction and env indices", "[cartpole]") {
  using Exec = Kokkos::DefaultHostExecutionSpace;
  foxrl::ExecutionContext<Exec> context;
  CHECK_THROWS_AS(foxrl::CartPoleEnv<Exec>(context.space(), 0, 1), foxrl::UsageError);
  foxrl::CartPoleEnv<Exec> env(context.space(), 2, 1);
  CHECK_THROWS_WITH(env.set_state(context.space(), 2, {0, 0, 0, 0}), Catch::Contains("env 2"));
  CHECK_THROWS_AS(env.set_state(context.space(), 2, {0, 0, 0, 0}), foxrl::LogicError);
  CHECK(env.obs_dim() == 4);
  CHECK(env.num_actions() == 2);
}
