// CqlLearner: one update's gradient against central differences of the
// float64 loss (tests/support/reference_offline.hpp over the float64 MLP of
// reference_dqn.hpp), both target schemes, the stationary point of the CQL
// objective on a one-state dataset (solved by Newton's method in float64),
// config and batch errors (the audit of an update and the checkpoints are
// the learner contract's, tests/test_learner_contract.cpp).

#include "agents/offline/bc_learner.hpp"
#include "agents/offline/cql_learner.hpp"
#include "agents/offline/iql_learner.hpp"
#include "core/execution_context.hpp"
#include "core/kokkos_tools_audit.hpp"
#include "io/safetensors.hpp"
#include "kernels/nn/weight_init.hpp"
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
foxrl::CqlLearnerConfig small_config(foxrl::DenseBackend backend) {
  foxrl::CqlLearnerConfig c;
  c.obs_dim = 5;
  c.hidden = {7, 3};
  c.num_actions = 3;
  c.max_batch = 16;
  c.max_inference_batch = 20;
  c.alpha = 0.7f;
  c.seed = 41;
  c.dense_backend = backend;
  return c;
}

struct GradCheck {
  double worst = 0.0, scale = 0.0, norm_sq = 0.0;
  std::size_t padding_nonzero = 0;
};

/// Central differences of `loss` in every non-padding parameter of `net`
/// against the float32 gradients `grads`.
GradCheck check_gradients(const RefNet& net, const std::vector<float>& grads,
                          const std::function<double(const RefNet&)>& loss) {
  GradCheck c;
  const double h = 1e-6;
  for (std::size_t k = 0; k < net.layout.total; ++k) {
    if (is_padding(net.layout, k)) {
      c.padding_nonzero += grads[k] != 0.0f;
      continue;
    }
    RefNet plus = net, minus = net;
    plus.p[k] += h;
    minus.p[k] -= h;
    const double fd = (loss(plus) - loss(minus)) / (2 * h);
    c.worst = std::max(c.worst, std::abs(fd - grads[k]));
    c.scale = std::max(c.scale, std::abs(fd));
    c.norm_sq += fd * fd;
  }
  return c;
}

}  // namespace

