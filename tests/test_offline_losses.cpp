// The offline loss kernels (IQL value, twin Q and policy losses, discrete
// CQL, behavior cloning) against the float64 host reference of
// support/reference_offline.hpp, against central finite differences of that
// float64 loss, and against closed forms; the weight clip; the one-stream
// rule and argument checks of every launch.
//
// Tolerances: float32 device math against float64 references. Batch means
// rtol 1e-5, atol 1e-6 (O(1) values summed in float); per-sample values
// rtol 1e-5, atol 1e-6; gradients rtol 1e-4 with atol 1e-5 times the
// largest |entry| (softmax probabilities and p - 1 differences lose a few
// float ulps). The float64 analytic gradient meets the central differences
// (step 1e-5) within rtol 1e-5, atol 1e-8.
#include "core/execution_context.hpp"
#include "core/kokkos_tools_audit.hpp"
#include "kernels/agents/offline/bc_loss.hpp"
#include "kernels/agents/offline/cql_loss.hpp"
#include "kernels/agents/offline/iql_policy_loss.hpp"
#include "kernels/agents/offline/iql_q_loss.hpp"
#include "kernels/agents/offline/iql_value_loss.hpp"
#include "support/allclose.hpp"
#include "support/device_copy.hpp"
#include "support/reference_offline.hpp"
#include "support/test_spaces.hpp"
#include "views/agents/offline/offline_metrics.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace {

using foxrl::OfflineMetrics;
using foxrl::test::allclose;
using foxrl::test::RefOfflineBatch;
using foxrl::test::to_device;
using foxrl::test::to_host;

template <class Exec>
using DeviceMatrix = Kokkos::View<float**, Kokkos::LayoutRight, typename Exec::memory_space>;
template <class Exec>
using DeviceVector = Kokkos::View<float*, typename Exec::memory_space>;

constexpr double mean_rtol = 1e-5, mean_atol = 1e-6;
constexpr double grad_rtol = 1e-4, grad_atol_scale = 1e-5;
constexpr double fd_step = 1e-5, fd_rtol = 1e-5, fd_atol = 1e-8;

/// The (batch, actions) shapes every reference comparison runs on: a batch
/// that spreads over several teams with a ragged last one, and one smaller
/// than a team.
const std::vector<std::pair<int, int>> shapes = {{1000, 2}, {1000, 3}, {1000, 5}, {37, 2}, {37, 3}, {37, 5}};

/// Random heads and batch columns of one case, as the floats the device sees.
struct Inputs {
  int B = 0, A = 0;
  std::vector<std::int32_t> actions;
  std::vector<float> rewards, discounts;                         // [B]
  std::vector<float> value, value_next;                          // [B]
  std::vector<float> q1t, q2t, q1, q2, logits, q, tnext, onext;  // [B, A]

  RefOfflineBatch ref() const {
    RefOfflineBatch r;
    r.batch = B;
    r.num_actions = A;
    r.actions.assign(actions.begin(), actions.end());
    r.rewards.assign(rewards.begin(), rewards.end());
    r.discounts.assign(discounts.begin(), discounts.end());
    return r;
  }
};

std::vector<double> wide(const std::vector<float>& v) { return std::vector<double>(v.begin(), v.end()); }

Inputs random_inputs(int B, int A, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal(0.0f, 1.5f);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  std::uniform_int_distribution<int> action(0, A - 1);
  std::bernoulli_distribution terminated(0.1);
  Inputs in;
  in.B = B;
  in.A = A;
  for (int i = 0; i < B; ++i) {
    in.actions.push_back(action(gen));
    in.rewards.push_back(unit(gen));
    in.discounts.push_back(terminated(gen) ? 0.0f : 0.99f);
    in.value.push_back(normal(gen));
    in.value_next.push_back(normal(gen));
  }
  for (auto* m : {&in.q1t, &in.q2t, &in.q1, &in.q2, &in.logits, &in.q, &in.tnext, &in.onext})
    for (int k = 0; k < B * A; ++k) m->push_back(normal(gen));
  return in;
}

/// A host copy of a device View of rank 1 or 2, row by row, as doubles.
template <class Exec, class View>
std::vector<double> host(const Exec& space, const View& v) {
  const auto h = to_host(space, v);
  std::vector<double> out;
  if constexpr (static_cast<int>(View::rank) == 1) {
    for (std::size_t i = 0; i < h.extent(0); ++i) out.push_back(h(i));
  } else {
    for (std::size_t i = 0; i < h.extent(0); ++i)
      for (std::size_t j = 0; j < h.extent(1); ++j) out.push_back(h(i, j));
  }
  return out;
}

template <class Exec>
DeviceMatrix<Exec> matrix(const Exec& space, const std::vector<float>& v, int rows, int cols) {
  return to_device(space, v, rows, cols);
}

template <class Exec>
DeviceMatrix<Exec> output(const Exec& space, int rows, int cols) {
  return DeviceMatrix<Exec>(Kokkos::view_alloc(space, "foxrl::test::output"), rows, cols);
}

template <class Exec>
DeviceVector<Exec> new_metrics(const Exec& space) {
  return DeviceVector<Exec>(Kokkos::view_alloc(space, "foxrl::test::metrics"), OfflineMetrics::count);
}

template <class Exec>
foxrl::kernels::ReduceScratch<typename Exec::memory_space> scratch_for(const Exec& space, int batch) {
  const auto need = foxrl::kernels::offline_loss_scratch<Exec>(batch);
  return {space, "foxrl::test::scratch", need.floats, need.tickets};
}

/// One metric against its reference value.
foxrl::test::CloseResult mean_close(double actual, double expected) {
  return allclose(std::vector<double>{actual}, std::vector<double>{expected}, mean_rtol, mean_atol);
}

/// A device gradient against a float64 one, atol scaled by its largest entry.
foxrl::test::CloseResult grad_close(const std::vector<double>& actual, const std::vector<double>& expected) {
  double scale = 0.0;
  for (double e : expected) scale = std::max(scale, std::fabs(e));
  return allclose(actual, expected, grad_rtol, grad_atol_scale * scale);
}

