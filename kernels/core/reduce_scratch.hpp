#pragma once
// Deterministic multi-team reductions in one launch: every team writes its
// partial results to a device buffer, takes a ticket, and the team that
// arrives last sums all partials in team order. The result does not depend
// on scheduling (unlike float atomics), and no second launch is needed.

#include "kernels/core/last_team.hpp"

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <string>

namespace foxrl {
namespace kernels {

/// What a single-launch reduction needs of a ReduceScratch. (A named struct
/// rather than std::pair: nvcc with GCC 13 rejects std::pair<std::size_t,
/// std::size_t> as the return type of these function templates.)
struct ScratchNeed {
  std::size_t floats = 0;   ///< float partials
  std::size_t tickets = 0;  ///< ticket counters
};

/// Device scratch for the single-launch reductions: float partials and
/// ticket counters. Every kernel leaves the tickets it used at zero, so
/// launches on one instance can share one ReduceScratch.
template <class MemorySpace>
struct ReduceScratch {
  Kokkos::View<float*, MemorySpace> partials;
  Kokkos::View<unsigned*, MemorySpace> tickets;  ///< zero between launches

  ReduceScratch() = default;

  template <class ExecSpace>
  ReduceScratch(const ExecSpace& space, const std::string& label, std::size_t partial_floats, std::size_t ticket_count)
      : partials(Kokkos::view_alloc(space, Kokkos::WithoutInitializing, label + "::partials"), partial_floats),
        tickets(Kokkos::view_alloc(space, label + "::tickets"), ticket_count) {}

  bool holds(const ScratchNeed& need) const { return holds(need.floats, need.tickets); }
  bool holds(std::size_t partial_floats, std::size_t ticket_count) const {
    return partials.extent(0) >= partial_floats && tickets.extent(0) >= ticket_count;
  }
};

/// A partial written by another team of the same launch (volatile: never a
/// stale cached copy).
KOKKOS_INLINE_FUNCTION float read_partial(const float* p, std::size_t i) {
  return static_cast<const volatile float*>(p)[i];
}

/// sum over k < count of p[k * stride + offset] (read_partial), added in k
/// order from 0. The loads go out 32 at a time before their adds: a loop
/// that adds each partial as it loads it waits one memory latency per
/// partial, which for a few hundred teams costs more than the reduction.
KOKKOS_INLINE_FUNCTION float sum_partials(const float* p, int count, std::size_t stride, std::size_t offset) {
  constexpr int batch = 32;
  float total = 0.0f;
  for (int k0 = 0; k0 < count; k0 += batch) {
    const int m = count - k0 < batch ? count - k0 : batch;
    float v[batch];
    for (int j = 0; j < batch; ++j)
      if (j < m) v[j] = read_partial(p, std::size_t(k0 + j) * stride + offset);
    for (int j = 0; j < batch; ++j)
      if (j < m) total += v[j];
  }
  return total;
}

}  // namespace kernels
}  // namespace foxrl