TEMPLATE_TEST_CASE("CQL update: the Q network's gradient matches central differences of the float64 loss",
                   "[cql][grad]", FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  for (const auto backend : {foxrl::DenseBackend::portable, foxrl::DenseBackend::blas}) {
    for (const bool double_q : {true, false}) {
      auto config = small_config(backend);
      config.double_q = double_q;
      config.polyak_tau = 0.25f;
      config.target_update_every = 0;
      foxrl::CqlLearner<Exec> learner(space, config);
      const auto& layout = learner.layout();
      REQUIRE(layout.head_kind == foxrl::HeadKind::plain);
      REQUIRE(layout.head_outputs() == 3);
      // A target apart from the online network, so the TD target reads the
      // target and (with double_q) the selection the online network.
      foxrl::kernels::init_weights(space, learner.target().params().flat, layout, 5, foxrl::InitScheme::torch_default);
      const auto p0 = flat_host(space, learner.params().flat);
      const auto t0 = flat_host(space, learner.target().params().flat);
      REQUIRE(p0 != t0);

      const int B = 13;  // fewer rows than max_batch
      const auto batch = foxrl::test::random_batch(B, 5, 3, 23);
      learner.update(space, to_device(space, batch));
      CHECK(learner.updates() == 1);

      const auto b = offline_columns(batch, 3);
      const RefNet qnet = ref_net(layout, p0), tnet = ref_net(layout, t0);
      const auto target_next = heads(tnet, batch.next_states, B);
      const double alpha = config.alpha;
      const auto loss = [&](const RefNet& n) {
        const auto online_next = double_q ? heads(n, batch.next_states, B) : std::vector<double>();
        return foxrl::test::ref_cql_loss(b, heads(n, batch.states, B), target_next, online_next, alpha).loss;
      };
      const auto online_next = heads(qnet, batch.next_states, B);
      const auto ref = foxrl::test::ref_cql_loss(b, heads(qnet, batch.states, B), target_next,
                                                 double_q ? online_next : std::vector<double>(), alpha);
      // The two selections of a* give different losses here, so the check
      // below tells them apart.
      const auto other = foxrl::test::ref_cql_loss(b, heads(qnet, batch.states, B), target_next,
                                                   double_q ? std::vector<double>() : online_next, alpha);
      REQUIRE(std::abs(ref.td_loss - other.td_loss) > 1e-3);
      INFO("backend " << foxrl::to_string(backend) << ", double_q " << double_q);

      using M = foxrl::OfflineMetrics;
      const auto metrics = foxrl::test::to_host(space, learner.metrics());
      CHECK(metrics(M::cql_loss) == Approx(ref.loss).epsilon(1e-5));
      CHECK(metrics(M::cql_penalty) == Approx(ref.penalty).epsilon(1e-5));
      CHECK(metrics(M::cql_td_loss) == Approx(ref.td_loss).epsilon(1e-5));
      CHECK(metrics(M::cql_mean_q) == Approx(ref.mean_q).epsilon(1e-5).margin(1e-6));

      const auto grads = flat_host(space, learner.gradients());
      const auto g = check_gradients(qnet, grads, loss);
      REQUIRE(g.scale > 0.0);
      // float32 backward against float64 differences: agreement to 1e-5 of
      // the largest gradient entry (float rounding is ~1e-7 of it; the
      // finite-difference error ~1e-9).
      CHECK(g.worst <= 1e-5 * g.scale);
      CHECK(g.padding_nonzero == 0);
      const auto om = foxrl::test::to_host(space, learner.optimizer_metrics());
      CHECK(om(foxrl::LearnerMetrics::grad_norm) == Approx(std::sqrt(g.norm_sq)).epsilon(1e-4));

      // The target trails the network by Polyak 0.25 in the optimizer launch.
      const auto p1 = flat_host(space, learner.params().flat);
      const auto t1 = flat_host(space, learner.target().params().flat);
      double worst_target = 0.0;
      for (std::size_t k = 0; k < layout.total; ++k)
        worst_target = std::max(worst_target, std::abs(t1[k] - (0.25 * p1[k] + 0.75 * t0[k])));
      CHECK(worst_target < 1e-6);
      CHECK(p1 != p0);
      CHECK(foxrl::test::to_host(space, learner.optimizer().step())() == 1);
    }
  }
}

TEMPLATE_TEST_CASE("CQL hard target copies land on every target_update_every-th update", "[cql][target]",
                   FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  auto config = small_config(foxrl::DenseBackend::portable);
  config.target_update_every = 3;
  foxrl::CqlLearner<Exec> learner(space, config);
  CHECK(flat_host(space, learner.target().params().flat) == flat_host(space, learner.params().flat));
  foxrl::kernels::init_weights(space, learner.target().params().flat, learner.layout(), 5,
                               foxrl::InitScheme::torch_default);
  const auto t0 = flat_host(space, learner.target().params().flat);
  const auto batch = to_device(space, foxrl::test::random_batch(16, 5, 3, 8));
  for (int u = 1; u <= 2; ++u) {
    learner.update(space, batch);
    INFO("update " << u);
    CHECK(flat_host(space, learner.target().params().flat) == t0);
  }
  learner.update(space, batch);
  const auto p3 = flat_host(space, learner.params().flat);
  CHECK(flat_host(space, learner.target().params().flat) == p3);  // the copy, bit for bit
  learner.update(space, batch);
  CHECK(flat_host(space, learner.params().flat) != p3);
  CHECK(flat_host(space, learner.target().params().flat) == p3);  // not again before update 6
}