/// Central differences of `loss` with respect to `x` [B, A] at every entry
/// of the checked rows (all of a small batch, every 17th and the last of a
/// large one), compared with the float64 gradient `ref` and the device
/// gradient `dev`.
void check_finite_differences(std::vector<double> x, int B, int A, const std::vector<double>& ref,
                              const std::vector<double>& dev,
                              const std::function<double(const std::vector<double>&)>& loss) {
  std::vector<double> fd, ref_at, dev_at;
  for (int i = 0; i < B; ++i) {
    if (B > 64 && i % 17 != 0 && i != B - 1) continue;
    for (int j = 0; j < A; ++j) {
      const std::size_t k = std::size_t(i) * A + j;
      const double x0 = x[k];
      x[k] = x0 + fd_step;
      const double up = loss(x);
      x[k] = x0 - fd_step;
      const double down = loss(x);
      x[k] = x0;
      fd.push_back((up - down) / (2.0 * fd_step));
      ref_at.push_back(ref[k]);
      dev_at.push_back(dev[k]);
    }
  }
  INFO("finite differences at " << fd.size() << " entries");
  CHECK(allclose(ref_at, fd, fd_rtol, fd_atol));
  CHECK(grad_close(dev_at, fd));
}

/// Runs `launch(scratch)` with and without a scratch that splits the batch:
/// gradients are the same bit for bit, means close (they are summed in
/// another order). Returns the split run's (gradient outputs, metrics).
template <class Exec, class Launch, class Outputs>
std::pair<std::vector<std::vector<double>>, std::vector<double>> run_both_paths(const Exec& space, int B,
                                                                                const Launch& launch,
                                                                                const Outputs& outputs) {
  auto metrics = new_metrics(space);
  launch(scratch_for(space, B), metrics);
  const auto split_out = outputs();
  const auto split_metrics = host(space, metrics);
  // Twice on the same inputs: the same means bit for bit (no float atomics).
  launch(scratch_for(space, B), metrics);
  CHECK(host(space, metrics) == split_metrics);
  launch(foxrl::kernels::ReduceScratch<typename Exec::memory_space>(), metrics);
  CHECK(outputs() == split_out);
  const auto one_team = host(space, metrics);
  for (int s = 0; s < OfflineMetrics::count; ++s) {
    INFO("metric slot " << s);
    CHECK(mean_close(one_team[s], split_metrics[s]));
  }
  return {split_out, split_metrics};
}

}  // namespace

TEMPLATE_TEST_CASE("IQL value loss and its gradient match float64 and finite differences", "[offline][iql]",
                   FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  for (const auto& [B, A] : shapes) {
    for (const float tau : {0.7f, 0.9f}) {
      INFO("B " << B << ", A " << A << ", tau " << tau);
      const auto in = random_inputs(B, A, std::uint32_t(100 * B + A));
      const auto q1t = matrix(space, in.q1t, B, A), q2t = matrix(space, in.q2t, B, A);
      const auto value = matrix(space, in.value, B, 1);
      const auto actions = to_device(space, in.actions);
      auto d_value = output(space, B, 1);
      DeviceVector<Exec> advantages(Kokkos::view_alloc(space, "foxrl::test::advantages"), B);
      const auto launch = [&](const auto& scratch, const auto& metrics) {
        foxrl::kernels::IqlValueLossArgs<typename Exec::memory_space> args;
        args.q1_target = q1t;
        args.q2_target = q2t;
        args.value = value;
        args.actions = actions;
        args.expectile = tau;
        args.d_value = d_value;
        args.advantages = advantages;
        args.metrics = metrics;
        args.scratch = scratch;
        foxrl::kernels::iql_value_loss(space, args);
      };
      const auto [out, m] = run_both_paths(space, B, launch, [&] {
        return std::vector<std::vector<double>>{host(space, d_value), host(space, advantages)};
      });
      const auto b = in.ref();
      const auto ref = foxrl::test::ref_iql_value_loss(b, wide(in.q1t), wide(in.q2t), wide(in.value), double(tau));
      CHECK(mean_close(m[OfflineMetrics::value_loss], ref.loss));
      CHECK(mean_close(m[OfflineMetrics::mean_value], ref.mean_value));
      CHECK(mean_close(m[OfflineMetrics::mean_advantage], ref.mean_advantage));
      CHECK(allclose(out[1], ref.advantages, mean_rtol, mean_atol));
      CHECK(grad_close(out[0], ref.d_value));
      check_finite_differences(wide(in.value), B, 1, ref.d_value, out[0], [&](const std::vector<double>& v) {
        return foxrl::test::ref_iql_value_loss(b, wide(in.q1t), wide(in.q2t), v, double(tau)).loss;
      });
    }
  }
}

