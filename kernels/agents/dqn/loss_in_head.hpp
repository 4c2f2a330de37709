#pragma once
// The DQN loss inside the target network's head kernel: the head kernel
// (kernels/nn/small_dense.hpp) forms row i of Q_target(s') and, on the same
// thread, this functor's operator()(i) forms the row's loss, its gradient
// dL/dhead and |td| (the loss kernel's own row functions,
// kernels/agents/dqn/dqn_loss.hpp); the head kernel's last team then forms
// the batch sums. One launch fewer on the update's chain than the loss
// kernel after the head kernel.
//
// The sums keep the loss kernel's bits: the last team adds the rows in the
// order that kernel's teams do (DqnLossTiling: each thread its rows in
// turn, a pairwise tree over the team's threads, the teams in order), so
// the metrics, the head's bias gradient and everything after them are the
// same with the loss in either place (tests/test_loss_in_head.cpp).

#include "kernels/agents/dqn/dqn_loss.hpp"
#include "kernels/core/last_team.hpp"
#include "kernels/core/reduce_scratch.hpp"

#include <Kokkos_Core.hpp>

#include <cstddef>

namespace foxrl::kernels {

/// A column of row terms another team of the launch wrote: row i's term
/// at base[i * stride] (volatile: never a stale cached copy).
struct RowTerms {
  const float* base = nullptr;
  std::size_t stride = 1;
  KOKKOS_INLINE_FUNCTION float operator()(int i) const { return read_partial(base, std::size_t(i) * stride); }
};

/// The loss kernel's partial for its team `g` (rows [g RowsPerTeam,
/// + RowsPerTeam) of `batch`), formed as that team forms it: thread r adds
/// rows g RowsPerTeam + r, + TeamSize, ... from 0, then team_tree_sum's
/// pairwise halving. Each round's loads go out before its adds.
template <int TeamSize, int RowsPerTeam>
KOKKOS_INLINE_FUNCTION float loss_team_partial(const RowTerms& terms, int g, int batch) {
  constexpr int rounds = (RowsPerTeam + TeamSize - 1) / TeamSize;
  const int begin = g * RowsPerTeam;
  const int end = begin + RowsPerTeam < batch ? begin + RowsPerTeam : batch;
  float p[TeamSize];
  for (int r = 0; r < TeamSize; ++r) p[r] = 0.0f;
  for (int k = 0; k < rounds; ++k) {
    float v[TeamSize];
    for (int r = 0; r < TeamSize; ++r) {
      const int i = begin + k * TeamSize + r;
      v[r] = i < end ? terms(i) : 0.0f;
    }
    for (int r = 0; r < TeamSize; ++r)
      if (begin + k * TeamSize + r < end) p[r] += v[r];
  }
  int width = 1;
  while (width < TeamSize) width *= 2;
  for (int half = width / 2; half > 0; half /= 2)
    for (int r = 0; r < half && r + half < TeamSize; ++r) p[r] += p[r + half];
  return p[0];
}

/// After-row functor of the target network's head kernel (see the file
/// comment). `args.target_next` must be the head kernel's output and
/// `args.scratch` hold dqn_loss_scratch; `row_terms` [2, batch] keeps each
/// row's weighted loss and Q(s, a) for the last team.
template <class ExecSpace>
struct DqnLossInHead {
  using memory_space = typename ExecSpace::memory_space;
  using Tiling = DqnLossTiling<ExecSpace>;

  DqnLossArgs<memory_space> args;
  Kokkos::View<float**, Kokkos::LayoutRight, memory_space> row_terms;
  int batch = 0;
  int num_actions = 0;
  int sums = dqn_loss_base_sums;  ///< + 1 + num_actions with the head's bias gradient

  /// Row i's loss, dL/dhead and |td| (the loss kernel's arithmetic).
  KOKKOS_INLINE_FUNCTION void operator()(int i) const {
    const int a = args.actions(i);
    const DqnRowLoss r = dqn_row_loss(args.online_s, args.online_next, args.target_next, i, a, num_actions,
                                      args.rewards(i), args.discounts(i), args.loss);
    const float w = args.is_weights(i);
    const float inv_b = 1.0f / static_cast<float>(batch);
    const float inv_a = 1.0f / static_cast<float>(num_actions);
    write_head_gradient(args.d_head, i, a, num_actions, w * r.dloss * inv_b, inv_a, [](int, float) {});
    args.td_errors(i) = r.abs_td;
    row_terms(0, i) = w * r.loss;
    row_terms(1, i) = r.q;
  }

