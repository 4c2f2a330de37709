// CartPole's choosing step inside the fused forward's launch
// (DqnLearner::greedy_actions_then, FOXRL_CUDA_FUSED_ENV_STEP) against its
// twin, the env's own launch after the forward: the same functions on the
// same values, so two trainers of one seed, one with each, must agree bit
// for bit in every action, observation, episode statistic and weight.
// CUDA builds only (the fused forward exists only there).
#include <Kokkos_Core.hpp>

#ifdef KOKKOS_ENABLE_CUDA

#include "agents/dqn/dqn_trainer.hpp"
#include "support/device_copy.hpp"
#include "support/scoped_environment.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

namespace {

using Exec = Kokkos::Cuda;

foxrl::TrainConfig few_envs() {
  foxrl::TrainConfig c;
  c.env = foxrl::parse_env_kind("cartpole");
  c.num_envs = 8;
  c.hidden = {32, 32};
  c.batch_size = 32;
  c.buffer_capacity = 512;
  c.learning_starts = 64;
  // Epsilon reaches its end within the run: random and greedy actions
  // both occur.
  c.eps_decay_env_steps = 800;
  c.iterations_per_epoch = 1;
  c.out_dir = "unused";
  return c;
}

template <class V>
bool same_bits(const V& a, const V& b) {
  return a.span() == b.span() && std::memcmp(a.data(), b.data(), a.span() * sizeof(typename V::value_type)) == 0;
}

}  // namespace

TEST_CASE("CartPole's step inside the fused forward matches its own launch bit for bit", "[collect][fused][cuda]") {
  const char* graph = GENERATE("1", "0");
  INFO("FOXRL_CUDA_ITERATION_GRAPH " << graph);
  const foxrl::test::ScopedEnvironment iteration_graph("FOXRL_CUDA_ITERATION_GRAPH", graph);
  const auto config = few_envs();
  foxrl::DqnTrainer<Exec> folded(config);
  std::unique_ptr<foxrl::DqnTrainer<Exec>> twin;
  {
    const foxrl::test::ScopedEnvironment off("FOXRL_CUDA_FUSED_ENV_STEP", "0");
    twin = std::make_unique<foxrl::DqnTrainer<Exec>>(config);
  }
  REQUIRE(folded.learner().fuses_env_step(config.num_envs));
  REQUIRE_FALSE(twin->learner().fuses_env_step(config.num_envs));
  // One block takes at most small_forward_rows rows.
  CHECK(folded.learner().fuses_env_step(foxrl::kernels::cuda::small_forward_rows));
  CHECK_FALSE(folded.learner().fuses_env_step(foxrl::kernels::cuda::small_forward_rows + 1));

  const auto& space = folded.context().space();
  const auto& twin_space = twin->context().space();
  int differing_steps = 0, right_pushes = 0;
  for (int it = 0; it < 120; ++it) {
    folded.iterate();
    twin->iterate();
    const auto actions = foxrl::test::to_host(space, folded.collector().actions());
    const auto twin_actions = foxrl::test::to_host(twin_space, twin->collector().actions());
    const auto obs = foxrl::test::to_host(space, folded.env().observations());
    const auto twin_obs = foxrl::test::to_host(twin_space, twin->env().observations());
    if (!same_bits(actions, twin_actions) || !same_bits(obs, twin_obs)) ++differing_steps;
    for (int e = 0; e < config.num_envs; ++e) right_pushes += actions(e) == 1 ? 1 : 0;
  }
  CHECK(differing_steps == 0);
  // Both actions taken (a constant action would agree trivially).
  CHECK(right_pushes > 0);
  CHECK(right_pushes < 120 * config.num_envs);
  CHECK(folded.updates() == twin->updates());
  CHECK(folded.updates() > 0);
  const auto weights = foxrl::test::to_host(space, folded.learner().online().flat);
  const auto twin_weights = foxrl::test::to_host(twin_space, twin->learner().online().flat);
  CHECK(same_bits(weights, twin_weights));
  const auto episodes = folded.collector().episode_stats().summary(space);
  const auto twin_episodes = twin->collector().episode_stats().summary(twin_space);
  CHECK(episodes.episodes == twin_episodes.episodes);
  CHECK(episodes.episodes > 0);
  CHECK(episodes.last_returns == twin_episodes.last_returns);
}

#endif  // KOKKOS_ENABLE_CUDA
