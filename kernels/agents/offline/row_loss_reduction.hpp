#pragma once
// The launch every offline loss kernel shares: a row operation computes one
// batch row (its gradient and per-sample outputs) and adds that row's
// contributions to a few sums; the sums meet in a team scratch tree and
// then, with several teams, in team order in the last team to finish
// (ReduceScratch), where the row operation turns them into batch means.
// One launch, no atomics on floats, no host read-back: the means are the
// same on every run of a backend.

#include "core/compat.hpp"
#include "core/error.hpp"
#include "kernels/core/last_team.hpp"
#include "kernels/core/reduce_scratch.hpp"
#include "kernels/core/team_tree_sum.hpp"

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <string>

namespace foxrl {
namespace kernels {

/// The most sums a row operation of the offline losses adds up.
inline constexpr int offline_loss_max_sums = 4;

/// Rows per team of the offline losses: GPUs run one row per thread in
/// teams of 32, so a batch of 256 already spreads over 8 SMs; host backends
/// one thread per team over 64 rows.
template <class ExecSpace,
          bool host = Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename ExecSpace::memory_space>::accessible>
struct OfflineLossTiling {
  static constexpr int team_size = 1, rows_per_team = 64;
};
template <class ExecSpace>
struct OfflineLossTiling<ExecSpace, false> {
  static constexpr int team_size = 32, rows_per_team = 32;
};

/// What any offline loss kernel needs of a ReduceScratch to spread `batch`
/// rows over several teams (one scratch serves them all, launched in turn
/// on one instance).
template <class ExecSpace>
ScratchNeed offline_loss_scratch(int batch) {
  const int teams =
      (batch + OfflineLossTiling<ExecSpace>::rows_per_team - 1) / OfflineLossTiling<ExecSpace>::rows_per_team;
  return {std::size_t(teams) * std::size_t(offline_loss_max_sums), 1};
}

/// Runs `Row` over a batch. Row provides `static constexpr int sums`,
/// `void operator()(int i, float* acc) const` (row i; adds to acc[0..sums))
/// and `void finish(const float* totals) const` (called once, by one thread,
/// with the batch totals), all KOKKOS_INLINE_FUNCTION.
template <class ExecSpace, class Row>
struct RowLossFunctor {
  using memory_space = typename ExecSpace::memory_space;
  using policy_type = Kokkos::TeamPolicy<ExecSpace>;
  using member_type = typename policy_type::member_type;
  static constexpr int sums = Row::sums;
  static_assert(sums >= 1 && sums <= offline_loss_max_sums, "offline_loss_scratch sizes for at most 4 sums");

  Row row;
  ReduceScratch<memory_space> scratch;
  int batch = 0;
  int rows_per_team = 0;

  KOKKOS_INLINE_FUNCTION void operator()(const member_type& team) const {
    const int rank = team.team_rank();
    const int size = team.team_size();
    const int teams = team.league_size();
    float* partial = static_cast<float*>(team.team_shmem().get_shmem(sizeof(float) * sums * size));
    float acc[sums];
    for (int s = 0; s < sums; ++s) acc[s] = 0.0f;
    const int begin = team.league_rank() * rows_per_team;
    const int end = begin + rows_per_team < batch ? begin + rows_per_team : batch;
    for (int i = begin + rank; i < end; i += size) row(i, acc);
    for (int s = 0; s < sums; ++s) partial[s * size + rank] = acc[s];
    team_tree_sum(team, partial, sums, size);
    float totals[sums];
    if (teams == 1) {
      if (rank == 0) {
        for (int s = 0; s < sums; ++s) totals[s] = partial[s * size];
        row.finish(totals);
      }
      return;
    }
    float* global = scratch.partials.data();
    if (rank == 0)
      for (int s = 0; s < sums; ++s) global[std::size_t(team.league_rank()) * sums + s] = partial[s * size];
    if (!arrive_last(team, scratch.tickets.data(), static_cast<unsigned>(teams))) return;
    if (rank == 0) {
      for (int s = 0; s < sums; ++s) totals[s] = sum_partials(global, teams, std::size_t(sums), std::size_t(s));
      row.finish(totals);
    }
  }
};

/// Launches `row` over `batch` rows on `space` under `label`: over several
/// teams if `scratch` holds offline_loss_scratch(batch), else in one team.
template <class ExecSpace, class Row>
void launch_row_loss(const ExecSpace& space, const std::string& label, const Row& row, int batch,
                     const ReduceScratch<typename ExecSpace::memory_space>& scratch) {
  using F = RowLossFunctor<ExecSpace, Row>;
  using T = OfflineLossTiling<ExecSpace>;
  if (batch <= 0) return;
  F f;
  f.row = row;
  f.scratch = scratch;
  f.batch = batch;
  const int teams = (batch + T::rows_per_team - 1) / T::rows_per_team;
  const bool split = teams > 1 && scratch.holds(offline_loss_scratch<ExecSpace>(batch));
  f.rows_per_team = split ? T::rows_per_team : batch;
  typename F::policy_type policy(space, split ? teams : 1, split ? T::team_size : (T::team_size > 1 ? 512 : 1));
  policy.set_scratch_size(0, Kokkos::PerTeam(sizeof(float) * F::sums * policy.team_size()));
  Kokkos::parallel_for(label, compat::light(policy), f);
}

namespace detail {

/// Throws LogicError "<kernel>: <what>" unless `ok` (shapes and settings of
/// the offline losses are the program's business, not the user's).
inline void require_loss(bool ok, const std::string& kernel, const std::string& what) {
  if (!ok) throw LogicError(kernel + ": " + what);
}

}  // namespace detail
}  // namespace kernels
}  // namespace foxrl
