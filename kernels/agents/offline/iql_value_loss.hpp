#pragma once
// IQL's value loss (Kostrikov, Nair, Levine 2021) for discrete actions, in
// one launch: q_t = min(Q1_target(s, a), Q2_target(s, a)) at the dataset
// action, u = q_t - V(s), L_V = mean_i |tau - 1(u_i < 0)| u_i^2 (the
// paper's expectile loss, without a factor 1/2), and
// dL_V/dV(s_i) = -2 |tau - 1(u_i < 0)| u_i / B, so Mlp::backward of the
// value network turns it into parameter gradients. No gradient flows into
// the target Qs.

#include "kernels/agents/offline/row_loss_reduction.hpp"
#include "kernels/agents/offline/row_softmax.hpp"
#include "views/agents/offline/offline_metrics.hpp"
#include "views/nn/matrix.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace foxrl {
namespace kernels {

/// Inputs and outputs of iql_value_loss. Q heads are [B, A], V heads [B, 1].
/// The matrices are unmanaged: their owners must outlive the launch.
template <class MemorySpace>
struct IqlValueLossArgs {
  ConstMatrix<MemorySpace> q1_target;  ///< target Q1 at s
  ConstMatrix<MemorySpace> q2_target;  ///< target Q2 at s
  ConstMatrix<MemorySpace> value;      ///< V at s
  Kokkos::View<const std::int32_t*, MemorySpace> actions;
  float expectile = 0.7f;  ///< tau, in (0, 1)

  MutableMatrix<MemorySpace> d_value;            ///< dL_V/dV [B, 1]
  Kokkos::View<float*, MemorySpace> advantages;  ///< if allocated ([B]): u_i
  Kokkos::View<float*, MemorySpace> metrics;     ///< OfflineMetrics: value_loss, mean_value, mean_advantage
  ReduceScratch<MemorySpace> scratch;            ///< see launch_row_loss
};

/// Row operation of iql_value_loss (see RowLossFunctor).
template <class MemorySpace>
struct IqlValueLossRow {
  static constexpr int sums = 3;  // loss, V, u
  IqlValueLossArgs<MemorySpace> args;
  float inv_b = 0.0f;
  bool want_advantages = false;

  KOKKOS_INLINE_FUNCTION void operator()(int i, float* acc) const {
    const int a = args.actions(i);
    const float v = args.value(i, 0);
    const float u = nan_min(args.q1_target(i, a), args.q2_target(i, a)) - v;
    const float weight = u < 0.0f ? 1.0f - args.expectile : args.expectile;
    args.d_value(i, 0) = -2.0f * weight * u * inv_b;
    if (want_advantages) args.advantages(i) = u;
    acc[0] += weight * u * u;
    acc[1] += v;
    acc[2] += u;
  }

  KOKKOS_INLINE_FUNCTION void finish(const float* totals) const {
    args.metrics(OfflineMetrics::value_loss) = totals[0] * inv_b;
    args.metrics(OfflineMetrics::mean_value) = totals[1] * inv_b;
    args.metrics(OfflineMetrics::mean_advantage) = totals[2] * inv_b;
  }
};

/// Launches the IQL value loss ("foxrl::kernels::iql_value_loss") on
/// `space`; the batch size is actions.extent(0).
template <class ExecSpace>
void iql_value_loss(const ExecSpace& space, const IqlValueLossArgs<typename ExecSpace::memory_space>& args) {
  const char* name = "foxrl::kernels::iql_value_loss";
  const auto B = args.actions.extent(0);
  const auto A = args.q1_target.extent(1);
  detail::require_loss(
      A >= 1 && args.q1_target.extent(0) == B && args.q2_target.extent(0) == B && args.q2_target.extent(1) == A, name,
      "target Q heads must both be [B, A] with B = actions.extent(0)");
  detail::require_loss(args.value.extent(0) == B && args.value.extent(1) == 1 && args.d_value.extent(0) == B &&
                           args.d_value.extent(1) == 1,
                       name, "value and d_value must be [B, 1]");
  detail::require_loss(args.advantages.extent(0) == 0 || args.advantages.extent(0) == B, name,
                       "advantages must be empty or [B]");
  detail::require_loss(args.metrics.extent(0) >= OfflineMetrics::count, name,
                       "metrics needs OfflineMetrics::count slots");
  detail::require_loss(args.expectile > 0.0f && args.expectile < 1.0f, name, "expectile must be in (0, 1)");
  IqlValueLossRow<typename ExecSpace::memory_space> row;
  row.args = args;
  row.inv_b = 1.0f / static_cast<float>(B);
  row.want_advantages = args.advantages.extent(0) > 0;
  launch_row_loss(space, name, row, static_cast<int>(B), args.scratch);
}

}  // namespace kernels
}  // namespace foxrl
