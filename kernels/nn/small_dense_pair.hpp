#pragma once
// Both networks' head kernels of a learner's update in one launch: the
// online network's head over its stacked rows [s; s'] (2 B rows) and the
// target network's over s' (B rows), each fused with its last hidden
// layer's bias + ReLU (bias_relu_small_dense_forward). Two launches one
// after the other on the update's chain, each filling part of the GPU,
// become one whose teams take both.
//
// Each row is formed exactly as the single head kernel forms it
// (SmallDenseRows::row: the same lanes, chunks and order of additions),
// so the outputs keep their bits. Team t takes the row indices
// [t k, t k + k) of all three blocks (online s, online s', target s') and
// runs the target rows' after-row work once the team's rows are stored:
// after_target_row(i) may read the online network's rows i and B + i as
// well as the target's row i (e.g. the DQN loss of the row,
// kernels/agents/dqn/loss_in_head.hpp).

#include "core/compat.hpp"
#include "core/error.hpp"
#include "kernels/nn/small_dense.hpp"
#include "views/nn/matrix.hpp"

#include <Kokkos_Core.hpp>

#include <string>
#include <type_traits>

namespace foxrl {
namespace kernels {

/// One network's head of the pair: H = max(Z + hidden_bias, 0) stored in
/// place of Z in its first `store_rows` rows, Y = H W^T + b.
template <class MemorySpace>
struct BiasReluHead {
  MutableMatrix<MemorySpace> z;
  ConstVector<MemorySpace> hidden_bias;
  ConstMatrix<MemorySpace> w;
  ConstVector<MemorySpace> bias;
  MutableMatrix<MemorySpace> y;
  int store_rows = -1;
};

/// The pair's teams (see the file comment). Slot j of a team (j < 3 k)
/// is block j / k (online s, online s', target s') at row index
/// t k + j % k; a team's threads take its slots in turn, so a GPU team of
/// 3 k warps gives each warp one row and a host team of one thread forms
/// all three rows of its index in order.
template <class ExecSpace, int NOUT, class AfterRow>
struct SmallDensePairRows {
  using Rows = SmallDenseRows<ExecSpace, NOUT>;
  using policy_type = typename Rows::policy_type;
  using member_type = typename Rows::member_type;
  Rows online;  ///< [2 B] rows
  Rows target;  ///< [B] rows
  int per_team = 1;
  AfterRow after_target_row = {};

  KOKKOS_INLINE_FUNCTION void operator()(const member_type& team) const {
    const int batch = target.a.rows;
    const int first = team.league_rank() * per_team;
    const int slots = 3 * per_team;
    for (int j = team.team_rank(); j < slots; j += team.team_size()) {
      const int block = j / per_team, i = first + j % per_team;
      if (i >= batch) continue;
      if (block < 2)
        online.row(team, block * batch + i);
      else
        target.row(team, i);
    }
    if constexpr (!std::is_same_v<AfterRow, NothingAfterRow>) {
      team.team_barrier();  // the team's online rows, stored, before the target rows' work reads them
      for (int j = 2 * per_team + team.team_rank(); j < slots; j += team.team_size()) {
        const int i = first + j % per_team;
        if (i < batch) Kokkos::single(Kokkos::PerThread(team), [&]() { after_target_row(i); });
      }
    }
    if constexpr (has_after_rows<AfterRow, member_type>::value) after_target_row.after_rows(team);
  }
};

namespace detail {
template <class ExecSpace, int NOUT, class AfterRow>
void launch_small_dense_pair(const ExecSpace& space, const SmallDenseArgs& online, const SmallDenseArgs& target,
                             const AfterRow& after_target_row) {
  constexpr bool host = Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename ExecSpace::memory_space>::accessible;
  using F = SmallDensePairRows<ExecSpace, NOUT, AfterRow>;
  F f;
  const int vector = host ? 1 : 32;
  f.online.a = online;
  f.target.a = target;
  f.online.vector = f.target.vector = vector;
  f.online.epilogue = f.target.epilogue = true;
  // GPUs: 2 row indices per team of 6 warps (one row each; 512 teams of
  // 192 threads for a batch of 1,024 fit one wave at 64 registers, as the
  // single kernel's teams do); host backends: one index per
  // single-thread team.
  f.per_team = host ? 1 : 2;
  f.after_target_row = after_target_row;
  const int teams = (target.rows + f.per_team - 1) / f.per_team;
  typename F::policy_type policy(space, teams, host ? 1 : 3 * f.per_team, vector);
  Kokkos::parallel_for("foxrl::kernels::small_dense_pair_forward", compat::light(policy), f);
}

template <class ExecSpace, int NOUT = 1, class AfterRow>
void dispatch_small_dense_pair(const ExecSpace& space, const SmallDenseArgs& online, const SmallDenseArgs& target,
                               const AfterRow& after_target_row) {
  if constexpr (NOUT < small_dense_max_outputs) {
    if (online.outputs != NOUT) {
      dispatch_small_dense_pair<ExecSpace, NOUT + 1>(space, online, target, after_target_row);
      return;
    }
  }
  launch_small_dense_pair<ExecSpace, NOUT>(space, online, target, after_target_row);
}
}  // namespace detail

/// Whether bias_relu_small_dense_pair_forward takes heads of `outputs`
/// outputs (one pass of the head kernel).
inline bool small_dense_pair_fits(int outputs) { return outputs >= 1 && outputs <= small_dense_max_outputs; }

/// The online head over [s; s'] and the target head over s' in one launch
/// (see the file comment): `online` has 2 B rows, `target` B rows, both of
/// the same widths and at most 8 outputs (small_dense_pair_fits);
/// `after_target_row(i)` runs once per target row after the team's rows
/// are stored (its after_rows(team), when it has one, by every thread of
/// every team). The results are those of bias_relu_small_dense_forward on
/// each head, bit for bit.
template <class ExecSpace, class MemorySpace, class AfterRow = NothingAfterRow>
void bias_relu_small_dense_pair_forward(const ExecSpace& space, const BiasReluHead<MemorySpace>& online,
                                        const BiasReluHead<MemorySpace>& target,
                                        const AfterRow& after_target_row = AfterRow()) {
  const char* what = "bias_relu_small_dense_pair_forward";
  const SmallDenseArgs o = detail::bias_relu_small_dense_args(what, online.z, online.hidden_bias, online.w, online.bias,
                                                              online.y, online.store_rows);
  const SmallDenseArgs t = detail::bias_relu_small_dense_args(what, target.z, target.hidden_bias, target.w, target.bias,
                                                              target.y, target.store_rows);
  if (o.rows != 2 * t.rows || o.cols != t.cols || o.outputs != t.outputs || !small_dense_pair_fits(o.outputs))
    throw LogicError(std::string("foxrl::kernels::") + what + ": the online head needs twice the target's " +
                     std::to_string(t.rows) + " rows (got " + std::to_string(o.rows) + "), the same " +
                     std::to_string(t.cols) + " columns (got " + std::to_string(o.cols) + ") and the same 1 to " +
                     std::to_string(small_dense_max_outputs) + " outputs (got " + std::to_string(o.outputs) + " and " +
                     std::to_string(t.outputs) + ")");
  if (t.rows == 0) return;
  detail::dispatch_small_dense_pair(space, o, t, after_target_row);
}

}  // namespace kernels
}  // namespace foxrl
