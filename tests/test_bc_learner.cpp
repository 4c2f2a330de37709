// BcLearner: one update's gradient against central differences of the
// float64 cross-entropy (tests/support/reference_offline.hpp over the
// float64 MLP of reference_dqn.hpp), convergence to the dataset's action
// frequencies on a one-state dataset, config and batch errors (the audit
// of an update and the checkpoints are the learner contract's,
// tests/test_learner_contract.cpp).

#include "agents/offline/bc_learner.hpp"
#include "agents/offline/cql_learner.hpp"
#include "agents/offline/iql_learner.hpp"
#include "core/execution_context.hpp"
#include "core/kokkos_tools_audit.hpp"
#include "io/safetensors.hpp"
#include "support/reference_dqn.hpp"
#include "support/reference_offline.hpp"
#include "support/reference_offline_learner.hpp"
#include "support/test_spaces.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include <unistd.h>

namespace {

using foxrl::test::flat_host;
using foxrl::test::heads;
using foxrl::test::is_padding;
using foxrl::test::offline_columns;
using foxrl::test::ref_net;
using foxrl::test::RefBatch;
using foxrl::test::RefNet;
using foxrl::test::to_device;

/// Ragged sizes: obs 5, hidden {7, 3}, 3 actions; batches of up to 16 rows.
foxrl::BcLearnerConfig small_config(foxrl::DenseBackend backend) {
  foxrl::BcLearnerConfig c;
  c.obs_dim = 5;
  c.hidden = {7, 3};
  c.num_actions = 3;
  c.max_batch = 16;
  c.max_inference_batch = 20;
  c.seed = 43;
  c.dense_backend = backend;
  return c;
}

}  // namespace

TEMPLATE_TEST_CASE("BC update: the policy's gradient matches central differences of the float64 cross-entropy",
                   "[bc][grad]", FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  for (const auto backend : {foxrl::DenseBackend::portable, foxrl::DenseBackend::blas}) {
    foxrl::BcLearner<Exec> learner(space, small_config(backend));
    const auto& layout = learner.layout();
    REQUIRE(layout.head_kind == foxrl::HeadKind::plain);
    REQUIRE(layout.head_outputs() == 3);
    const auto p0 = flat_host(space, learner.params().flat);
    const int B = 13;  // fewer rows than max_batch
    const auto batch = foxrl::test::random_batch(B, 5, 3, 29);
    learner.update(space, to_device(space, batch));
    CHECK(learner.updates() == 1);

    const auto b = offline_columns(batch, 3);
    const RefNet net = ref_net(layout, p0);
    const auto ref = foxrl::test::ref_bc_loss(b, heads(net, batch.states, B));
    INFO("backend " << foxrl::to_string(backend));
    using M = foxrl::OfflineMetrics;
    const auto metrics = foxrl::test::to_host(space, learner.metrics());
    CHECK(metrics(M::bc_loss) == Approx(ref.loss).epsilon(1e-5));
    CHECK(metrics(M::bc_accuracy) == Approx(ref.accuracy).epsilon(1e-6));

    const auto grads = flat_host(space, learner.gradients());
    const double h = 1e-6;
    double worst = 0.0, scale = 0.0, norm_sq = 0.0;
    std::size_t padding_nonzero = 0;
    for (std::size_t k = 0; k < layout.total; ++k) {
      if (is_padding(layout, k)) {
        padding_nonzero += grads[k] != 0.0f;
        continue;
      }
      RefNet plus = net, minus = net;
      plus.p[k] += h;
      minus.p[k] -= h;
      const double fd = (foxrl::test::ref_bc_loss(b, heads(plus, batch.states, B)).loss -
                         foxrl::test::ref_bc_loss(b, heads(minus, batch.states, B)).loss) /
                        (2 * h);
      worst = std::max(worst, std::abs(fd - grads[k]));
      scale = std::max(scale, std::abs(fd));
      norm_sq += fd * fd;
    }
    REQUIRE(scale > 0.0);
    // float32 backward against float64 differences: agreement to 1e-5 of
    // the largest gradient entry (float rounding is ~1e-7 of it; the
    // finite-difference error ~1e-9).
    CHECK(worst <= 1e-5 * scale);
    CHECK(padding_nonzero == 0);
    const auto om = foxrl::test::to_host(space, learner.optimizer_metrics());
    CHECK(om(foxrl::LearnerMetrics::grad_norm) == Approx(std::sqrt(norm_sq)).epsilon(1e-4));
    CHECK(flat_host(space, learner.params().flat) != p0);
    CHECK(foxrl::test::to_host(space, learner.optimizer().step())() == 1);
  }
}

