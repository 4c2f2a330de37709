#pragma once
// The in-team tree reduction shared by the single-launch reductions: `sums`
// arrays of `size` per-thread partials in team scratch are halved pairwise
// (power-of-two strides, so any team size works) until slot 0 of each holds
// the team's total. A fixed pairing: the result does not depend on
// scheduling.

#include <Kokkos_Core.hpp>

namespace foxrl {
namespace kernels {

/// partial[s * size + 0] = sum over r < size of partial[s * size + r] for
/// every s < sums, in a fixed order. Every thread of the team calls it after
/// writing its own partials; a barrier ends it, so every thread may read
/// the totals afterwards.
template <class Member>
KOKKOS_INLINE_FUNCTION void team_tree_sum(const Member& team, float* partial, int sums, int size) {
  const int rank = team.team_rank();
  int width = 1;
  while (width < size) width *= 2;
  for (int half = width / 2; half > 0; half /= 2) {
    team.team_barrier();
    if (rank < half && rank + half < size)
      for (int s = 0; s < sums; ++s) partial[s * size + rank] += partial[s * size + rank + half];
  }
  team.team_barrier();
}

}  // namespace kernels
}  // namespace foxrl