TEMPLATE_TEST_CASE("IQL expectile at tau 0.5 is half the squared error and tau times it where Q exceeds V",
                   "[offline][iql]", FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  // |tau - 1(u < 0)| = 1/2 for every u at tau = 1/2, so L_V = mean u^2 / 2 and
  // dL/dV_i = -u_i / B = (V_i - q_i) / B, with q_i = min of the twins. With
  // every u > 0 the weight is tau on every row: L_V = tau mean u^2.
  const int B = 37, A = 3;
  const auto in = random_inputs(B, A, 7);
  auto value = in.value;
  for (const float tau : {0.5f, 0.7f}) {
    const bool all_positive = tau != 0.5f;
    std::vector<double> u(B);
    if (all_positive) {
      for (int i = 0; i < B; ++i) {
        const std::size_t k = std::size_t(i) * A + in.actions[i];
        value[i] = std::min(in.q1t[k], in.q2t[k]) - 0.25f - float(i % 5);
      }
    }
    for (int i = 0; i < B; ++i) {
      const std::size_t k = std::size_t(i) * A + in.actions[i];
      u[i] = double(std::min(in.q1t[k], in.q2t[k])) - double(value[i]);
    }
    const auto q1t = matrix(space, in.q1t, B, A), q2t = matrix(space, in.q2t, B, A);
    const auto v = matrix(space, value, B, 1);
    auto d_value = output(space, B, 1);
    auto metrics = new_metrics(space);
    foxrl::kernels::IqlValueLossArgs<typename Exec::memory_space> args;
    args.q1_target = q1t;
    args.q2_target = q2t;
    args.value = v;
    args.actions = to_device(space, in.actions);
    args.expectile = tau;
    args.d_value = d_value;
    args.metrics = metrics;
    foxrl::kernels::iql_value_loss(space, args);
    double sq = 0.0;
    std::vector<double> grad(B);
    for (int i = 0; i < B; ++i) {
      sq += u[i] * u[i] / B;
      grad[i] = all_positive ? -2.0 * 0.7 * u[i] / B : -u[i] / B;
      if (all_positive) REQUIRE(u[i] > 0.0);
    }
    INFO("tau " << tau);
    CHECK(mean_close(host(space, metrics)[OfflineMetrics::value_loss], all_positive ? 0.7 * sq : 0.5 * sq));
    CHECK(grad_close(host(space, d_value), grad));
  }
}

TEMPLATE_TEST_CASE("IQL twin Q loss and its gradients match float64 and finite differences", "[offline][iql]",
                   FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  for (const auto& [B, A] : shapes) {
    INFO("B " << B << ", A " << A);
    const auto in = random_inputs(B, A, std::uint32_t(200 * B + A));
    const auto q1 = matrix(space, in.q1, B, A), q2 = matrix(space, in.q2, B, A);
    const auto value_next = matrix(space, in.value_next, B, 1);
    const auto actions = to_device(space, in.actions);
    const auto rewards = to_device(space, in.rewards), discounts = to_device(space, in.discounts);
    auto d_q1 = output(space, B, A), d_q2 = output(space, B, A);
    const auto launch = [&](const auto& scratch, const auto& metrics) {
      foxrl::kernels::IqlQLossArgs<typename Exec::memory_space> args;
      args.q1 = q1;
      args.q2 = q2;
      args.value_next = value_next;
      args.actions = actions;
      args.rewards = rewards;
      args.discounts = discounts;
      args.d_q1 = d_q1;
      args.d_q2 = d_q2;
      args.metrics = metrics;
      args.scratch = scratch;
      foxrl::kernels::iql_q_loss(space, args);
    };
    const auto [out, m] = run_both_paths(space, B, launch, [&] {
      return std::vector<std::vector<double>>{host(space, d_q1), host(space, d_q2)};
    });
    const auto b = in.ref();
    const auto ref = foxrl::test::ref_iql_q_loss(b, wide(in.q1), wide(in.q2), wide(in.value_next));
    CHECK(mean_close(m[OfflineMetrics::q1_loss], ref.q1_loss));
    CHECK(mean_close(m[OfflineMetrics::q2_loss], ref.q2_loss));
    CHECK(mean_close(m[OfflineMetrics::mean_q], ref.mean_q));
    CHECK(mean_close(m[OfflineMetrics::mean_target], ref.mean_target));
    CHECK(grad_close(out[0], ref.d_q1));
    CHECK(grad_close(out[1], ref.d_q2));
    // Only the dataset action's column carries gradient (exact zeros elsewhere).
    for (int i = 0; i < B; ++i)
      for (int j = 0; j < A; ++j)
        if (j != in.actions[i]) {
          CHECK(out[0][std::size_t(i) * A + j] == 0.0);
          CHECK(out[1][std::size_t(i) * A + j] == 0.0);
        }
    check_finite_differences(wide(in.q1), B, A, ref.d_q1, out[0], [&](const std::vector<double>& q) {
      return foxrl::test::ref_iql_q_loss(b, q, wide(in.q2), wide(in.value_next)).q1_loss;
    });
    check_finite_differences(wide(in.q2), B, A, ref.d_q2, out[1], [&](const std::vector<double>& q) {
      return foxrl::test::ref_iql_q_loss(b, wide(in.q1), q, wide(in.value_next)).q2_loss;
    });
  }
}

TEMPLATE_TEST_CASE("IQL policy loss and its gradient match float64 and finite differences", "[offline][iql]",
                   FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  for (const auto& [B, A] : shapes) {
    for (const auto& setting : std::vector<std::pair<float, float>>{{3.0f, 100.0f}, {0.5f, 2.0f}}) {
      const float beta = setting.first, w_max = setting.second;
      INFO("B " << B << ", A " << A << ", beta " << beta << ", w_max " << w_max);
      const auto in = random_inputs(B, A, std::uint32_t(300 * B + A));
      const auto logits = matrix(space, in.logits, B, A);
      const auto q1t = matrix(space, in.q1t, B, A), q2t = matrix(space, in.q2t, B, A);
      const auto value = matrix(space, in.value, B, 1);
      const auto actions = to_device(space, in.actions);
      auto d_logits = output(space, B, A);
      DeviceVector<Exec> weights(Kokkos::view_alloc(space, "foxrl::test::weights"), B);
      const auto launch = [&](const auto& scratch, const auto& metrics) {
        foxrl::kernels::IqlPolicyLossArgs<typename Exec::memory_space> args;
        args.logits = logits;
        args.q1_target = q1t;
        args.q2_target = q2t;
        args.value = value;
        args.actions = actions;
        args.beta = beta;
        args.max_weight = w_max;
        args.d_logits = d_logits;
        args.weights = weights;
        args.metrics = metrics;
        args.scratch = scratch;
        foxrl::kernels::iql_policy_loss(space, args);
      };
      const auto [out, m] = run_both_paths(space, B, launch, [&] {
        return std::vector<std::vector<double>>{host(space, d_logits), host(space, weights)};
      });
      const auto b = in.ref();
      const auto ref =
          foxrl::test::ref_iql_policy_loss(b, wide(in.logits), wide(in.q1t), wide(in.q2t), wide(in.value), beta, w_max);
      REQUIRE(ref.clipped > 0.0);  // the inputs reach the clip
      REQUIRE(ref.clipped < 1.0);
      CHECK(mean_close(m[OfflineMetrics::policy_loss], ref.loss));
      CHECK(mean_close(m[OfflineMetrics::mean_weight], ref.mean_weight));
      CHECK(m[OfflineMetrics::clipped_weights] == Approx(ref.clipped).margin(1e-6));
      CHECK(allclose(out[1], ref.weights, mean_rtol, mean_atol));
      CHECK(grad_close(out[0], ref.d_logits));
      check_finite_differences(wide(in.logits), B, A, ref.d_logits, out[0], [&](const std::vector<double>& z) {
        return foxrl::test::ref_iql_policy_loss(b, z, wide(in.q1t), wide(in.q2t), wide(in.value), beta, w_max).loss;
      });
    }
  }
}

