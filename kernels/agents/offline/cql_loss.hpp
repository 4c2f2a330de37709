#pragma once
// Discrete CQL (Kumar, Zhou, Tucker, Levine 2020, CQL(H)) on a Q network,
// in one launch:
//   L = alpha * mean_i (logsumexp_j Q(s_i, j) - Q(s_i, a_i))
//       + mean_i (Q(s_i, a_i) - y_i)^2,
// y = r + discount * Q_target(s', a*). a* is chosen by the online network
// at s' when its head is given (double DQN, as d3rlpy's DiscreteCQL, which
// builds on DoubleDQN: decoupling selection from evaluation removes the max
// operator's upward bias, which the penalty would otherwise have to fight)
// and as argmax of Q_target(s', .) otherwise (the paper's plain DQN target,
// one forward less). The TD term is the DQN loss's mse kind, without a
// factor 1/2. Gradient with respect to Q(s, .):
//   alpha (softmax(Q(s_i, .))(j) - 1(j = a_i)) / B + 1(j = a_i) 2 (Q(s_i, a_i) - y_i) / B.

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

/// Inputs and outputs of cql_loss. All heads are [B, A].
/// The matrices are unmanaged: their owners must outlive the launch.
template <class MemorySpace>
struct CqlLossArgs {
  ConstMatrix<MemorySpace> q;            ///< online Q at s
  ConstMatrix<MemorySpace> target_next;  ///< target Q at s' (evaluates a*)
  ConstMatrix<MemorySpace> online_next;  ///< online Q at s' (selects a*); empty: a* = argmax target_next
  Kokkos::View<const std::int32_t*, MemorySpace> actions;
  Kokkos::View<const float*, MemorySpace> rewards;
  Kokkos::View<const float*, MemorySpace> discounts;  ///< gamma^n (1 - terminated)
  float alpha = 1.0f;                                 ///< weight of the conservative penalty, >= 0

  MutableMatrix<MemorySpace> d_q;               ///< dL/dQ(s, .) [B, A]
  Kokkos::View<float*, MemorySpace> td_errors;  ///< if allocated ([B]): |Q(s, a) - y|
  Kokkos::View<float*, MemorySpace> metrics;    ///< OfflineMetrics: cql_loss, cql_penalty, cql_td_loss, cql_mean_q
  ReduceScratch<MemorySpace> scratch;           ///< see launch_row_loss
};

/// Row operation of cql_loss (see RowLossFunctor).
template <class MemorySpace>
struct CqlLossRow {
  static constexpr int sums = 3;  // penalty, td^2, Q(s, a)
  CqlLossArgs<MemorySpace> args;
  float inv_b = 0.0f;
  int num_actions = 0;
  bool double_q = false;
  bool want_td = false;

  KOKKOS_INLINE_FUNCTION void operator()(int i, float* acc) const {
    const int a = args.actions(i);
    const int a_star =
        double_q ? row_argmax(args.online_next, i, num_actions) : row_argmax(args.target_next, i, num_actions);
    const float y = args.rewards(i) + args.discounts(i) * args.target_next(i, a_star);
    const float q_a = args.q(i, a);
    const float td = q_a - y;
    const float max = row_max(args.q, i, num_actions);
    const float log_sum = row_log_sum_exp_shifted(args.q, i, num_actions, max);
    const float ga = args.alpha * inv_b;
    for (int j = 0; j < num_actions; ++j) {
      const float p = math::exp((args.q(i, j) - max) - log_sum);
      args.d_q(i, j) = j == a ? ga * (p - 1.0f) + 2.0f * td * inv_b : ga * p;
    }
    if (want_td) args.td_errors(i) = math::fabs(td);
    acc[0] += log_sum - (q_a - max);
    acc[1] += td * td;
    acc[2] += q_a;
  }

  KOKKOS_INLINE_FUNCTION void finish(const float* totals) const {
    const float penalty = totals[0] * inv_b;
    const float td_loss = totals[1] * inv_b;
    args.metrics(OfflineMetrics::cql_loss) = args.alpha * penalty + td_loss;
    args.metrics(OfflineMetrics::cql_penalty) = penalty;
    args.metrics(OfflineMetrics::cql_td_loss) = td_loss;
    args.metrics(OfflineMetrics::cql_mean_q) = totals[2] * inv_b;
  }
};

/// Launches the discrete CQL loss ("foxrl::kernels::cql_loss") on `space`;
/// the batch size is actions.extent(0).
template <class ExecSpace>
void cql_loss(const ExecSpace& space, const CqlLossArgs<typename ExecSpace::memory_space>& args) {
  const char* name = "foxrl::kernels::cql_loss";
  const auto B = args.actions.extent(0);
  const auto A = args.q.extent(1);
  const bool double_q = args.online_next.extent(0) > 0;
  detail::require_loss(A >= 1 && args.q.extent(0) == B && args.target_next.extent(0) == B &&
                           args.target_next.extent(1) == A && args.d_q.extent(0) == B && args.d_q.extent(1) == A,
                       name, "q, target_next and d_q must all be [B, A] with B = actions.extent(0)");
  detail::require_loss(!double_q || (args.online_next.extent(0) == B && args.online_next.extent(1) == A), name,
                       "online_next must be empty or [B, A]");
  detail::require_loss(args.rewards.extent(0) == B && args.discounts.extent(0) == B, name,
                       "rewards and discounts must be [B]");
  detail::require_loss(args.td_errors.extent(0) == 0 || args.td_errors.extent(0) == B, name,
                       "td_errors must be empty or [B]");
  detail::require_loss(args.metrics.extent(0) >= OfflineMetrics::count, name,
                       "metrics needs OfflineMetrics::count slots");
  detail::require_loss(args.alpha >= 0.0f && std::isfinite(args.alpha), name, "alpha must be finite and >= 0");
  CqlLossRow<typename ExecSpace::memory_space> row;
  row.args = args;
  row.inv_b = 1.0f / static_cast<float>(B);
  row.num_actions = static_cast<int>(A);
  row.double_q = double_q;
  row.want_td = args.td_errors.extent(0) > 0;
  launch_row_loss(space, name, row, static_cast<int>(B), args.scratch);
}

}  // namespace kernels
}  // namespace foxrl
