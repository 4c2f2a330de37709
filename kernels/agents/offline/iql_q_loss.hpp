#pragma once
// IQL's twin Q loss (Kostrikov, Nair, Levine 2021) in one launch:
// y = r + discount V(s') with V the value network at s' (a constant here:
// no gradient into V), and for each twin k in {1, 2}
// L_Qk = mean_i (Qk(s_i, a_i) - y_i)^2. As in the paper's L_Q (and the
// DQN loss's mse kind), without a factor 1/2: dL_Qk/dQk(s_i, a_i) =
// 2 (Qk(s_i, a_i) - y_i) / B, zero in the other columns. Each twin is its
// own network, so each gets the gradient of its own loss.

#include "kernels/agents/offline/row_loss_reduction.hpp"
#include "views/agents/offline/offline_metrics.hpp"
#include "views/nn/matrix.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace foxrl {
namespace kernels {

/// Inputs and outputs of iql_q_loss. Q heads are [B, A], V heads [B, 1].
/// The matrices are unmanaged: their owners must outlive the launch.
template <class MemorySpace>
struct IqlQLossArgs {
  ConstMatrix<MemorySpace> q1;          ///< online Q1 at s
  ConstMatrix<MemorySpace> q2;          ///< online Q2 at s
  ConstMatrix<MemorySpace> value_next;  ///< V at s'
  Kokkos::View<const std::int32_t*, MemorySpace> actions;
  Kokkos::View<const float*, MemorySpace> rewards;
  Kokkos::View<const float*, MemorySpace> discounts;  ///< gamma^n (1 - terminated)

  MutableMatrix<MemorySpace> d_q1;            ///< dL_Q1/dQ1 [B, A]
  MutableMatrix<MemorySpace> d_q2;            ///< dL_Q2/dQ2 [B, A]
  Kokkos::View<float*, MemorySpace> metrics;  ///< OfflineMetrics: q1_loss, q2_loss, mean_q, mean_target
  ReduceScratch<MemorySpace> scratch;         ///< see launch_row_loss
};

/// Row operation of iql_q_loss (see RowLossFunctor).
template <class MemorySpace>
struct IqlQLossRow {
  static constexpr int sums = 4;  // loss Q1, loss Q2, (Q1 + Q2) / 2, y
  IqlQLossArgs<MemorySpace> args;
  float inv_b = 0.0f;
  int num_actions = 0;

  KOKKOS_INLINE_FUNCTION void operator()(int i, float* acc) const {
    const int a = args.actions(i);
    const float y = args.rewards(i) + args.discounts(i) * args.value_next(i, 0);
    const float e1 = args.q1(i, a) - y;
    const float e2 = args.q2(i, a) - y;
    for (int j = 0; j < num_actions; ++j) {
      args.d_q1(i, j) = j == a ? 2.0f * e1 * inv_b : 0.0f;
      args.d_q2(i, j) = j == a ? 2.0f * e2 * inv_b : 0.0f;
    }
    acc[0] += e1 * e1;
    acc[1] += e2 * e2;
    acc[2] += 0.5f * (args.q1(i, a) + args.q2(i, a));
    acc[3] += y;
  }

  KOKKOS_INLINE_FUNCTION void finish(const float* totals) const {
    args.metrics(OfflineMetrics::q1_loss) = totals[0] * inv_b;
    args.metrics(OfflineMetrics::q2_loss) = totals[1] * inv_b;
    args.metrics(OfflineMetrics::mean_q) = totals[2] * inv_b;
    args.metrics(OfflineMetrics::mean_target) = totals[3] * inv_b;
  }
};

/// Launches the IQL twin Q loss ("foxrl::kernels::iql_q_loss") on `space`;
/// the batch size is actions.extent(0).
template <class ExecSpace>
void iql_q_loss(const ExecSpace& space, const IqlQLossArgs<typename ExecSpace::memory_space>& args) {
  const char* name = "foxrl::kernels::iql_q_loss";
  const auto B = args.actions.extent(0);
  const auto A = args.q1.extent(1);
  detail::require_loss(A >= 1 && args.q1.extent(0) == B && args.q2.extent(0) == B && args.q2.extent(1) == A &&
                           args.d_q1.extent(0) == B && args.d_q1.extent(1) == A && args.d_q2.extent(0) == B &&
                           args.d_q2.extent(1) == A,
                       name, "q1, q2, d_q1 and d_q2 must all be [B, A] with B = actions.extent(0)");
  detail::require_loss(args.value_next.extent(0) == B && args.value_next.extent(1) == 1, name,
                       "value_next must be [B, 1]");
  detail::require_loss(args.rewards.extent(0) == B && args.discounts.extent(0) == B, name,
                       "rewards and discounts must be [B]");
  detail::require_loss(args.metrics.extent(0) >= OfflineMetrics::count, name,
                       "metrics needs OfflineMetrics::count slots");
  IqlQLossRow<typename ExecSpace::memory_space> row;
  row.args = args;
  row.inv_b = 1.0f / static_cast<float>(B);
  row.num_actions = static_cast<int>(A);
  launch_row_loss(space, name, row, static_cast<int>(B), args.scratch);
}

}  // namespace kernels
}  // namespace foxrl