TEST_CASE("the advantage weight reaches w_max exactly and never overflows", "[offline][iql]") {
  using foxrl::kernels::clipped_advantage_weight;
  const float w_max = 100.0f;
  const float log_w_max = float(std::log(100.0));
  const float inf = std::numeric_limits<float>::infinity();
  for (const float x : {4.7f, 50.0f, 88.8f, 89.0f, 1e4f, 3e38f, inf}) {
    INFO("x " << x);
    CHECK(clipped_advantage_weight(x, w_max, log_w_max) == w_max);  // exp(89) overflows float
  }
  CHECK(clipped_advantage_weight(0.0f, w_max, log_w_max) == 1.0f);
  CHECK(clipped_advantage_weight(-inf, w_max, log_w_max) == 0.0f);
  CHECK(clipped_advantage_weight(1.0f, w_max, log_w_max) == Approx(std::exp(1.0)).epsilon(1e-6));
  // Just below the threshold exp may round past w_max: still never above it.
  for (float x = log_w_max; x > log_w_max - 1e-5f; x = std::nextafter(x, 0.0f))
    CHECK(clipped_advantage_weight(x, w_max, log_w_max) <= w_max);
  // NaN stays NaN, so a broken advantage is seen downstream.
  CHECK(std::isnan(clipped_advantage_weight(std::nanf(""), w_max, log_w_max)));
}

TEST_CASE("the row helpers keep NaN inputs", "[offline]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  CHECK(foxrl::kernels::nan_min(1.0f, 2.0f) == 1.0f);
  CHECK(foxrl::kernels::nan_min(2.0f, -1.0f) == -1.0f);
  CHECK(std::isnan(foxrl::kernels::nan_min(nan, 2.0f)));
  CHECK(std::isnan(foxrl::kernels::nan_min(2.0f, nan)));
  Kokkos::View<float**, Kokkos::LayoutRight, Kokkos::HostSpace> m("foxrl::test::rows", 3, 3);
  const float rows[3][3] = {{1.0f, 5.0f, 2.0f}, {nan, 5.0f, 2.0f}, {1.0f, 5.0f, nan}};
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) m(i, j) = rows[i][j];
  CHECK(foxrl::kernels::row_max(m, 0, 3) == 5.0f);
  CHECK(foxrl::kernels::row_argmax(m, 0, 3) == 1);
  CHECK(std::isnan(foxrl::kernels::row_max(m, 1, 3)));
  CHECK(std::isnan(foxrl::kernels::row_max(m, 2, 3)));
}

TEMPLATE_TEST_CASE("IQL policy loss with huge advantages weighs every row w_max and stays finite", "[offline][iql]",
                   FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  const int B = 37, A = 3;
  const auto in = random_inputs(B, A, 11);
  const float big = std::numeric_limits<float>::max();
  // Q at the dataset action 1e30, or +max with V -max (u = +inf in float).
  auto q1t = in.q1t, q2t = in.q2t, value = in.value;
  for (int i = 0; i < B; ++i) {
    const std::size_t k = std::size_t(i) * A + in.actions[i];
    q1t[k] = q2t[k] = i % 2 == 0 ? 1e30f : big;
    value[i] = i % 2 == 0 ? 0.0f : -big;
  }
  auto d_logits = output(space, B, A);
  DeviceVector<Exec> weights(Kokkos::view_alloc(space, "foxrl::test::weights"), B);
  auto metrics = new_metrics(space);
  foxrl::kernels::IqlPolicyLossArgs<typename Exec::memory_space> args;
  // The argument structs hold unmanaged Views: the owners stay alive here.
  const auto logits_d = matrix(space, in.logits, B, A), q1t_d = matrix(space, q1t, B, A);
  const auto q2t_d = matrix(space, q2t, B, A), value_d = matrix(space, value, B, 1);
  args.logits = logits_d;
  args.q1_target = q1t_d;
  args.q2_target = q2t_d;
  args.value = value_d;
  args.actions = to_device(space, in.actions);
  args.d_logits = d_logits;
  args.weights = weights;
  args.metrics = metrics;
  foxrl::kernels::iql_policy_loss(space, args);
  const auto w = host(space, weights);
  for (int i = 0; i < B; ++i) CHECK(w[i] == 100.0);
  const auto m = host(space, metrics);
  CHECK(m[OfflineMetrics::mean_weight] == Approx(100.0).epsilon(1e-6));
  CHECK(m[OfflineMetrics::clipped_weights] == Approx(1.0).epsilon(1e-6));
  CHECK(std::isfinite(m[OfflineMetrics::policy_loss]));
  // With every w = 100 the loss is 100 times behavior cloning's.
  auto b = in.ref();
  const auto bc = foxrl::test::ref_bc_loss(b, wide(in.logits));
  CHECK(mean_close(m[OfflineMetrics::policy_loss], 100.0 * bc.loss));
  std::vector<double> expected(bc.d_logits.size());
  for (std::size_t k = 0; k < expected.size(); ++k) expected[k] = 100.0 * bc.d_logits[k];
  CHECK(grad_close(host(space, d_logits), expected));
}

