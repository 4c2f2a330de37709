#pragma once
// The DQN loss in one launch: dueling combination of the head outputs,
// double-DQN n-step target, TD error, importance-weighted Huber (or MSE)
// loss, its gradient with respect to the head outputs, the per-sample
// |TD| for the replay priorities and the batch means for the metrics.
// Plus the inference-side dueling combination (Q-values and greedy action).

#include "core/compat.hpp"
#include "core/error.hpp"
#include "kernels/core/reduce_scratch.hpp"
#include "kernels/core/team_tree_sum.hpp"
#include "kernels/nn/dueling.hpp"
#include "views/agents/dqn/learner_metrics.hpp"

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <utility>

namespace foxrl {

/// Per-sample loss of the TD error.
enum class LossKind {
  huber,  ///< smooth L1 with delta 1 (PyTorch's smooth_l1_loss / huber_loss)
  mse,    ///< td^2 (PyTorch's mse_loss)
};

namespace kernels {

/// One row's part of the loss: the TD error of the double-DQN n-step target
/// and the per-sample loss and its derivative in the TD error.
struct DqnRowLoss {
  float q = 0.0f;       ///< Q_online(s, a)
  float abs_td = 0.0f;  ///< |Q(s, a) - y|
  float loss = 0.0f;    ///< Huber (delta 1) or squared TD error, unweighted
  float dloss = 0.0f;   ///< d loss / d td
};

/// Row `i` of the three head outputs ([rows, 1 + A] each, any type with
/// operator()(row, col)): a* = argmax_a Q_online(s', a), y = reward +
/// discount Q_target(s', a*), td = Q_online(s, action) - y. The loss
/// kernel and the fused small-network update (kernels/cuda/) share it, so
/// both form the same target and loss from the same head outputs.
template <class HeadS, class HeadNext, class HeadTarget>
KOKKOS_INLINE_FUNCTION DqnRowLoss dqn_row_loss(const HeadS& online_s, const HeadNext& online_next,
                                               const HeadTarget& target_next, int i, int action, int num_actions,
                                               float reward, float discount, LossKind kind) {
  DqnRowLoss r;
  r.q = dueling_q(online_s(i, 0), online_s(i, 1 + action), advantage_mean(online_s, i, num_actions));
  const int a_star = greedy_action(online_next, i, num_actions, advantage_mean(online_next, i, num_actions));
  const float q_next =
      dueling_q(target_next(i, 0), target_next(i, 1 + a_star), advantage_mean(target_next, i, num_actions));
  const float y = reward + discount * q_next;
  const float td = r.q - y;
  r.abs_td = math::fabs(td);
  if (kind == LossKind::huber) {
    r.loss = r.abs_td <= 1.0f ? 0.5f * td * td : r.abs_td - 0.5f;
    r.dloss = td > 1.0f ? 1.0f : (td < -1.0f ? -1.0f : td);
  } else {
    r.loss = td * td;
    r.dloss = 2.0f * td;
  }
  return r;
}

/// The loss kernel's inputs and outputs. All head Views are [B, 1 + A].
template <class MemorySpace>
struct DqnLossArgs {
  using head_view =
      Kokkos::View<const float**, Kokkos::LayoutRight, MemorySpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  head_view online_s;     ///< online network at s
  head_view online_next;  ///< online network at s' (selects a*)
  head_view target_next;  ///< target network at s' (evaluates a*)
  Kokkos::View<const std::int32_t*, MemorySpace> actions;
  Kokkos::View<const float*, MemorySpace> rewards;
  Kokkos::View<const float*, MemorySpace> discounts;  ///< gamma^n (1 - terminated)
  Kokkos::View<const float*, MemorySpace> is_weights;
  LossKind loss = LossKind::huber;

