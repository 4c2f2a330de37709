#pragma once
// The "last team to finish" handshake of single-launch reductions: every
// team publishes what it wrote and takes a ticket; the team that takes the
// last one may then read what every other team wrote during the launch.
// One launch instead of two, and no dependence on scheduling order.

#include <Kokkos_Core.hpp>

namespace foxrl {
namespace kernels {

/// Called by every thread of a team once its writes are done; true (in every
/// thread of that team) for exactly one team per launch: the last of `teams`
/// to arrive at `ticket`. Each team publishes its writes device-wide before
/// it votes, and the last team fences again before it reads the others'
/// writes (with load_volatile). The last team resets the ticket to zero, so
/// the counter is zero between launches. `Count` is the ticket's integer
/// type (unsigned for reduction scratch, int32 in stored replay state).
template <class Member, class Count, class Teams>
KOKKOS_INLINE_FUNCTION bool arrive_last(const Member& team, Count* ticket, Teams teams) {
  // Each writer publishes its results device-wide before the team votes.
  Kokkos::memory_fence();
  team.team_barrier();
  int last = 0;
  if (team.team_rank() == 0) {
    const Count before = Kokkos::atomic_fetch_add(ticket, Count(1));
    last = before + Count(1) == static_cast<Count>(teams) ? 1 : 0;
    if (last) *ticket = Count(0);
  }
  team.team_broadcast(last, 0);
  if (last) Kokkos::memory_fence();
  return last != 0;
}

/// No work for a launch's last team to do after its own (the default of
/// the launches that take such work, e.g. the replay's priority update).
struct NoLastTeamWork {
  KOKKOS_INLINE_FUNCTION void operator()() const {}
};

/// Reads memory another team may have written during this kernel, bypassing
/// non-coherent caches (GPU L1); the writer published it with a fence.
template <class T>
KOKKOS_INLINE_FUNCTION T load_volatile(const T& ref) {
  return *static_cast<const volatile T*>(&ref);
}

}  // namespace kernels
}  // namespace foxrl