namespace {

/// Solves the n x n system m x = rhs (row-major m) by Gaussian elimination
/// with partial pivoting.
std::vector<double> solve(std::vector<double> m, std::vector<double> rhs) {
  const int n = static_cast<int>(rhs.size());
  for (int c = 0; c < n; ++c) {
    int pivot = c;
    for (int r = c + 1; r < n; ++r)
      if (std::abs(m[std::size_t(r) * n + c]) > std::abs(m[std::size_t(pivot) * n + c])) pivot = r;
    for (int j = 0; j < n; ++j) std::swap(m[std::size_t(c) * n + j], m[std::size_t(pivot) * n + j]);
    std::swap(rhs[c], rhs[pivot]);
    for (int r = c + 1; r < n; ++r) {
      const double f = m[std::size_t(r) * n + c] / m[std::size_t(c) * n + c];
      for (int j = c; j < n; ++j) m[std::size_t(r) * n + j] -= f * m[std::size_t(c) * n + j];
      rhs[r] -= f * rhs[c];
    }
  }
  std::vector<double> x(n);
  for (int r = n - 1; r >= 0; --r) {
    double acc = rhs[r];
    for (int j = r + 1; j < n; ++j) acc -= m[std::size_t(r) * n + j] * x[j];
    x[r] = acc / m[std::size_t(r) * n + r];
  }
  return x;
}

std::vector<double> softmax(const std::vector<double>& q) {
  const double lse = foxrl::test::ref_logsumexp(q.data(), static_cast<int>(q.size()));
  std::vector<double> p;
  for (const double x : q) p.push_back(std::exp(x - lse));
  return p;
}

/// The gradient of the one-state CQL objective
/// alpha (logsumexp Q - sum_j mu_j Q_j) + sum_j mu_j (Q_j - r_j)^2:
/// alpha (softmax(Q)_j - mu_j) + 2 mu_j (Q_j - r_j).
std::vector<double> cql_stationarity(const std::vector<double>& q, const std::vector<double>& mu,
                                     const std::vector<double>& r, double alpha) {
  const auto p = softmax(q);
  std::vector<double> f;
  for (std::size_t j = 0; j < q.size(); ++j) f.push_back(alpha * (p[j] - mu[j]) + 2.0 * mu[j] * (q[j] - r[j]));
  return f;
}

double max_abs(const std::vector<double>& x) {
  double m = 0.0;
  for (const double v : x) m = std::max(m, std::abs(v));
  return m;
}

/// The stationary point of the one-state objective by Newton's method
/// (Jacobian alpha (diag p - p p^T) + 2 diag mu: positive definite when
/// every mu_j > 0, so the objective is strictly convex and the point
/// unique), started at r; `residual` receives max_j |gradient_j| there.
std::vector<double> cql_fixed_point(const std::vector<double>& mu, const std::vector<double>& r, double alpha,
                                    double& residual) {
  const int n = static_cast<int>(mu.size());
  std::vector<double> q = r;
  for (int it = 0; it < 100; ++it) {
    const auto f = cql_stationarity(q, mu, r, alpha);
    residual = max_abs(f);
    if (residual < 1e-14) break;
    const auto p = softmax(q);
    std::vector<double> jac(std::size_t(n) * n);
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j)
        jac[std::size_t(i) * n + j] = alpha * ((i == j ? p[i] : 0.0) - p[i] * p[j]) + (i == j ? 2.0 * mu[i] : 0.0);
    std::vector<double> minus_f;
    for (const double v : f) minus_f.push_back(-v);
    const auto step = solve(jac, minus_f);
    for (int j = 0; j < n; ++j) q[j] += step[j];
  }
  residual = max_abs(cql_stationarity(q, mu, r, alpha));
  return q;
}

// The one-state dataset: every row starts in the same state and ends the
// episode (discount 0, so y = r), action j drawn counts[j] times with the
// reward rewards[j]: mu_j = counts[j] / 16. Action 3 is rare (mu 1/16) and
// the best by reward, where the penalty pushes hardest.
constexpr int one_state_actions = 4;
const int one_state_counts[one_state_actions] = {6, 5, 4, 1};
const double one_state_rewards[one_state_actions] = {0.2, 1.0, -0.5, 1.2};
const float one_state_obs[3] = {0.5f, -1.0f, 0.25f};