  /// The row terms of sum s (dqn_loss_base_sums' order).
  KOKKOS_INLINE_FUNCTION RowTerms terms(int s) const {
    if (s < 2) return {&row_terms(s, 0), 1};
    if (s == 2) return {args.td_errors.data(), 1};
    return {&args.d_head(0, s - dqn_loss_base_sums), std::size_t(args.d_head.stride(0))};
  }

  /// Every team, after its rows: the last one to finish forms the sums.
  template <class Member>
  KOKKOS_INLINE_FUNCTION void after_rows(const Member& team) const {
    Kokkos::memory_fence();  // this team's rows, device-wide, before its ticket
    team.team_barrier();
    unsigned* ticket = args.scratch.tickets.data();
    const auto teams = static_cast<unsigned>(team.league_size());
    int last = 0;
    Kokkos::single(
        Kokkos::PerTeam(team),
        [&](int& is_last) {
          const unsigned before = Kokkos::atomic_fetch_add(ticket, 1u);
          is_last = before + 1u == teams ? 1 : 0;
          if (is_last) *ticket = 0u;
        },
        last);
    if (last == 0) return;
    Kokkos::memory_fence();

    // The loss kernel's team partials, one (sum, team) pair per lane.
    constexpr int lanes = 32;
    const int groups = (batch + Tiling::rows_per_team - 1) / Tiling::rows_per_team;
    const int pairs = groups * sums;
    float* partials = args.scratch.partials.data();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, (pairs + lanes - 1) / lanes), [&](const int chunk) {
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, lanes), [&](const int lane) {
        const int pair = chunk * lanes + lane;
        if (pair >= pairs) return;
        const int g = pair / sums, s = pair - g * sums;
        partials[std::size_t(pair)] = loss_team_partial<Tiling::team_size, Tiling::rows_per_team>(terms(s), g, batch);
      });
    });
    Kokkos::memory_fence();
    team.team_barrier();
    // Then the teams in order, one sum per lane, as the loss kernel's last team.
    const float inv_b = 1.0f / static_cast<float>(batch);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, 1), [&](int) {
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, sums), [&](const int s) {
        store_loss_sum(args, s, sum_partials(partials, groups, std::size_t(sums), std::size_t(s)), inv_b);
      });
    });
    if (args.adam_step.data() != nullptr) Kokkos::single(Kokkos::PerTeam(team), [&]() { args.adam_step() += 1; });
  }
};

/// Whether the loss can run inside the target head kernel for `batch` rows
/// with `scratch`: the loss kernel would split the batch over several teams
/// (the order the last team reproduces), and the head has a bias gradient
/// column count that fits.
template <class ExecSpace>
bool dqn_loss_fits_in_head(int batch, int head_outputs,
                           const ReduceScratch<typename ExecSpace::memory_space>& scratch) {
  using T = DqnLossTiling<ExecSpace>;
  const int teams = (batch + T::rows_per_team - 1) / T::rows_per_team;
  return teams > 1 && scratch.holds(dqn_loss_scratch<ExecSpace>(batch, head_outputs));
}

/// The after-row functor for `args` (see DqnLossInHead; checks its shapes).
template <class ExecSpace>
DqnLossInHead<ExecSpace> dqn_loss_in_head(
    const DqnLossArgs<typename ExecSpace::memory_space>& args,
    const Kokkos::View<float**, Kokkos::LayoutRight, typename ExecSpace::memory_space>& row_terms) {
  DqnLossInHead<ExecSpace> f;
  f.args = args;
  f.row_terms = row_terms;
  f.batch = static_cast<int>(args.actions.extent(0));
  f.num_actions = static_cast<int>(args.online_s.extent(1)) - 1;
  const int outputs = f.num_actions + 1;
  if (args.head_bias_grad.data() != nullptr) f.sums = dqn_loss_base_sums + outputs;
  if (!dqn_loss_fits_in_head<ExecSpace>(f.batch, outputs, args.scratch) || row_terms.extent(0) != 2 ||
      row_terms.extent(1) < std::size_t(f.batch) || args.target_next.extent(0) != std::size_t(f.batch) ||
      (args.head_bias_grad.data() != nullptr && args.head_bias_grad.extent(0) != std::size_t(outputs)))
    throw LogicError("foxrl::kernels::dqn_loss_in_head: " + std::to_string(f.batch) +
                     " rows do not fit the loss in the head kernel (scratch, row terms or bias gradient)");
  return f;
}

}  // namespace foxrl::kernels