TEMPLATE_TEST_CASE("discrete CQL loss and its gradient match float64 and finite differences", "[offline][cql]",
                   FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  for (const auto& [B, A] : shapes) {
    for (const bool double_q : {true, false}) {
      for (const float alpha : {1.0f, 0.3f}) {
        INFO("B " << B << ", A " << A << ", double DQN " << double_q << ", alpha " << alpha);
        const auto in = random_inputs(B, A, std::uint32_t(400 * B + A));
        const auto q = matrix(space, in.q, B, A);
        const auto tnext = matrix(space, in.tnext, B, A), onext = matrix(space, in.onext, B, A);
        const auto actions = to_device(space, in.actions);
        const auto rewards = to_device(space, in.rewards), discounts = to_device(space, in.discounts);
        auto d_q = output(space, B, A);
        DeviceVector<Exec> td(Kokkos::view_alloc(space, "foxrl::test::td"), B);
        const auto launch = [&](const auto& scratch, const auto& metrics) {
          foxrl::kernels::CqlLossArgs<typename Exec::memory_space> args;
          args.q = q;
          args.target_next = tnext;
          if (double_q) args.online_next = onext;
          args.actions = actions;
          args.rewards = rewards;
          args.discounts = discounts;
          args.alpha = alpha;
          args.d_q = d_q;
          args.td_errors = td;
          args.metrics = metrics;
          args.scratch = scratch;
          foxrl::kernels::cql_loss(space, args);
        };
        const auto [out, m] = run_both_paths(space, B, launch, [&] {
          return std::vector<std::vector<double>>{host(space, d_q), host(space, td)};
        });
        const auto b = in.ref();
        const std::vector<double> online = double_q ? wide(in.onext) : std::vector<double>();
        const auto ref = foxrl::test::ref_cql_loss(b, wide(in.q), wide(in.tnext), online, alpha);
        CHECK(mean_close(m[OfflineMetrics::cql_loss], ref.loss));
        CHECK(mean_close(m[OfflineMetrics::cql_penalty], ref.penalty));
        CHECK(mean_close(m[OfflineMetrics::cql_td_loss], ref.td_loss));
        CHECK(mean_close(m[OfflineMetrics::cql_mean_q], ref.mean_q));
        CHECK(allclose(out[1], ref.abs_td, mean_rtol, mean_atol));
        CHECK(grad_close(out[0], ref.d_q));
        check_finite_differences(wide(in.q), B, A, ref.d_q, out[0], [&](const std::vector<double>& x) {
          return foxrl::test::ref_cql_loss(b, x, wide(in.tnext), online, alpha).loss;
        });
      }
    }
  }
}

TEMPLATE_TEST_CASE("CQL penalty of equal Q-values is log A and the target picks the right next action",
                   "[offline][cql]", FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  for (const int A : {2, 3, 5}) {
    INFO("A " << A);
    const int B = 37;
    const auto in = random_inputs(B, A, 13);
    // Q(s, .) = c_i in every column: logsumexp = c_i + log A, the penalty
    // log A and its gradient alpha (1/A - 1(j = a)) / B. The target takes
    // Q_target(s', 0) = 5 + r where online_next prefers column 0 and
    // target_next alone would take its own max A - 1 (= 9): with reward 0
    // and discount 1, y is 5 (double DQN) or 9 (plain).
    std::vector<float> q(std::size_t(B) * A), tnext(std::size_t(B) * A, 0.0f), onext(std::size_t(B) * A, 0.0f);
    for (int i = 0; i < B; ++i) {
      for (int j = 0; j < A; ++j) q[std::size_t(i) * A + j] = 0.1f * float(i);
      tnext[std::size_t(i) * A] = 5.0f;
      tnext[std::size_t(i) * A + A - 1] = 9.0f;
      onext[std::size_t(i) * A] = 1.0f;
    }
    for (const bool double_q : {true, false}) {
      auto d_q = output(space, B, A);
      auto metrics = new_metrics(space);
      foxrl::kernels::CqlLossArgs<typename Exec::memory_space> args;
      const auto q_d = matrix(space, q, B, A), tnext_d = matrix(space, tnext, B, A);
      const auto onext_d = matrix(space, onext, B, A);
      args.q = q_d;
      args.target_next = tnext_d;
      if (double_q) args.online_next = onext_d;
      args.actions = to_device(space, in.actions);
      args.rewards = to_device(space, std::vector<float>(B, 0.0f));
      args.discounts = to_device(space, std::vector<float>(B, 1.0f));
      args.alpha = 2.0f;
      args.d_q = d_q;
      args.metrics = metrics;
      foxrl::kernels::cql_loss(space, args);
      const auto m = host(space, metrics);
      const double y = double_q ? 5.0 : 9.0;
      double td = 0.0;
      std::vector<double> grad(std::size_t(B) * A);
      for (int i = 0; i < B; ++i) {
        const double e = double(0.1f * float(i)) - y;
        td += e * e / B;
        for (int j = 0; j < A; ++j)
          grad[std::size_t(i) * A + j] =
              2.0 * (1.0 / A - (j == in.actions[i] ? 1.0 : 0.0)) / B + (j == in.actions[i] ? 2.0 * e / B : 0.0);
      }
      INFO("double DQN " << double_q);
      CHECK(mean_close(m[OfflineMetrics::cql_penalty], std::log(double(A))));
      CHECK(mean_close(m[OfflineMetrics::cql_td_loss], td));
      CHECK(mean_close(m[OfflineMetrics::cql_loss], 2.0 * std::log(double(A)) + td));
      CHECK(grad_close(host(space, d_q), grad));
    }
  }
}