RefBatch one_state_dataset() {
  RefBatch b;
  b.obs_dim = 3;
  for (int a = 0; a < one_state_actions; ++a)
    for (int c = 0; c < one_state_counts[a]; ++c) {
      b.states.insert(b.states.end(), one_state_obs, one_state_obs + 3);
      b.next_states.insert(b.next_states.end(), one_state_obs, one_state_obs + 3);
      b.actions.push_back(a);
      b.rewards.push_back(static_cast<float>(one_state_rewards[a]));
      b.discounts.push_back(0.0f);
      b.is_weights.push_back(1.0f);
      ++b.size;
    }
  return b;
}

std::vector<double> one_state_mu() {
  std::vector<double> mu;
  for (int a = 0; a < one_state_actions; ++a) mu.push_back(one_state_counts[a] / 16.0);
  return mu;
}

/// Trains CQL with `alpha` on the whole one-state dataset every update
/// and returns the learned Q at the state and the greedy action.
template <class Exec>
std::vector<double> train_one_state(const Exec& space, float alpha, int updates, int& greedy) {
  const auto data = one_state_dataset();
  foxrl::CqlLearnerConfig c;
  c.obs_dim = 3;
  c.hidden = {16, 16};
  c.num_actions = one_state_actions;
  c.max_batch = data.size;
  c.lr = 1e-3f;
  c.alpha = alpha;
  c.seed = 9;
  c.dense_backend = foxrl::DenseBackend::portable;
  foxrl::CqlLearner<Exec> learner(space, c);
  const auto batch = to_device(space, data);
  for (int i = 0; i < updates; ++i) learner.update(space, batch);

  using Mem = typename Exec::memory_space;
  const auto states = to_device(space, std::vector<float>(one_state_obs, one_state_obs + 3), 1, 3);
  Kokkos::View<float**, Kokkos::LayoutRight, Mem> q("foxrl::test::q", 1, one_state_actions);
  Kokkos::View<std::int32_t*, Mem> actions("foxrl::test::actions", 1);
  learner.q_values(space, foxrl::ConstMatrix<Mem>(states), foxrl::MutableMatrix<Mem>(q));
  learner.greedy_actions(space, foxrl::ConstMatrix<Mem>(states), actions);
  const auto qh = foxrl::test::to_host(space, q);
  greedy = foxrl::test::to_host(space, actions)(0);
  std::vector<double> out;
  for (int a = 0; a < one_state_actions; ++a) out.push_back(qh(0, a));
  return out;
}

}  // namespace

TEMPLATE_TEST_CASE("CQL on a one-state dataset converges to the stationary point of its objective", "[cql][fixed]",
                   FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  const auto mu = one_state_mu();
  const std::vector<double> r(one_state_rewards, one_state_rewards + one_state_actions);
  const int updates = 3000;
  // Full-batch Adam at lr 1e-3 on this strictly convex objective settles on
  // the stationary point to float32 rounding (observed: within 5e-8 after
  // 3000 updates); 1e-5 absolute on values of order 1 leaves room for
  // another backend's summation order, and is far below the push-downs
  // (0.08 to 1.09) that tell the penalty's stationary point from r.
  const double tol = 1e-5;
  for (const double alpha : {1.0, 0.5}) {
    INFO("alpha " << alpha);
    double residual = 1.0;
    const auto q_star = cql_fixed_point(mu, r, alpha, residual);
    REQUIRE(residual <= 1e-12);
    // The conservative push-down: the rare action's value sits well below
    // its reward, below the best common action's, and far from r.
    REQUIRE(q_star[3] < r[3] - 0.5);
    REQUIRE(q_star[3] < q_star[1]);
    int greedy = -1;
    const auto q = train_one_state(space, static_cast<float>(alpha), updates, greedy);
    for (int j = 0; j < one_state_actions; ++j) {
      INFO("action " << j << ": learned " << q[j] << ", stationary " << q_star[j]);
      CHECK(std::abs(q[j] - q_star[j]) <= tol);
    }
    CHECK(q[3] < r[3]);
    CHECK(greedy == 1);  // argmax of the stationary point (the rare action is not chosen)
  }
  {
    // Without the penalty the TD loss alone: Q = r, and the rare action,
    // best by reward, is greedy.
    double residual = 1.0;
    const auto q_star = cql_fixed_point(mu, r, 0.0, residual);
    REQUIRE(residual <= 1e-12);
    for (int j = 0; j < one_state_actions; ++j) REQUIRE(q_star[j] == Approx(r[j]).margin(1e-12));
    int greedy = -1;
    const auto q = train_one_state(space, 0.0f, updates, greedy);
    for (int j = 0; j < one_state_actions; ++j) {
      INFO("alpha 0, action " << j << ": learned " << q[j]);
      CHECK(std::abs(q[j] - r[j]) <= tol);
    }
    CHECK(greedy == 3);
  }
}

