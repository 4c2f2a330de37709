#pragma once
// x *= factor over a flat float View: turns the sum an all-reduce forms into
// the mean over ranks.

#include "core/compat.hpp"

#include <Kokkos_Core.hpp>

#include <cstddef>

namespace foxrl::kernels {

/// x(i) *= factor for i < n (n <= x.extent(0)), on `space`.
template <class ExecSpace, class MemorySpace>
void scale(const ExecSpace& space, const Kokkos::View<float*, MemorySpace>& x, std::size_t n, float factor) {
  Kokkos::parallel_for(
      "foxrl::GradientReducer::scale", Kokkos::RangePolicy<ExecSpace>(space, 0, n),
      KOKKOS_LAMBDA(std::size_t i) { x(i) *= factor; });
}

}  // namespace foxrl::kernels
