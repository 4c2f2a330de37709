#pragma once
// The decision bars of a run of consecutive market decisions: bars(i) =
// first + i. Feeds build_observations when a policy decides after each bar
// of a series (the Policy's batches of rows).

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace foxrl::kernels {

/// bars(i) = first + i for i < n, on `space`.
template <class ExecSpace, class MemorySpace>
void consecutive_decision_bars(const ExecSpace& space, const Kokkos::View<std::int32_t*, MemorySpace>& bars,
                               int first, int n) {
  Kokkos::parallel_for(
      "foxrl::Policy::times", Kokkos::RangePolicy<ExecSpace>(space, 0, n),
      KOKKOS_LAMBDA(int i) { bars(i) = first + i; });
}

}  // namespace foxrl::kernels