TEMPLATE_TEST_CASE("behavior cloning loss and its gradient match float64 and finite differences", "[offline][bc]",
                   FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  for (const auto& [B, A] : shapes) {
    for (const float offset : {0.0f, 1e4f}) {
      // Logits around 1e4: exp of them overflows float, exp of the
      // max-shifted ones does not.
      INFO("B " << B << ", A " << A << ", logit offset " << offset);
      auto in = random_inputs(B, A, std::uint32_t(500 * B + A));
      for (auto& z : in.logits) z += offset;
      const auto logits = matrix(space, in.logits, B, A);
      const auto actions = to_device(space, in.actions);
      auto d_logits = output(space, B, A);
      const auto launch = [&](const auto& scratch, const auto& metrics) {
        foxrl::kernels::BcLossArgs<typename Exec::memory_space> args;
        args.logits = logits;
        args.actions = actions;
        args.d_logits = d_logits;
        args.metrics = metrics;
        args.scratch = scratch;
        foxrl::kernels::bc_loss(space, args);
      };
      const auto [out, m] =
          run_both_paths(space, B, launch, [&] { return std::vector<std::vector<double>>{host(space, d_logits)}; });
      const auto b = in.ref();
      const auto ref = foxrl::test::ref_bc_loss(b, wide(in.logits));
      CHECK(mean_close(m[OfflineMetrics::bc_loss], ref.loss));
      CHECK(m[OfflineMetrics::bc_accuracy] == Approx(ref.accuracy).margin(1e-6));
      CHECK(grad_close(out[0], ref.d_logits));
      if (offset == 0.0f) {
        check_finite_differences(wide(in.logits), B, A, ref.d_logits, out[0],
                                 [&](const std::vector<double>& z) { return foxrl::test::ref_bc_loss(b, z).loss; });
      }
    }
  }
}

TEMPLATE_TEST_CASE("behavior cloning of uniform logits costs log A", "[offline][bc]", FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  for (const int A : {2, 3, 5}) {
    const int B = 37;
    const auto in = random_inputs(B, A, 17);
    auto d_logits = output(space, B, A);
    auto metrics = new_metrics(space);
    foxrl::kernels::BcLossArgs<typename Exec::memory_space> args;
    const auto logits = matrix(space, std::vector<float>(std::size_t(B) * A, -3.0f), B, A);
    args.logits = logits;
    args.actions = to_device(space, in.actions);
    args.d_logits = d_logits;
    args.metrics = metrics;
    foxrl::kernels::bc_loss(space, args);
    std::vector<double> grad(std::size_t(B) * A);
    double first = 0.0;  // ties go to action 0
    for (int i = 0; i < B; ++i) {
      first += (in.actions[i] == 0 ? 1.0 : 0.0) / B;
      for (int j = 0; j < A; ++j) grad[std::size_t(i) * A + j] = (1.0 / A - (j == in.actions[i] ? 1.0 : 0.0)) / B;
    }
    INFO("A " << A);
    const auto m = host(space, metrics);
    CHECK(mean_close(m[OfflineMetrics::bc_loss], std::log(double(A))));
    CHECK(m[OfflineMetrics::bc_accuracy] == Approx(first).margin(1e-6));
    CHECK(grad_close(host(space, d_logits), grad));
  }
}

TEMPLATE_TEST_CASE("plain gradient steps of behavior cloning on a separable toy set lower the loss every step",
                   "[offline][bc]", FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  // States are one-hot e_{i mod 3} with action (i mod 3): a linear policy
  // logits = W s can fit them exactly. dL/dW = sum_i d_logits_i s_i^T.
  const int B = 37, A = 3;
  std::vector<std::int32_t> actions(B);
  for (int i = 0; i < B; ++i) actions[i] = i % A;
  std::vector<double> W(A * A, 0.0);
  W[1] = 0.5;  // start away from the uniform policy
  auto d_logits = output(space, B, A);
  auto metrics = new_metrics(space);
  const auto device_actions = to_device(space, actions);
  double previous = std::numeric_limits<double>::infinity();
  for (int step = 0; step < 6; ++step) {
    std::vector<float> logits(std::size_t(B) * A);
    for (int i = 0; i < B; ++i)
      for (int j = 0; j < A; ++j) logits[std::size_t(i) * A + j] = float(W[std::size_t(j) * A + i % A]);
    foxrl::kernels::BcLossArgs<typename Exec::memory_space> args;
    const auto logits_d = matrix(space, logits, B, A);
    args.logits = logits_d;
    args.actions = device_actions;
    args.d_logits = d_logits;
    args.metrics = metrics;
    foxrl::kernels::bc_loss(space, args);
    const double loss = host(space, metrics)[OfflineMetrics::bc_loss];
    INFO("step " << step << ": loss " << loss << " after " << previous);
    CHECK(loss < previous);
    previous = loss;
    const auto g = host(space, d_logits);
    for (int i = 0; i < B; ++i)
      for (int j = 0; j < A; ++j) W[std::size_t(j) * A + i % A] -= 2.0 * g[std::size_t(i) * A + j];
  }
  CHECK(host(space, metrics)[OfflineMetrics::bc_accuracy] == 1.0);
}

