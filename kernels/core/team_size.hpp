#pragma once
// The team size of a kernel that runs as one team (the episode statistics'
// record, the collector's record of a step).

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace foxrl::kernels {

/// A team size for a one-team kernel `body` with `work` items: the
/// smallest power of two (team scans want one) that covers them, or the
/// largest the backend allows for the kernel.
template <class ExecSpace, class Body>
int power_of_two_team(const ExecSpace& space, const Body& body, std::int64_t work) {
  const int most = Kokkos::TeamPolicy<ExecSpace>(space, 1, 1).team_size_max(body, Kokkos::ParallelForTag());
  int team_size = 1;
  while (team_size * 2 <= most && team_size < work) team_size *= 2;
  return team_size;
}

}  // namespace foxrl::kernels