  Kokkos::View<float**, Kokkos::LayoutRight, MemorySpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>
      d_head;                                   ///< dL/dhead [B, 1 + A]
  Kokkos::View<float*, MemorySpace> td_errors;  ///< |Q(s, a) - y| [B]
  Kokkos::View<float*, MemorySpace> metrics;    ///< LearnerMetrics slots
  /// Advanced by one here (if allocated), so the optimizer that follows sees
  /// the step it takes without a launch of its own.
  Kokkos::View<std::int64_t, MemorySpace> adam_step;
  /// If allocated ([1 + A]): column sums of d_head, i.e. the head's bias
  /// gradient, formed with the means (saves a launch).
  Kokkos::View<float*, Kokkos::LayoutRight, MemorySpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> head_bias_grad;
  /// If it holds dqn_loss_scratch(...): the batch is split over several
  /// teams whose partial sums the last team adds (deterministic); otherwise
  /// one team walks the batch.
  ReduceScratch<MemorySpace> scratch;
};

/// Row i of dL/dhead for the row's loss gradient `g` (w dloss / B) and its
/// action a: g on the value output, g (1[j = a] - 1/A) on advantage j (the
/// dueling head's mean subtraction). `on_column(c, value)` sees each
/// value stored (the loss kernel adds them into the head's bias gradient).
template <class DHead, class OnColumn>
KOKKOS_INLINE_FUNCTION void write_head_gradient(const DHead& d_head, int i, int a, int num_actions, float g,
                                                float inv_a, const OnColumn& on_column) {
  d_head(i, 0) = g;
  on_column(0, g);
  for (int j = 0; j < num_actions; ++j) {
    const float gj = g * ((j == a ? 1.0f : 0.0f) - inv_a);
    d_head(i, 1 + j) = gj;
    on_column(1 + j, gj);
  }
}

/// Sums the loss kernel forms over the batch, in this order: the weighted
/// loss, Q(s, a), |td|, then (optionally) the columns of dL/dhead.
inline constexpr int dqn_loss_base_sums = 3;

/// Stores sum `s` of the batch (see dqn_loss_base_sums): the three means
/// into the metrics, a column sum of dL/dhead as the head's bias gradient.
template <class MemorySpace>
KOKKOS_INLINE_FUNCTION void store_loss_sum(const DqnLossArgs<MemorySpace>& args, int s, float total, float inv_b) {
  if (s == 0)
    args.metrics(LearnerMetrics::loss) = total * inv_b;
  else if (s == 1)
    args.metrics(LearnerMetrics::mean_q) = total * inv_b;
  else if (s == 2)
    args.metrics(LearnerMetrics::mean_abs_td) = total * inv_b;
  else
    args.head_bias_grad(s - dqn_loss_base_sums) = total;
}

/// Rows per team of the loss kernel: GPUs run one row per thread in teams
/// of 32 (a batch of 1024 spreads over 32 SMs, with a 5-step team tree);
/// host backends one thread per team over 64 rows.
template <class ExecSpace,
          bool host = Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename ExecSpace::memory_space>::accessible>
struct DqnLossTiling {
  static constexpr int team_size = 1, rows_per_team = 64;
};
template <class ExecSpace>
struct DqnLossTiling<ExecSpace, false> {
  static constexpr int team_size = 32, rows_per_team = 32;
};

/// Each team walks its rows; partial sums meet in a scratch tree, then (with
/// several teams) in team order in the last team, so the means are
/// deterministic and land in `metrics` without a host read-back.
template <class ExecSpace>
struct DqnLossFunctor {
  using memory_space = typename ExecSpace::memory_space;
  using policy_type = Kokkos::TeamPolicy<ExecSpace>;
  using member_type = typename policy_type::member_type;
  static constexpr int base_sums = dqn_loss_base_sums;

  DqnLossArgs<memory_space> args;
  int batch = 0;
  int num_actions = 0;
  int sums = base_sums;
  int rows_per_team = 0;

  KOKKOS_INLINE_FUNCTION void operator()(const member_type& team) const {
    const int rank = team.team_rank();
    const int size = team.team_size();
    const int teams = team.league_size();
    float* partial = static_cast<float*>(team.team_shmem().get_shmem(sizeof(float) * sums * size));
    for (int s = 0; s < sums; ++s) partial[s * size + rank] = 0.0f;
    const bool head_bias = sums > base_sums;
    const float inv_b = 1.0f / static_cast<float>(batch);
    const float inv_a = 1.0f / static_cast<float>(num_actions);
    const int begin = team.league_rank() * rows_per_team;
    const int end = begin + rows_per_team < batch ? begin + rows_per_team : batch;
    float loss_sum = 0.0f, q_sum = 0.0f, td_sum = 0.0f;
    for (int i = begin + rank; i < end; i += size) {
      const int a = args.actions(i);
      const DqnRowLoss r = dqn_row_loss(args.online_s, args.online_next, args.target_next, i, a, num_actions,
                                        args.rewards(i), args.discounts(i), args.loss);
      const float q = r.q, abs_td = r.abs_td, l = r.loss, dl = r.dloss;
      const float w = args.is_weights(i);
      const float g = w * dl * inv_b;
      write_head_gradient(args.d_head, i, a, num_actions, g, inv_a, [&](const int c, const float v) {
        if (head_bias) partial[(base_sums + c) * size + rank] += v;
      });
      args.td_errors(i) = abs_td;
      loss_sum += w * l;
      q_sum += q;
      td_sum += abs_td;
    }
    partial[rank] = loss_sum;
    partial[size + rank] = q_sum;
    partial[2 * size + rank] = td_sum;
    team_tree_sum(team, partial, sums, size);
    if (teams == 1) {
      if (rank == 0) finish([&](int s) { return partial[s * size]; });
      return;
    }
    float* global = args.scratch.partials.data();
    if (rank == 0)
      for (int s = 0; s < sums; ++s) global[std::size_t(team.league_rank()) * sums + s] = partial[s * size];
    if (!arrive_last(team, args.scratch.tickets.data(), static_cast<unsigned>(teams))) return;
    // One column of team partials per thread (their latencies overlap
    // instead of queueing on one thread), each summed in team order as before.
    for (int s = rank; s < sums; s += size)
      partial[s * size] = sum_partials(global, teams, std::size_t(sums), std::size_t(s));
    team.team_barrier();
    if (rank == 0) finish([&](int s) { return partial[s * size]; });
  }