TEMPLATE_TEST_CASE("every offline loss launch runs on the given instance", "[offline][audit]", FOXRL_TEST_SPACES) {
  using Exec = TestType;
  using Mem = typename Exec::memory_space;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  const int B = 300, A = 4;
  const auto in = random_inputs(B, A, 19);
  const auto q1t = matrix(space, in.q1t, B, A), q2t = matrix(space, in.q2t, B, A);
  const auto q1 = matrix(space, in.q1, B, A), q2 = matrix(space, in.q2, B, A);
  const auto logits = matrix(space, in.logits, B, A), q = matrix(space, in.q, B, A);
  const auto tnext = matrix(space, in.tnext, B, A), onext = matrix(space, in.onext, B, A);
  const auto value = matrix(space, in.value, B, 1), value_next = matrix(space, in.value_next, B, 1);
  const auto actions = to_device(space, in.actions);
  const auto rewards = to_device(space, in.rewards), discounts = to_device(space, in.discounts);
  auto d_value = output(space, B, 1), d_q1 = output(space, B, A), d_q2 = output(space, B, A);
  auto d_logits = output(space, B, A), d_q = output(space, B, A);
  auto metrics = new_metrics(space);
  const auto scratch = scratch_for(space, B);

  foxrl::kernels::IqlValueLossArgs<Mem> value_args;
  value_args.q1_target = q1t;
  value_args.q2_target = q2t;
  value_args.value = value;
  value_args.actions = actions;
  value_args.d_value = d_value;
  value_args.metrics = metrics;
  value_args.scratch = scratch;
  foxrl::kernels::IqlQLossArgs<Mem> q_args;
  q_args.q1 = q1;
  q_args.q2 = q2;
  q_args.value_next = value_next;
  q_args.actions = actions;
  q_args.rewards = rewards;
  q_args.discounts = discounts;
  q_args.d_q1 = d_q1;
  q_args.d_q2 = d_q2;
  q_args.metrics = metrics;
  q_args.scratch = scratch;
  foxrl::kernels::IqlPolicyLossArgs<Mem> policy_args;
  policy_args.logits = logits;
  policy_args.q1_target = q1t;
  policy_args.q2_target = q2t;
  policy_args.value = value;
  policy_args.actions = actions;
  policy_args.d_logits = d_logits;
  policy_args.metrics = metrics;
  policy_args.scratch = scratch;
  foxrl::kernels::CqlLossArgs<Mem> cql_args;
  cql_args.q = q;
  cql_args.target_next = tnext;
  cql_args.online_next = onext;
  cql_args.actions = actions;
  cql_args.rewards = rewards;
  cql_args.discounts = discounts;
  cql_args.d_q = d_q;
  cql_args.metrics = metrics;
  cql_args.scratch = scratch;
  foxrl::kernels::BcLossArgs<Mem> bc_args;
  bc_args.logits = logits;
  bc_args.actions = actions;
  bc_args.d_logits = d_logits;
  bc_args.metrics = metrics;
  bc_args.scratch = scratch;

  const auto all = [&] {
    foxrl::kernels::iql_value_loss(space, value_args);
    foxrl::kernels::iql_q_loss(space, q_args);
    foxrl::kernels::iql_policy_loss(space, policy_args);
    foxrl::kernels::cql_loss(space, cql_args);
    foxrl::kernels::bc_loss(space, bc_args);
  };
  all();  // warm-up: Kokkos sizes its internal scratch on first use of a kernel
  context.fence("test::warm");
  const auto record = foxrl::audit([&] {
    all();
    context.fence("test::done");
  });
  const auto id = foxrl::tools_device_id(space);
  for (const auto& a : record.allocations) UNSCOPED_INFO("allocated: " << a.label << " in " << a.space);
  CHECK(record.allocations.empty());
  CHECK(record.launches_off(id).empty());
  CHECK(record.fences_off(id).empty());
  const auto violations = record.violations(id);
  INFO("first: " << (violations.empty() ? "" : violations.front()));
  CHECK(violations.empty());
  std::vector<std::string> names;
  for (const auto& l : record.launches) names.push_back(l.name);
  CHECK(names == std::vector<std::string>{"foxrl::kernels::iql_value_loss", "foxrl::kernels::iql_q_loss",
                                          "foxrl::kernels::iql_policy_loss", "foxrl::kernels::cql_loss",
                                          "foxrl::kernels::bc_loss"});
  // Every launch leaves the shared scratch's ticket at zero for the next.
  CHECK(host(space, scratch.tickets) == std::vector<double>{0.0});
}