TEST_CASE("CqlLearnerConfig::validate names each bad field", "[cql][config]") {
  const auto base = small_config(foxrl::DenseBackend::portable);
  REQUIRE_NOTHROW(base.validate());
  struct Bad {
    const char* field;
    std::function<void(foxrl::CqlLearnerConfig&)> set;
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
      {"lr", [](auto& c) { c.lr = 0.0f; }},
      {"lr", [](auto& c) { c.lr = INFINITY; }},
      {"beta1", [](auto& c) { c.beta1 = 1.0f; }},
      {"beta2", [](auto& c) { c.beta2 = -0.1f; }},
      {"eps", [](auto& c) { c.eps = 0.0f; }},
      {"max_grad_norm", [](auto& c) { c.max_grad_norm = std::nanf(""); }},
      {"alpha", [](auto& c) { c.alpha = -0.5f; }},
      {"alpha", [](auto& c) { c.alpha = std::nanf(""); }},
      {"polyak_tau", [](auto& c) { c.polyak_tau = -0.1f; }},
      {"polyak_tau",
       [](auto& c) {
         c.polyak_tau = 1.5f;
         c.target_update_every = 0;
       }},
      {"target_update_every", [](auto& c) { c.target_update_every = -1; }},
      {"target_update_every", [](auto& c) { c.target_update_every = 0; }},  // no scheme
      {"target_update_every", [](auto& c) { c.polyak_tau = 0.01f; }},       // both schemes
  };
  for (const auto& bad : cases) {
    auto c = base;
    bad.set(c);
    INFO(bad.field);
    CHECK_THROWS_AS(c.validate(), foxrl::UsageError);
    CHECK_THROWS_WITH(c.validate(), Catch::Contains(bad.field) && Catch::Contains("CqlLearnerConfig"));
  }
  // The Polyak scheme alone is valid.
  auto polyak = base;
  polyak.polyak_tau = 0.005f;
  polyak.target_update_every = 0;
  CHECK_NOTHROW(polyak.validate());
}

TEMPLATE_TEST_CASE("CqlLearner refuses a batch larger than max_batch, of another obs_dim, or too many inference rows",
                   "[cql][errors]", FOXRL_TEST_SPACES) {
  using Exec = TestType;
  using Mem = typename Exec::memory_space;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  foxrl::CqlLearner<Exec> learner(space, small_config(foxrl::DenseBackend::portable));
  CHECK(learner.max_inference_rows() == 20);
  CHECK_THROWS_AS(learner.update(space, to_device(space, foxrl::test::random_batch(17, 5, 3, 1))), foxrl::LogicError);
  CHECK_THROWS_AS(learner.update(space, to_device(space, foxrl::test::random_batch(8, 4, 3, 1))), foxrl::LogicError);
  CHECK(learner.updates() == 0);
  auto states = foxrl::test::to_device(space, foxrl::test::random_batch(21, 5, 3, 2).states, 21, 5);
  Kokkos::View<std::int32_t*, Mem> actions("foxrl::test::actions", 21);
  CHECK_THROWS_AS(learner.greedy_actions(space, foxrl::ConstMatrix<Mem>(states), actions), foxrl::LogicError);
  Kokkos::View<float**, Kokkos::LayoutRight, Mem> q("foxrl::test::q", 21, 2);
  CHECK_THROWS_AS(learner.q_values(space, foxrl::ConstMatrix<Mem>(states), foxrl::MutableMatrix<Mem>(q)),
                  foxrl::LogicError);
}