TEMPLATE_TEST_CASE("BC on a one-state dataset converges to the action frequencies and picks their mode", "[bc][fixed]",
                   FOXRL_TEST_SPACES) {
  using Exec = TestType;
  using Mem = typename Exec::memory_space;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  // One state, action j drawn counts[j] times: mu = (3, 7, 2, 4) / 16, mode 1.
  const int A = 4;
  const int counts[A] = {3, 7, 2, 4};
  const float obs[3] = {-0.3f, 0.8f, 1.1f};
  RefBatch data;
  data.obs_dim = 3;
  for (int a = 0; a < A; ++a)
    for (int c = 0; c < counts[a]; ++c) {
      data.states.insert(data.states.end(), obs, obs + 3);
      data.next_states.insert(data.next_states.end(), obs, obs + 3);
      data.actions.push_back(a);
      data.rewards.push_back(0.0f);
      data.discounts.push_back(0.0f);
      data.is_weights.push_back(1.0f);
      ++data.size;
    }
  foxrl::BcLearnerConfig c;
  c.obs_dim = 3;
  c.hidden = {16, 16};
  c.num_actions = A;
  c.max_batch = data.size;
  c.lr = 1e-3f;
  c.seed = 12;
  c.dense_backend = foxrl::DenseBackend::portable;
  foxrl::BcLearner<Exec> learner(space, c);
  const auto batch = to_device(space, data);
  for (int i = 0; i < 2000; ++i) learner.update(space, batch);

  // The policy at the state by the float64 forward of the learned weights.
  const RefNet net = ref_net(learner.layout(), flat_host(space, learner.params().flat));
  const std::vector<double> x(obs, obs + 3);
  const auto logits = net.head(x.data());
  const double lse = foxrl::test::ref_logsumexp(logits.data(), A);
  // Full-batch Adam at lr 1e-3 settles on the minimum softmax = mu to
  // float32 rounding (observed: within 3e-8 after 2000 updates); 1e-5
  // absolute on probabilities leaves room for another backend's summation
  // order.
  const double tol = 1e-5;
  for (int a = 0; a < A; ++a) {
    const double p = std::exp(logits[a] - lse);
    INFO("action " << a << ": learned " << p << ", frequency " << counts[a] / 16.0);
    CHECK(std::abs(p - counts[a] / 16.0) <= tol);
  }
  // The loss of the last update (taken just before its step) is the entropy
  // of mu at the minimum.
  double entropy = 0.0;
  for (int a = 0; a < A; ++a) entropy -= counts[a] / 16.0 * std::log(counts[a] / 16.0);
  CHECK(std::abs(foxrl::test::to_host(space, learner.metrics())(foxrl::OfflineMetrics::bc_loss) - entropy) <= tol);

  const auto states = to_device(space, std::vector<float>(obs, obs + 3), 1, 3);
  Kokkos::View<std::int32_t*, Mem> actions("foxrl::test::actions", 1);
  learner.greedy_actions(space, foxrl::ConstMatrix<Mem>(states), actions);
  CHECK(foxrl::test::to_host(space, actions)(0) == 1);
}

TEST_CASE("BcLearnerConfig::validate names each bad field", "[bc][config]") {
  const auto base = small_config(foxrl::DenseBackend::portable);
  REQUIRE_NOTHROW(base.validate());
  struct Bad {
    const char* field;
    std::function<void(foxrl::BcLearnerConfig&)> set;
  };
  const Bad cases[] = {
      {"obs_dim", [](auto& c) { c.obs_dim = 0; }},
      {"hidden size 1",
       [](auto& c) {
         c.hidden = {4, 0};
       }},
      {"num_actions", [](auto& c) { c.num_actions = 0; }},
      {"max_batch", [](auto& c) { c.max_batch = 0; }},
      {"max_inference_batch", [](auto& c) { c.max_inference_batch = -1; }},
      {"lr", [](auto& c) { c.lr = -1e-3f; }},
      {"beta1", [](auto& c) { c.beta1 = -0.1f; }},
      {"beta2", [](auto& c) { c.beta2 = 1.0f; }},
      {"eps", [](auto& c) { c.eps = -1.0f; }},
      {"max_grad_norm", [](auto& c) { c.max_grad_norm = std::nanf(""); }},
  };
  for (const auto& bad : cases) {
    auto c = base;
    bad.set(c);
    INFO(bad.field);
    CHECK_THROWS_AS(c.validate(), foxrl::UsageError);
    CHECK_THROWS_WITH(c.validate(), Catch::Contains(bad.field) && Catch::Contains("BcLearnerConfig"));
  }
}

TEMPLATE_TEST_CASE("BcLearner refuses a batch larger than max_batch, of another obs_dim, or too many inference rows",
                   "[bc][errors]", FOXRL_TEST_SPACES) {
  using Exec = TestType;
  using Mem = typename Exec::memory_space;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  foxrl::BcLearner<Exec> learner(space, small_config(foxrl::DenseBackend::portable));
  CHECK(learner.max_inference_rows() == 20);
  CHECK_THROWS_AS(learner.update(space, to_device(space, foxrl::test::random_batch(17, 5, 3, 1))), foxrl::LogicError);
  CHECK_THROWS_AS(learner.update(space, to_device(space, foxrl::test::random_batch(8, 4, 3, 1))), foxrl::LogicError);
  CHECK(learner.updates() == 0);
  auto states = foxrl::test::to_device(space, foxrl::test::random_batch(21, 5, 3, 2).states, 21, 5);
  Kokkos::View<std::int32_t*, Mem> actions("foxrl::test::actions", 21);
  CHECK_THROWS_AS(learner.greedy_actions(space, foxrl::ConstMatrix<Mem>(states), actions), foxrl::LogicError);
}
