// IqlLearner: one update's gradients of all four networks against central
// differences of the float64 losses (tests/support/reference_offline.hpp
// over the float64 MLP of reference_dqn.hpp), the Polyak targets, a small
// MDP whose expectile fixed points are known in closed form, config errors
// (the audit of an update and the checkpoints are the learner contract's,
// tests/test_learner_contract.cpp).

#include "agents/offline/iql_learner.hpp"
#include "core/execution_context.hpp"
#include "core/kokkos_tools_audit.hpp"
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
#include <functional>
#include <string>
#include <vector>

#include <unistd.h>

namespace {

using foxrl::IqlNetwork;
using foxrl::test::flat_host;
using foxrl::test::heads;
using foxrl::test::is_padding;
using foxrl::test::offline_columns;
using foxrl::test::ref_net;
using foxrl::test::RefBatch;
using foxrl::test::RefNet;
using foxrl::test::to_device;

foxrl::IqlLearnerConfig small_config(foxrl::DenseBackend backend) {
  foxrl::IqlLearnerConfig c;
  c.obs_dim = 5;
  c.hidden = {7, 6};
  c.num_actions = 3;
  c.max_batch = 32;
  c.max_inference_batch = 40;
  c.seed = 77;
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

TEMPLATE_TEST_CASE("IQL update: every network's gradients match central differences of the float64 losses",
                   "[iql][grad]", FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  for (const auto backend : {foxrl::DenseBackend::portable, foxrl::DenseBackend::blas}) {
    auto config = small_config(backend);
    // A weight clip inside the spread of exp(beta u), so both sides show.
    config.max_weight = 1.1f;
    foxrl::IqlLearner<Exec> learner(space, config);
    const auto& vl = learner.layout(IqlNetwork::value);
    const auto& al = learner.layout(IqlNetwork::q1);
    REQUIRE(vl.head_kind == foxrl::HeadKind::plain);
    REQUIRE(vl.head_outputs() == 1);
    REQUIRE(al.head_outputs() == 3);
    // Targets that differ from the online twins, so the value and policy
    // losses read the targets and the Q loss the online networks.
    foxrl::kernels::init_weights(space, learner.target(0).params().flat, al, 5, foxrl::InitScheme::torch_default);
    foxrl::kernels::init_weights(space, learner.target(1).params().flat, al, 6, foxrl::InitScheme::torch_default);
    const auto v0 = flat_host(space, learner.params(IqlNetwork::value).flat);
    const auto q10 = flat_host(space, learner.params(IqlNetwork::q1).flat);
    const auto q20 = flat_host(space, learner.params(IqlNetwork::q2).flat);
    const auto pi0 = flat_host(space, learner.params(IqlNetwork::policy).flat);
    const auto t10 = flat_host(space, learner.target(0).params().flat);
    const auto t20 = flat_host(space, learner.target(1).params().flat);
    REQUIRE(q10 != q20);  // the twins start apart

    const int B = 32;
    const auto batch = foxrl::test::random_batch(B, 5, 3, 21);
    learner.update(space, to_device(space, batch));
    CHECK(learner.updates() == 1);

    const auto b = offline_columns(batch, 3);
    const RefNet vnet = ref_net(vl, v0), q1net = ref_net(al, q10), q2net = ref_net(al, q20), pinet = ref_net(al, pi0),
                 t1net = ref_net(al, t10), t2net = ref_net(al, t20);
    const auto q1t = heads(t1net, batch.states, B), q2t = heads(t2net, batch.states, B);
    const auto q1 = heads(q1net, batch.states, B), q2 = heads(q2net, batch.states, B);
    const auto v_s = heads(vnet, batch.states, B), v_next = heads(vnet, batch.next_states, B);
    const double tau = config.expectile, beta = config.beta, w_max = config.max_weight;

    const auto value_loss = [&](const RefNet& n) {
      return foxrl::test::ref_iql_value_loss(b, q1t, q2t, heads(n, batch.states, B), tau).loss;
    };
    const auto q1_loss = [&](const RefNet& n) {
      return foxrl::test::ref_iql_q_loss(b, heads(n, batch.states, B), q2, v_next).q1_loss;
    };
    const auto q2_loss = [&](const RefNet& n) {
      return foxrl::test::ref_iql_q_loss(b, q1, heads(n, batch.states, B), v_next).q2_loss;
    };
    const auto policy_loss = [&](const RefNet& n) {
      return foxrl::test::ref_iql_policy_loss(b, heads(n, batch.states, B), q1t, q2t, v_s, beta, w_max).loss;
    };

    const auto metrics = foxrl::test::to_host(space, learner.metrics());
    const auto rv = foxrl::test::ref_iql_value_loss(b, q1t, q2t, v_s, tau);
    const auto rq = foxrl::test::ref_iql_q_loss(b, q1, q2, v_next);
    const auto rp = foxrl::test::ref_iql_policy_loss(b, heads(pinet, batch.states, B), q1t, q2t, v_s, beta, w_max);
    INFO("backend " << foxrl::to_string(backend));
    REQUIRE(rp.clipped > 0.0);  // the clip is exercised ...
    REQUIRE(rp.clipped < 1.0);  // ... and so are unclipped weights
    using M = foxrl::OfflineMetrics;
    CHECK(metrics(M::value_loss) == Approx(rv.loss).epsilon(1e-5));
    CHECK(metrics(M::q1_loss) == Approx(rq.q1_loss).epsilon(1e-5));
    CHECK(metrics(M::q2_loss) == Approx(rq.q2_loss).epsilon(1e-5));
    CHECK(metrics(M::mean_target) == Approx(rq.mean_target).epsilon(1e-5).margin(1e-6));
    CHECK(metrics(M::policy_loss) == Approx(rp.loss).epsilon(1e-5));
    CHECK(metrics(M::mean_weight) == Approx(rp.mean_weight).epsilon(1e-5));
    CHECK(metrics(M::clipped_weights) == Approx(rp.clipped).epsilon(1e-6));

    struct Case {
      IqlNetwork k;
      const RefNet* net;
      std::function<double(const RefNet&)> loss;
      const char* name;
    };
    const Case cases[] = {{IqlNetwork::value, &vnet, value_loss, "value"},
                          {IqlNetwork::q1, &q1net, q1_loss, "q1"},
                          {IqlNetwork::q2, &q2net, q2_loss, "q2"},
                          {IqlNetwork::policy, &pinet, policy_loss, "policy"}};
    for (const auto& c : cases) {
      INFO("network " << c.name);
      const auto grads = flat_host(space, learner.gradients(c.k));
      const auto g = check_gradients(*c.net, grads, c.loss);
      REQUIRE(g.scale > 0.0);
      // float32 backward against float64 differences: agreement to 1e-5 of
      // the largest gradient entry (float rounding is ~1e-7 of it; the
      // finite-difference error ~1e-9).
      CHECK(g.worst <= 1e-5 * g.scale);
      CHECK(g.padding_nonzero == 0);
      const auto om = foxrl::test::to_host(space, learner.optimizer_metrics(c.k));
      CHECK(om(foxrl::LearnerMetrics::grad_norm) == Approx(std::sqrt(g.norm_sq)).epsilon(1e-4));
    }

    // Each twin's target trails its own online network by Polyak 0.005,
    // fused into that twin's optimizer launch; every network took a step.
    const auto t1 = flat_host(space, learner.target(0).params().flat);
    const auto t2 = flat_host(space, learner.target(1).params().flat);
    const auto q1n = flat_host(space, learner.params(IqlNetwork::q1).flat);
    const auto q2n = flat_host(space, learner.params(IqlNetwork::q2).flat);
    double worst_target = 0.0;
    for (std::size_t k = 0; k < al.total; ++k) {
      worst_target = std::max(worst_target, std::abs(t1[k] - (0.005 * q1n[k] + 0.995 * t10[k])));
      worst_target = std::max(worst_target, std::abs(t2[k] - (0.005 * q2n[k] + 0.995 * t20[k])));
    }
    CHECK(worst_target < 1e-6);
    CHECK(q1n != q10);
    CHECK(q2n != q20);
    CHECK(flat_host(space, learner.params(IqlNetwork::value).flat) != v0);
    CHECK(flat_host(space, learner.params(IqlNetwork::policy).flat) != pi0);
    for (const auto k : {IqlNetwork::value, IqlNetwork::q1, IqlNetwork::q2, IqlNetwork::policy})
      CHECK(foxrl::test::to_host(space, learner.optimizer(k).step())() == 1);
  }
}

namespace {

// The small MDP: a chain s0 -> s1 -> s2 -> (terminal) with one-hot states
// (4 columns; the terminal state only ever appears as a next state, whose
// value the discount 0 removes). Action 1 moves right (reward 0, and 1 on
// leaving s2, which terminates); action 0 quits (terminates) with reward
// quit_reward[s]. gamma 0.9. The dataset holds every (s, a), action 0 twice
// and action 1 once per state: a behaviour policy pi_b(1 | s) = 1/3.
constexpr int mdp_states = 3;
constexpr int mdp_obs = 4;
constexpr double mdp_gamma = 0.9;
constexpr double quit_reward[mdp_states] = {0.5, 0.4, 0.3};
constexpr int quit_copies = 2, right_copies = 1;

double mdp_reward(int s, int a) { return a == 0 ? quit_reward[s] : (s == mdp_states - 1 ? 1.0 : 0.0); }
bool mdp_terminal(int s, int a) { return a == 0 || s == mdp_states - 1; }

RefBatch mdp_dataset() {
  RefBatch b;
  b.obs_dim = mdp_obs;
  for (int s = 0; s < mdp_states; ++s)
    for (int a = 0; a < 2; ++a)
      for (int c = 0; c < (a == 0 ? quit_copies : right_copies); ++c) {
        const int next = mdp_terminal(s, a) ? mdp_states : s + 1;
        for (int j = 0; j < mdp_obs; ++j) b.states.push_back(j == s ? 1.0f : 0.0f);
        for (int j = 0; j < mdp_obs; ++j) b.next_states.push_back(j == next ? 1.0f : 0.0f);
        b.actions.push_back(a);
        b.rewards.push_back(static_cast<float>(mdp_reward(s, a)));
        b.discounts.push_back(mdp_terminal(s, a) ? 0.0f : static_cast<float>(mdp_gamma));
        b.is_weights.push_back(1.0f);
        ++b.size;
      }
  return b;
}

/// Fixed point of IQL on the MDP in closed form: Q(s, a) = r + gamma V(s')
/// and V(s) the tau-expectile of Q(s, .) under the dataset's action
/// frequencies p, i.e. the v solving
/// tau p1 (q1 - v) = (1 - tau) p0 (v - q0) (for q1 >= v >= q0, or mirrored):
/// v = (w1 q1 + w0 q0) / (w1 + w0), w_a = p_a |tau - 1(q_a < v)|.
/// The chain is acyclic, so one backward sweep solves it.
struct MdpValues {
  double v[mdp_states] = {}, q[mdp_states][2] = {};
};

MdpValues mdp_expectile_values(double tau) {
  MdpValues r;
  const double p[2] = {double(quit_copies) / (quit_copies + right_copies),
                       double(right_copies) / (quit_copies + right_copies)};
  for (int s = mdp_states - 1; s >= 0; --s) {
    for (int a = 0; a < 2; ++a) r.q[s][a] = mdp_reward(s, a) + (mdp_terminal(s, a) ? 0.0 : mdp_gamma * r.v[s + 1]);
    const int hi = r.q[s][1] >= r.q[s][0] ? 1 : 0, lo = 1 - hi;
    const double w_hi = p[hi] * tau, w_lo = p[lo] * (1.0 - tau);
    r.v[s] = (w_hi * r.q[s][hi] + w_lo * r.q[s][lo]) / (w_hi + w_lo);
  }
  return r;
}

/// The behaviour policy's values (pi_b(1 | s) = 1/3) by the Bellman sweep.
MdpValues mdp_behaviour_values() {
  MdpValues r;
  const double p1 = double(right_copies) / (quit_copies + right_copies);
  for (int s = mdp_states - 1; s >= 0; --s) {
    for (int a = 0; a < 2; ++a) r.q[s][a] = mdp_reward(s, a) + (mdp_terminal(s, a) ? 0.0 : mdp_gamma * r.v[s + 1]);
    r.v[s] = (1.0 - p1) * r.q[s][0] + p1 * r.q[s][1];
  }
  return r;
}

/// The optimal values: Q*(s, 1) = gamma^(2 - s), Q*(s, 0) = quit reward.
MdpValues mdp_optimal_values() {
  MdpValues r;
  for (int s = mdp_states - 1; s >= 0; --s) {
    for (int a = 0; a < 2; ++a) r.q[s][a] = mdp_reward(s, a) + (mdp_terminal(s, a) ? 0.0 : mdp_gamma * r.v[s + 1]);
    r.v[s] = std::max(r.q[s][0], r.q[s][1]);
  }
  return r;
}

/// Trains IQL with expectile `tau` on the whole MDP dataset every update
/// (deterministic full-batch steps) and returns the learned V, min-Q and
/// greedy actions at s0..s2.
template <class Exec>
MdpValues train_mdp(const Exec& space, double tau, int updates, std::vector<int>& greedy) {
  const auto data = mdp_dataset();
  foxrl::IqlLearnerConfig c;
  c.obs_dim = mdp_obs;
  c.hidden = {16, 16};
  c.num_actions = 2;
  c.max_batch = data.size;
  c.lr = 1e-3f;
  c.expectile = static_cast<float>(tau);
  c.seed = 3;
  c.dense_backend = foxrl::DenseBackend::portable;
  foxrl::IqlLearner<Exec> learner(space, c);
  const auto batch = to_device(space, data);
  for (int i = 0; i < updates; ++i) learner.update(space, batch);

  std::vector<float> eye;
  for (int s = 0; s < mdp_states; ++s)
    for (int j = 0; j < mdp_obs; ++j) eye.push_back(j == s ? 1.0f : 0.0f);
  using Mem = typename Exec::memory_space;
  const auto states = to_device(space, eye, mdp_states, mdp_obs);
  Kokkos::View<float*, Mem> v("foxrl::test::v", mdp_states);
  Kokkos::View<float**, Kokkos::LayoutRight, Mem> q("foxrl::test::q", mdp_states, 2);
  Kokkos::View<std::int32_t*, Mem> actions("foxrl::test::actions", mdp_states);
  learner.values(space, foxrl::ConstMatrix<Mem>(states), v);
  learner.q_values(space, foxrl::ConstMatrix<Mem>(states), foxrl::MutableMatrix<Mem>(q));
  learner.greedy_actions(space, foxrl::ConstMatrix<Mem>(states), actions);
  const auto vh = foxrl::test::to_host(space, v);
  const auto qh = foxrl::test::to_host(space, q);
  const auto ah = foxrl::test::to_host(space, actions);
  MdpValues r;
  greedy.clear();
  for (int s = 0; s < mdp_states; ++s) {
    r.v[s] = vh(s);
    for (int a = 0; a < 2; ++a) r.q[s][a] = qh(s, a);
    greedy.push_back(ah(s));
  }
  return r;
}

}  // namespace

TEMPLATE_TEST_CASE("IQL on a small MDP: expectile 0.5 gives the behaviour values, 0.99 nears the optimal ones",
                   "[iql][mdp]", FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  const int updates = 4000;
  // Full-batch Adam at lr 1e-3 settles to the fixed point up to the
  // steps' own jitter and the target lag (observed: under 1e-3 after 4000
  // updates); 2.5e-3 absolute on values of order 1.
  const double tol = 2.5e-3;

  const auto behaviour = mdp_behaviour_values();
  const auto optimal = mdp_optimal_values();
  {
    // The expectile-0.5 fixed point is the behaviour policy's value.
    const auto closed = mdp_expectile_values(0.5);
    for (int s = 0; s < mdp_states; ++s) REQUIRE(closed.v[s] == Approx(behaviour.v[s]).epsilon(1e-12));
    std::vector<int> greedy;
    const auto learned = train_mdp(space, 0.5, updates, greedy);
    for (int s = 0; s < mdp_states; ++s) {
      INFO("expectile 0.5, state " << s);
      CHECK(learned.v[s] == Approx(behaviour.v[s]).margin(tol));
      for (int a = 0; a < 2; ++a) CHECK(learned.q[s][a] == Approx(behaviour.q[s][a]).margin(tol));
    }
  }
  {
    const auto closed = mdp_expectile_values(0.99);
    // The closed-form expectile-0.99 values are within 0.03 of the optimal
    // ones (and far from the behaviour's), so matching them is nearing V*.
    for (int s = 0; s < mdp_states; ++s) {
      REQUIRE(std::abs(closed.v[s] - optimal.v[s]) < 0.03);
      REQUIRE(std::abs(behaviour.v[s] - optimal.v[s]) > 0.1);
    }
    std::vector<int> greedy;
    const auto learned = train_mdp(space, 0.99, updates, greedy);
    for (int s = 0; s < mdp_states; ++s) {
      INFO("expectile 0.99, state " << s);
      CHECK(learned.v[s] == Approx(closed.v[s]).margin(tol));
      CHECK(learned.v[s] == Approx(optimal.v[s]).margin(0.03 + tol));
      for (int a = 0; a < 2; ++a) {
        CHECK(learned.q[s][a] == Approx(closed.q[s][a]).margin(tol));
        CHECK(learned.q[s][a] == Approx(optimal.q[s][a]).margin(0.03 + tol));
      }
      CHECK(greedy[s] == 1);  // moving right is optimal in every state
    }
  }
}

TEST_CASE("IqlLearnerConfig::validate names each bad field", "[iql][config]") {
  const auto base = small_config(foxrl::DenseBackend::portable);
  REQUIRE_NOTHROW(base.validate());
  struct Bad {
    const char* field;
    std::function<void(foxrl::IqlLearnerConfig&)> set;
  };
  const Bad cases[] = {
      {"max_batch", [](auto& c) { c.max_batch = 0; }},
      {"max_inference_batch", [](auto& c) { c.max_inference_batch = -1; }},
      {"lr", [](auto& c) { c.lr = 0.0f; }},
      {"beta1", [](auto& c) { c.beta1 = 1.0f; }},
      {"beta2", [](auto& c) { c.beta2 = -0.1f; }},
      {"eps", [](auto& c) { c.eps = 0.0f; }},
      {"max_grad_norm", [](auto& c) { c.max_grad_norm = std::nanf(""); }},
      {"expectile", [](auto& c) { c.expectile = 1.0f; }},
      {"expectile", [](auto& c) { c.expectile = 0.0f; }},
      {"beta", [](auto& c) { c.beta = -1.0f; }},
      {"max_weight", [](auto& c) { c.max_weight = 0.0f; }},
      {"polyak_tau", [](auto& c) { c.polyak_tau = 0.0f; }},
      {"polyak_tau", [](auto& c) { c.polyak_tau = 1.5f; }},
      {"obs_dim", [](auto& c) { c.obs_dim = 0; }},
      {"hidden size 1",
       [](auto& c) {
         c.hidden = {4, 0};
       }},
      {"num_actions", [](auto& c) { c.num_actions = 0; }},
  };
  for (const auto& bad : cases) {
    auto c = base;
    bad.set(c);
    INFO(bad.field);
    CHECK_THROWS_AS(c.validate(), foxrl::UsageError);
    CHECK_THROWS_WITH(c.validate(), Catch::Contains(bad.field));
  }
}

TEMPLATE_TEST_CASE("IqlLearner refuses a batch larger than max_batch or of another obs_dim", "[iql][errors]",
                   FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  foxrl::IqlLearner<Exec> learner(space, small_config(foxrl::DenseBackend::portable));
  CHECK_THROWS_AS(learner.update(space, to_device(space, foxrl::test::random_batch(33, 5, 3, 1))), foxrl::LogicError);
  CHECK_THROWS_AS(learner.update(space, to_device(space, foxrl::test::random_batch(8, 4, 3, 1))), foxrl::LogicError);
  CHECK(learner.updates() == 0);
}
