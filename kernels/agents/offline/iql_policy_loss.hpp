#pragma once
// IQL's policy extraction for a softmax policy over discrete actions
// (advantage-weighted regression), in one launch: u = min(Q1_target(s, a),
// Q2_target(s, a)) - V(s), w = min(exp(beta u), w_max),
// L_pi = -mean_i w_i log softmax(logits_i)(a_i), and
// dL_pi/dlogits(i, j) = w_i (softmax(logits_i)(j) - 1(j = a_i)) / B.
// The weights are constants (no gradient into Q or V). log softmax is
// logits - logsumexp, stabilised by the row max.

#include "core/compat.hpp"
#include "kernels/agents/offline/row_loss_reduction.hpp"
#include "kernels/agents/offline/row_softmax.hpp"
#include "views/agents/offline/offline_metrics.hpp"
#include "views/nn/matrix.hpp"

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstdint>

namespace foxrl {
namespace kernels {

/// min(exp(x), max_weight) without forming exp of a large x: from
/// x >= log_max_weight on the result is max_weight exactly (also for
/// x = +inf), below it exp(x), clamped against exp's rounding just under
/// the threshold. NaN stays NaN, so a broken advantage is not hidden.
KOKKOS_INLINE_FUNCTION float clipped_advantage_weight(float x, float max_weight, float log_max_weight) {
  if (x >= log_max_weight) return max_weight;
  const float w = math::exp(x);
  return w > max_weight ? max_weight : w;
}

/// Inputs and outputs of iql_policy_loss. Policy and Q heads are [B, A],
/// the V head [B, 1].
/// The matrices are unmanaged: their owners must outlive the launch.
template <class MemorySpace>
struct IqlPolicyLossArgs {
  ConstMatrix<MemorySpace> logits;     ///< policy network at s
  ConstMatrix<MemorySpace> q1_target;  ///< target Q1 at s
  ConstMatrix<MemorySpace> q2_target;  ///< target Q2 at s
  ConstMatrix<MemorySpace> value;      ///< V at s
  Kokkos::View<const std::int32_t*, MemorySpace> actions;
  float beta = 3.0f;          ///< inverse temperature, >= 0
  float max_weight = 100.0f;  ///< w_max, > 0

  MutableMatrix<MemorySpace> d_logits;        ///< dL_pi/dlogits [B, A]
  Kokkos::View<float*, MemorySpace> weights;  ///< if allocated ([B]): w_i
  Kokkos::View<float*, MemorySpace> metrics;  ///< OfflineMetrics: policy_loss, mean_weight, clipped_weights
  ReduceScratch<MemorySpace> scratch;         ///< see launch_row_loss
};

/// Row operation of iql_policy_loss (see RowLossFunctor).
template <class MemorySpace>
struct IqlPolicyLossRow {
  static constexpr int sums = 3;  // loss, w, clipped rows
  IqlPolicyLossArgs<MemorySpace> args;
  float inv_b = 0.0f;
  float log_max_weight = 0.0f;
  int num_actions = 0;
  bool want_weights = false;

  KOKKOS_INLINE_FUNCTION void operator()(int i, float* acc) const {
    const int a = args.actions(i);
    const float u = nan_min(args.q1_target(i, a), args.q2_target(i, a)) - args.value(i, 0);
    const float w = clipped_advantage_weight(args.beta * u, args.max_weight, log_max_weight);
    const float max = row_max(args.logits, i, num_actions);
    const float log_sum = row_log_sum_exp_shifted(args.logits, i, num_actions, max);
    const float g = w * inv_b;
    for (int j = 0; j < num_actions; ++j) {
      const float p = math::exp((args.logits(i, j) - max) - log_sum);
      args.d_logits(i, j) = g * (j == a ? p - 1.0f : p);
    }
    if (want_weights) args.weights(i) = w;
    acc[0] += w * (log_sum - (args.logits(i, a) - max));
    acc[1] += w;
    acc[2] += w >= args.max_weight ? 1.0f : 0.0f;
  }

  KOKKOS_INLINE_FUNCTION void finish(const float* totals) const {
    args.metrics(OfflineMetrics::policy_loss) = totals[0] * inv_b;
    args.metrics(OfflineMetrics::mean_weight) = totals[1] * inv_b;
    args.metrics(OfflineMetrics::clipped_weights) = totals[2] * inv_b;
  }
};

/// Launches the IQL policy loss ("foxrl::kernels::iql_policy_loss") on
/// `space`; the batch size is actions.extent(0).
template <class ExecSpace>
void iql_policy_loss(const ExecSpace& space, const IqlPolicyLossArgs<typename ExecSpace::memory_space>& args) {
  const char* name = "foxrl::kernels::iql_policy_loss";
  const auto B = args.actions.extent(0);
  const auto A = args.logits.extent(1);
  detail::require_loss(A >= 1 && args.logits.extent(0) == B && args.d_logits.extent(0) == B &&
                           args.d_logits.extent(1) == A && args.q1_target.extent(0) == B &&
                           args.q1_target.extent(1) == A && args.q2_target.extent(0) == B &&
                           args.q2_target.extent(1) == A,
                       name, "logits, d_logits and the target Q heads must all be [B, A] with B = actions.extent(0)");
  detail::require_loss(args.value.extent(0) == B && args.value.extent(1) == 1, name, "value must be [B, 1]");
  detail::require_loss(args.weights.extent(0) == 0 || args.weights.extent(0) == B, name,
                       "weights must be empty or [B]");
  detail::require_loss(args.metrics.extent(0) >= OfflineMetrics::count, name,
                       "metrics needs OfflineMetrics::count slots");
  detail::require_loss(args.beta >= 0.0f && std::isfinite(args.beta), name, "beta must be finite and >= 0");
  detail::require_loss(args.max_weight > 0.0f && std::isfinite(args.max_weight), name,
                       "max_weight must be finite and > 0");
  IqlPolicyLossRow<typename ExecSpace::memory_space> row;
  row.args = args;
  row.inv_b = 1.0f / static_cast<float>(B);
  row.log_max_weight = static_cast<float>(std::log(static_cast<double>(args.max_weight)));
  row.num_actions = static_cast<int>(A);
  row.want_weights = args.weights.extent(0) > 0;
  launch_row_loss(space, name, row, static_cast<int>(B), args.scratch);
}

}  // namespace kernels
}  // namespace foxrl