TEST_CASE("offline loss kernels refuse mismatched shapes and settings", "[offline][errors]") {
  using Exec = Kokkos::DefaultHostExecutionSpace;
  using Mem = typename Exec::memory_space;
  using foxrl::LogicError;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  const int B = 8, A = 3;
  const auto in = random_inputs(B, A, 23);
  const auto qa = matrix(space, in.q1t, B, A), qb = matrix(space, in.q2t, B, A);
  const auto value = matrix(space, in.value, B, 1);
  const auto wrong_rows = output(space, B - 1, A), wrong_cols = output(space, B, A + 1), column = output(space, B, 1);
  const auto actions = to_device(space, in.actions);
  const auto rewards = to_device(space, in.rewards), discounts = to_device(space, in.discounts);
  const auto short_vector = DeviceVector<Exec>(Kokkos::view_alloc(space, "foxrl::test::short"), B - 1);
  auto grad = output(space, B, A), grad2 = output(space, B, A);
  auto metrics = new_metrics(space);
  const auto short_metrics =
      DeviceVector<Exec>(Kokkos::view_alloc(space, "foxrl::test::metrics"), OfflineMetrics::count - 1);
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();

  foxrl::kernels::IqlValueLossArgs<Mem> v;
  v.q1_target = qa;
  v.q2_target = qb;
  v.value = value;
  v.actions = actions;
  v.d_value = column;
  v.metrics = metrics;
  CHECK_NOTHROW(foxrl::kernels::iql_value_loss(space, v));
  const auto value_refuses = [&](auto change) {
    auto a = v;
    change(a);
    return [&space, a] { foxrl::kernels::iql_value_loss(space, a); };
  };
  CHECK_THROWS_AS(value_refuses([&](auto& a) { a.q1_target = wrong_rows; })(), LogicError);
  CHECK_THROWS_AS(value_refuses([&](auto& a) { a.q2_target = wrong_cols; })(), LogicError);
  CHECK_THROWS_AS(value_refuses([&](auto& a) { a.value = qa; })(), LogicError);
  CHECK_THROWS_AS(value_refuses([&](auto& a) { a.d_value = grad; })(), LogicError);
  CHECK_THROWS_AS(value_refuses([&](auto& a) { a.advantages = short_vector; })(), LogicError);
  CHECK_THROWS_AS(value_refuses([&](auto& a) { a.metrics = short_metrics; })(), LogicError);
  for (const float tau : {0.0f, 1.0f, -0.5f, nan})
    CHECK_THROWS_AS(value_refuses([&](auto& a) { a.expectile = tau; })(), LogicError);

  foxrl::kernels::IqlQLossArgs<Mem> q;
  q.q1 = qa;
  q.q2 = qb;
  q.value_next = value;
  q.actions = actions;
  q.rewards = rewards;
  q.discounts = discounts;
  q.d_q1 = grad;
  q.d_q2 = grad2;
  q.metrics = metrics;
  CHECK_NOTHROW(foxrl::kernels::iql_q_loss(space, q));
  const auto q_refuses = [&](auto change) {
    auto a = q;
    change(a);
    return [&space, a] { foxrl::kernels::iql_q_loss(space, a); };
  };
  CHECK_THROWS_AS(q_refuses([&](auto& a) { a.q1 = wrong_rows; })(), LogicError);
  CHECK_THROWS_AS(q_refuses([&](auto& a) { a.q2 = wrong_cols; })(), LogicError);
  CHECK_THROWS_AS(q_refuses([&](auto& a) { a.d_q1 = wrong_cols; })(), LogicError);
  CHECK_THROWS_AS(q_refuses([&](auto& a) { a.d_q2 = wrong_rows; })(), LogicError);
  CHECK_THROWS_AS(q_refuses([&](auto& a) { a.value_next = qa; })(), LogicError);
  CHECK_THROWS_AS(q_refuses([&](auto& a) { a.rewards = short_vector; })(), LogicError);
  CHECK_THROWS_AS(q_refuses([&](auto& a) { a.discounts = short_vector; })(), LogicError);
  CHECK_THROWS_AS(q_refuses([&](auto& a) { a.metrics = short_metrics; })(), LogicError);

  foxrl::kernels::IqlPolicyLossArgs<Mem> p;
  p.logits = qa;
  p.q1_target = qa;
  p.q2_target = qb;
  p.value = value;
  p.actions = actions;
  p.d_logits = grad;
  p.metrics = metrics;
  CHECK_NOTHROW(foxrl::kernels::iql_policy_loss(space, p));
  const auto policy_refuses = [&](auto change) {
    auto a = p;
    change(a);
    return [&space, a] { foxrl::kernels::iql_policy_loss(space, a); };
  };
  CHECK_THROWS_AS(policy_refuses([&](auto& a) { a.logits = wrong_rows; })(), LogicError);
  CHECK_THROWS_AS(policy_refuses([&](auto& a) { a.d_logits = wrong_cols; })(), LogicError);
  CHECK_THROWS_AS(policy_refuses([&](auto& a) { a.q1_target = wrong_cols; })(), LogicError);
  CHECK_THROWS_AS(policy_refuses([&](auto& a) { a.q2_target = wrong_rows; })(), LogicError);
  CHECK_THROWS_AS(policy_refuses([&](auto& a) { a.value = qa; })(), LogicError);
  CHECK_THROWS_AS(policy_refuses([&](auto& a) { a.weights = short_vector; })(), LogicError);
  CHECK_THROWS_AS(policy_refuses([&](auto& a) { a.metrics = short_metrics; })(), LogicError);
  for (const float beta : {-1.0f, inf, nan})
    CHECK_THROWS_AS(policy_refuses([&](auto& a) { a.beta = beta; })(), LogicError);
  for (const float w_max : {0.0f, -1.0f, inf, nan})
    CHECK_THROWS_AS(policy_refuses([&](auto& a) { a.max_weight = w_max; })(), LogicError);

  foxrl::kernels::CqlLossArgs<Mem> c;
  c.q = qa;
  c.target_next = qb;
  c.actions = actions;
  c.rewards = rewards;
  c.discounts = discounts;
  c.d_q = grad;
  c.metrics = metrics;
  CHECK_NOTHROW(foxrl::kernels::cql_loss(space, c));
  const auto cql_refuses = [&](auto change) {
    auto a = c;
    change(a);
    return [&space, a] { foxrl::kernels::cql_loss(space, a); };
  };
  CHECK_THROWS_AS(cql_refuses([&](auto& a) { a.q = wrong_rows; })(), LogicError);
  CHECK_THROWS_AS(cql_refuses([&](auto& a) { a.target_next = wrong_cols; })(), LogicError);
  CHECK_THROWS_AS(cql_refuses([&](auto& a) { a.online_next = wrong_cols; })(), LogicError);
  CHECK_THROWS_AS(cql_refuses([&](auto& a) { a.d_q = wrong_rows; })(), LogicError);
  CHECK_THROWS_AS(cql_refuses([&](auto& a) { a.rewards = short_vector; })(), LogicError);
  CHECK_THROWS_AS(cql_refuses([&](auto& a) { a.discounts = short_vector; })(), LogicError);
  CHECK_THROWS_AS(cql_refuses([&](auto& a) { a.td_errors = short_vector; })(), LogicError);
  CHECK_THROWS_AS(cql_refuses([&](auto& a) { a.metrics = short_metrics; })(), LogicError);
  for (const float alpha : {-0.1f, inf, nan})
    CHECK_THROWS_AS(cql_refuses([&](auto& a) { a.alpha = alpha; })(), LogicError);

  foxrl::kernels::BcLossArgs<Mem> bc;
  bc.logits = qa;
  bc.actions = actions;
  bc.d_logits = grad;
  bc.metrics = metrics;
  CHECK_NOTHROW(foxrl::kernels::bc_loss(space, bc));
  const auto bc_refuses = [&](auto change) {
    auto a = bc;
    change(a);
    return [&space, a] { foxrl::kernels::bc_loss(space, a); };
  };
  CHECK_THROWS_AS(bc_refuses([&](auto& a) { a.logits = wrong_rows; })(), LogicError);
  CHECK_THROWS_AS(bc_refuses([&](auto& a) { a.d_logits = wrong_cols; })(), LogicError);
  CHECK_THROWS_AS(bc_refuses([&](auto& a) { a.metrics = short_metrics; })(), LogicError);
  context.fence("test::done");
}
