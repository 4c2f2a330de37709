// CartPole's choosing step inside another launch against its twin, the
// env's own launch after the forward: the same functions on the same
// values, so two trainers of one seed, one with each, must agree bit for
// bit in every action, observation, episode statistic and weight.
// - inside the fused forward's launch (DqnLearner::greedy_actions_then,
//   the kernel path fused_env_step): a few envs, CUDA builds only;
// - inside the head kernel's launch (env_step_in_head): more envs
//   than the fused forward takes, every backend.
#include "support/device_copy.hpp"
#include "support/scoped_environment.hpp"
#include "support/test_spaces.hpp"
#include "train/online_trainer.hpp"

#include <Kokkos_Core.hpp>
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

namespace {

foxrl::TrainConfig cartpole_envs(int num_envs) {
  foxrl::TrainConfig c;
  c.env = "cartpole";
  c.num_envs = num_envs;
  c.hidden = {32, 32};
  c.batch_size = 32;
  c.buffer_capacity = 4 * num_envs < 512 ? 512 : 4 * num_envs;
  c.learning_starts = 64;
  // Epsilon reaches its end within the run: random and greedy actions
  // both occur.
  c.eps_decay_env_steps = 100 * num_envs;
  c.iterations_per_epoch = 1;
  c.out_dir = "unused";
  return c;
}

template <class V>
bool same_bits(const V& a, const V& b) {
  return a.span() == b.span() && std::memcmp(a.data(), b.data(), a.span() * sizeof(typename V::value_type)) == 0;
}

/// Runs both trainers `iterations` times and checks that they agree bit for
/// bit after every iteration (actions, observations) and at the end
/// (weights, episode statistics).
template <class Exec>
void require_same_runs(foxrl::DqnTrainer<Exec>& folded, foxrl::DqnTrainer<Exec>& twin, int iterations) {
  const int num_envs = folded.config().num_envs;
  const auto& space = folded.context().space();
  const auto& twin_space = twin.context().space();
  int differing_steps = 0;
  std::int64_t right_pushes = 0;
  for (int it = 0; it < iterations; ++it) {
    folded.iterate();
    twin.iterate();
    const auto actions = foxrl::test::to_host(space, folded.collector().actions());
    const auto twin_actions = foxrl::test::to_host(twin_space, twin.collector().actions());
    const auto obs = foxrl::test::to_host(space, folded.env().observations());
    const auto twin_obs = foxrl::test::to_host(twin_space, twin.env().observations());
    if (!same_bits(actions, twin_actions) || !same_bits(obs, twin_obs)) ++differing_steps;
    for (int e = 0; e < num_envs; ++e) right_pushes += actions(e) == 1 ? 1 : 0;
  }
  CHECK(differing_steps == 0);
  // Both actions taken (a constant action would agree trivially).
  CHECK(right_pushes > 0);
  CHECK(right_pushes < std::int64_t(iterations) * num_envs);
  CHECK(folded.updates() == twin.updates());
  CHECK(folded.updates() > 0);
  const auto weights = foxrl::test::to_host(space, folded.learner().online().flat);
  const auto twin_weights = foxrl::test::to_host(twin_space, twin.learner().online().flat);
  CHECK(same_bits(weights, twin_weights));
  const auto episodes = folded.collector().episode_stats().summary(space);
  const auto twin_episodes = twin.collector().episode_stats().summary(twin_space);
  CHECK(episodes.episodes == twin_episodes.episodes);
  CHECK(episodes.episodes > 0);
  CHECK(episodes.last_returns == twin_episodes.last_returns);
}

}  // namespace

TEMPLATE_TEST_CASE("CartPole's step inside the head kernel matches its own launch bit for bit", "[collect][fused]",
                   FOXRL_TEST_SPACES) {
  using Exec = TestType;
  // More envs than the fused forward takes on CUDA (512), not a multiple
  // of the head kernel's 8 rows per team.
  const auto config = cartpole_envs(620);
  foxrl::DqnTrainer<Exec> folded(config);
  std::unique_ptr<foxrl::DqnTrainer<Exec>> twin;
  {
    const foxrl::test::ScopedEnvironment off("FOXRL_KERNEL_PATHS_OFF", "env_step_in_head");
    twin = std::make_unique<foxrl::DqnTrainer<Exec>>(config);
  }
  REQUIRE(folded.learner().fuses_env_step(config.num_envs));
  REQUIRE_FALSE(twin->learner().fuses_env_step(config.num_envs));
  require_same_runs(folded, *twin, 40);
}

#ifdef KOKKOS_ENABLE_CUDA

TEST_CASE("CartPole's step inside the fused forward matches its own launch bit for bit", "[collect][fused][cuda]") {
  const bool graph = GENERATE(true, false);
  INFO("the iteration graph " << (graph ? "on" : "off"));
  const foxrl::test::ScopedEnvironment iteration_graph("FOXRL_KERNEL_PATHS_OFF", graph ? nullptr : "iteration_graph");
  const auto config = cartpole_envs(8);
  using Exec = Kokkos::Cuda;
  foxrl::DqnTrainer<Exec> folded(config);
  std::unique_ptr<foxrl::DqnTrainer<Exec>> twin;
  {
    const foxrl::test::ScopedEnvironment off("FOXRL_KERNEL_PATHS_OFF",
                                             graph ? "fused_env_step" : "iteration_graph,fused_env_step");
    twin = std::make_unique<foxrl::DqnTrainer<Exec>>(config);
  }
  REQUIRE(folded.learner().fuses_env_step(config.num_envs));
  REQUIRE_FALSE(twin->learner().fuses_env_step(config.num_envs));
  // One block takes at most small_forward_rows rows.
  CHECK(folded.learner().fuses_env_step(foxrl::kernels::cuda::small_forward_rows));
  CHECK_FALSE(folded.learner().fuses_env_step(foxrl::kernels::cuda::small_forward_rows + 1));

  require_same_runs(folded, *twin, 120);
}

#endif  // KOKKOS_ENABLE_CUDA