  template <class Sum>
  KOKKOS_INLINE_FUNCTION void finish(const Sum& sum) const {
    const float inv_b = 1.0f / static_cast<float>(batch);
    for (int s = 0; s < sums; ++s) store_loss_sum(args, s, sum(s), inv_b);
    if (args.adam_step.data() != nullptr) args.adam_step() += 1;
  }
};

/// Floats and tickets of ReduceScratch that dqn_loss needs to spread
/// `batch` rows of a head with `head_outputs` columns over several teams.
template <class ExecSpace>
ScratchNeed dqn_loss_scratch(int batch, int head_outputs) {
  const int teams = (batch + DqnLossTiling<ExecSpace>::rows_per_team - 1) / DqnLossTiling<ExecSpace>::rows_per_team;
  return {std::size_t(teams) * std::size_t(DqnLossFunctor<ExecSpace>::base_sums + head_outputs), 1};
}

/// Launches the loss kernel on `space` (see DqnLossArgs::scratch).
template <class ExecSpace>
void dqn_loss(const ExecSpace& space, const DqnLossArgs<typename ExecSpace::memory_space>& args) {
  using F = DqnLossFunctor<ExecSpace>;
  using T = DqnLossTiling<ExecSpace>;
  F f;
  f.args = args;
  f.batch = static_cast<int>(args.actions.extent(0));
  f.num_actions = static_cast<int>(args.online_s.extent(1)) - 1;
  if (f.batch == 0) return;
  if (args.head_bias_grad.data() != nullptr) {
    if (args.head_bias_grad.extent(0) != std::size_t(f.num_actions) + 1)
      throw LogicError("foxrl::kernels::dqn_loss: head_bias_grad must have 1 + num_actions entries");
    f.sums = F::base_sums + f.num_actions + 1;
  }
  const auto need = dqn_loss_scratch<ExecSpace>(f.batch, f.num_actions + 1);
  const int teams = (f.batch + T::rows_per_team - 1) / T::rows_per_team;
  const bool split = teams > 1 && args.scratch.holds(need);
  f.rows_per_team = split ? T::rows_per_team : f.batch;
  typename F::policy_type policy(space, split ? teams : 1, split ? T::team_size : (T::team_size > 1 ? 512 : 1));
  policy.set_scratch_size(0, Kokkos::PerTeam(sizeof(float) * f.sums * policy.team_size()));
  Kokkos::parallel_for("foxrl::kernels::dqn_loss", compat::light(policy), f);
}

/// Row i of dueling_q_values: its Q-values and greedy action from the head.
/// A named functor, not a KOKKOS_LAMBDA (see RecordStepInOneTeam in
/// kernels/collect/record_step.hpp).
template <class Head, class QView, class ActionView>
struct DuelingQValuesKernel {
  Head head;
  QView q_out;
  ActionView actions_out;
  int num_actions;
  bool want_q;
  bool want_a;
  KOKKOS_INLINE_FUNCTION void operator()(int i) const {
    const float mean_a = advantage_mean(head, i, num_actions);
    if (want_q)
      for (int j = 0; j < num_actions; ++j) q_out(i, j) = dueling_q(head(i, 0), head(i, 1 + j), mean_a);
    if (want_a) actions_out(i) = greedy_action(head, i, num_actions, mean_a);
  }
};

/// Q-values [R, A] and greedy actions [R] from a dueling head output
/// [R, 1 + A]; either output may be an empty View.
template <class ExecSpace, class Head, class QView, class ActionView>
void dueling_q_values(const ExecSpace& space, const Head& head, const QView& q_out, const ActionView& actions_out) {
  const int rows = static_cast<int>(head.extent(0));
  const int num_actions = static_cast<int>(head.extent(1)) - 1;
  const bool want_q = q_out.extent(0) > 0;
  const bool want_a = actions_out.extent(0) > 0;
  Kokkos::parallel_for(
      "foxrl::kernels::dueling_q_values", Kokkos::RangePolicy<ExecSpace>(space, 0, rows),
      DuelingQValuesKernel<Head, QView, ActionView>{head, q_out, actions_out, num_actions, want_q, want_a});
}

}  // namespace kernels
}  // namespace foxrl
