// The DQN loss inside the target network's head kernel
// (kernels/agents/dqn/loss_in_head.hpp, FOXRL_LOSS_IN_TARGET_HEAD) against
// its twin, the loss kernel's launch after the head kernel: the same row
// functions and the loss kernel's summation order, so two learners of one
// seed, one with each, must agree bit for bit in every metric, |td|,
// gradient, moment and weight after every update, on every backend. (The
// float64 reference tests of tests/test_dqn_learner.cpp check the values.)
#include "agents/dqn/dqn_learner.hpp"
#include "core/execution_context.hpp"
#include "kernels/nn/weight_init.hpp"
#include "support/reference_dqn.hpp"
#include "support/scoped_environment.hpp"
#include "support/test_spaces.hpp"

#include <catch2/catch.hpp>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace {

foxrl::DqnLearnerConfig blas_config(int batch, int obs_dim, std::vector<int> hidden, int num_actions) {
  foxrl::DqnLearnerConfig c;
  c.obs_dim = obs_dim;
  c.hidden = std::move(hidden);
  c.num_actions = num_actions;
  c.max_batch = batch;
  c.max_inference_batch = 16;
  c.seed = 4321;
  c.dense_backend = foxrl::DenseBackend::blas;
  // The fused small-network update (CUDA) would take these networks whole.
  c.fused_update = false;
  return c;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEMPLATE_TEST_CASE("the loss inside the target head kernel gives the loss kernel's bits", "[learner][fused]",
                   FOXRL_TEST_SPACES) {
  using Exec = TestType;
  using foxrl::test::flat_host;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  struct Shape {
    int batch, obs_dim;
    std::vector<int> hidden;
    int num_actions;
    foxrl::LossKind loss;
  };
  // Ragged batches (not a multiple of any team's rows), several loss teams
  // on every backend; CartPole-like and market-like heads.
  const std::vector<Shape> shapes = {{300, 5, {7, 6}, 3, foxrl::LossKind::huber},
                                     {1000, 4, {120, 84}, 2, foxrl::LossKind::huber},
                                     {257, 65, {33, 17}, 3, foxrl::LossKind::mse}};
  for (const auto& shape : shapes) {
    const int B = shape.batch;
    INFO("batch " << B << ", obs " << shape.obs_dim << ", actions " << shape.num_actions);
    auto config = blas_config(B, shape.obs_dim, shape.hidden, shape.num_actions);
    config.loss = shape.loss;
    foxrl::DqnLearner<Exec> folded(space, config), twin(space, config);
    folded.set_loss_in_target_head(true);
    twin.set_loss_in_target_head(false);
    REQUIRE(folded.fuses_loss_in_target_head(B));
    REQUIRE_FALSE(twin.fuses_loss_in_target_head(B));
    // A target network unlike the online one, the same in both.
    for (auto* learner : {&folded, &twin})
      foxrl::kernels::init_weights(space, learner->weights().target, learner->layout(), 99,
                                   foxrl::InitScheme::torch_default);
    int differing_updates = 0;
    for (int u = 0; u < 4; ++u) {
      const auto batch = foxrl::test::to_device(
          space, foxrl::test::random_batch(B, shape.obs_dim, shape.num_actions, 100 + static_cast<std::uint32_t>(u)));
      folded.update(space, batch);
      twin.update(space, batch);
      const bool same = same_bits(flat_host(space, folded.metrics()), flat_host(space, twin.metrics())) &&
                        same_bits(flat_host(space, folded.td_errors()), flat_host(space, twin.td_errors())) &&
                        same_bits(flat_host(space, folded.weights().grads), flat_host(space, twin.weights().grads)) &&
                        same_bits(flat_host(space, folded.weights().online), flat_host(space, twin.weights().online)) &&
                        same_bits(flat_host(space, folded.weights().adam_m), flat_host(space, twin.weights().adam_m)) &&
                        same_bits(flat_host(space, folded.weights().adam_v), flat_host(space, twin.weights().adam_v));
      if (!same) ++differing_updates;
    }
    CHECK(differing_updates == 0);
    // The updates did something: a loss and moving weights.
    const auto metrics = flat_host(space, folded.metrics());
    CHECK(metrics[foxrl::LearnerMetrics::loss] > 0.0f);
    CHECK(metrics[foxrl::LearnerMetrics::grad_norm] > 0.0f);
  }
}

TEMPLATE_TEST_CASE("the loss stays a launch of its own unless asked for and where the head kernel cannot take it",
                   "[learner][fused]", FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  const auto asked = [&](const foxrl::DqnLearnerConfig& config) {
    auto learner = std::make_unique<foxrl::DqnLearner<Exec>>(space, config);
    learner->set_loss_in_target_head(true);
    return learner;
  };
  // A batch the loss kernel forms in one team: no team order to reproduce.
  const int one_team = foxrl::kernels::DqnLossTiling<Exec>::rows_per_team;
  CHECK_FALSE(asked(blas_config(one_team, 5, {7, 6}, 3))->fuses_loss_in_target_head(one_team));
  CHECK(asked(blas_config(one_team + 1, 5, {7, 6}, 3))->fuses_loss_in_target_head(one_team + 1));
  // The portable dense backend has no head kernel.
  auto portable = blas_config(300, 5, {7, 6}, 3);
  portable.dense_backend = foxrl::DenseBackend::portable;
  CHECK_FALSE(asked(portable)->fuses_loss_in_target_head(300));
  // More head outputs than one pass of the head kernel.
  CHECK_FALSE(asked(blas_config(300, 5, {7, 6}, 8))->fuses_loss_in_target_head(300));
  // Off unless asked for (measured slower on an H100: perf/NOTES.md).
  {
    const foxrl::test::ScopedEnvironment unset("FOXRL_LOSS_IN_TARGET_HEAD", nullptr);
    CHECK_FALSE(foxrl::DqnLearner<Exec>(space, blas_config(300, 5, {7, 6}, 3)).fuses_loss_in_target_head(300));
  }
  const foxrl::test::ScopedEnvironment on("FOXRL_LOSS_IN_TARGET_HEAD", "1");
  CHECK(foxrl::DqnLearner<Exec>(space, blas_config(300, 5, {7, 6}, 3)).fuses_loss_in_target_head(300));
}
