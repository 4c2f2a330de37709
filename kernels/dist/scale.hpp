#pragma once
// x *= factor over a flat float View: turns the sum an all-reduce forms into
// the mean over ranks.

#include "core/compat.hpp"

#include <Kokkos_Core.hpp>

#include <cstddef>

namespace foxrl::kernels {

/// Element i of scale: x(i) *= factor. A named functor, not a KOKKOS_LAMBDA
/// (see RecordStepInOneTeam in kernels/collect/record_step.hpp).
template <class MemorySpace>
struct ScaleKernel {
  Kokkos::View<float*, MemorySpace> x;
  float factor;
  KOKKOS_INLINE_FUNCTION void operator()(std::size_t i) const { x(i) *= factor; }
};

/// x(i) *= factor for i < n (n <= x.extent(0)), on `space`.
template <class ExecSpace, class MemorySpace>
void scale(const ExecSpace& space, const Kokkos::View<float*, MemorySpace>& x, std::size_t n, float factor) {
  Kokkos::parallel_for("foxrl::GradientReducer::scale", Kokkos::RangePolicy<ExecSpace>(space, 0, n),
                       ScaleKernel<MemorySpace>{x, factor});
}

}  // namespace foxrl::kernels
