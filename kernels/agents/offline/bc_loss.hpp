#pragma once
// Behavior cloning for a softmax policy over discrete actions, in one
// launch: L = -mean_i log softmax(logits_i)(a_i) (cross-entropy with the
// dataset action) and dL/dlogits(i, j) = (softmax(logits_i)(j) - 1(j = a_i)) / B.
// log softmax is logits - logsumexp, stabilised by the row max.

#include "core/compat.hpp"
#include "kernels/agents/offline/row_loss_reduction.hpp"
#include "kernels/agents/offline/row_softmax.hpp"
#include "views/agents/offline/offline_metrics.hpp"
#include "views/nn/matrix.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace foxrl {
namespace kernels {

/// Inputs and outputs of bc_loss. Heads are [B, A].
/// The matrices are unmanaged: their owners must outlive the launch.
template <class MemorySpace>
struct BcLossArgs {
  ConstMatrix<MemorySpace> logits;  ///< policy network at s
  Kokkos::View<const std::int32_t*, MemorySpace> actions;

  MutableMatrix<MemorySpace> d_logits;        ///< dL/dlogits [B, A]
  Kokkos::View<float*, MemorySpace> metrics;  ///< OfflineMetrics: bc_loss, bc_accuracy
  ReduceScratch<MemorySpace> scratch;         ///< see launch_row_loss
};

/// Row operation of bc_loss (see RowLossFunctor).
template <class MemorySpace>
struct BcLossRow {
  static constexpr int sums = 2;  // loss, greedy action == dataset action
  BcLossArgs<MemorySpace> args;
  float inv_b = 0.0f;
  int num_actions = 0;

  KOKKOS_INLINE_FUNCTION void operator()(int i, float* acc) const {
    const int a = args.actions(i);
    const float max = row_max(args.logits, i, num_actions);
    const float log_sum = row_log_sum_exp_shifted(args.logits, i, num_actions, max);
    for (int j = 0; j < num_actions; ++j) {
      const float p = math::exp((args.logits(i, j) - max) - log_sum);
      args.d_logits(i, j) = (j == a ? p - 1.0f : p) * inv_b;
    }
    acc[0] += log_sum - (args.logits(i, a) - max);
    acc[1] += row_argmax(args.logits, i, num_actions) == a ? 1.0f : 0.0f;
  }

  KOKKOS_INLINE_FUNCTION void finish(const float* totals) const {
    args.metrics(OfflineMetrics::bc_loss) = totals[0] * inv_b;
    args.metrics(OfflineMetrics::bc_accuracy) = totals[1] * inv_b;
  }
};

/// Launches the behavior cloning loss ("foxrl::kernels::bc_loss") on
/// `space`; the batch size is actions.extent(0).
template <class ExecSpace>
void bc_loss(const ExecSpace& space, const BcLossArgs<typename ExecSpace::memory_space>& args) {
  const char* name = "foxrl::kernels::bc_loss";
  const auto B = args.actions.extent(0);
  const auto A = args.logits.extent(1);
  detail::require_loss(
      A >= 1 && args.logits.extent(0) == B && args.d_logits.extent(0) == B && args.d_logits.extent(1) == A, name,
      "logits and d_logits must be [B, A] with B = actions.extent(0)");
  detail::require_loss(args.metrics.extent(0) >= OfflineMetrics::count, name,
                       "metrics needs OfflineMetrics::count slots");
  BcLossRow<typename ExecSpace::memory_space> row;
  row.args = args;
  row.inv_b = 1.0f / static_cast<float>(B);
  row.num_actions = static_cast<int>(A);
  launch_row_loss(space, name, row, static_cast<int>(B), args.scratch);
}

}  // namespace kernels
}  // namespace foxrl
