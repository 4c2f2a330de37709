#pragma once
// OfflineStorage: a recorded dataset of transitions (`foxrl collect`'s
// format) in device Views, one row per transition, as OfflineDataset loads
// it and the uniform sampler reads it.

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace foxrl {

/// The tensors of a dataset, row t the same transition in every View.
template <class MemorySpace>
struct OfflineStorage {
  using matrix = Kokkos::View<float**, Kokkos::LayoutRight, MemorySpace>;

  matrix observations;                                  ///< [T, D] s_t (raw env observations)
  matrix next_observations;                             ///< [T, D] s_{t+1}, the real one (never a reset one)
  Kokkos::View<std::int32_t*, MemorySpace> actions;     ///< [T] a_t in [0, num_actions)
  Kokkos::View<float*, MemorySpace> rewards;            ///< [T] r_t (one step)
  Kokkos::View<std::uint8_t*, MemorySpace> terminated;  ///< [T] 1: s_{t+1} is terminal (no bootstrap)
  Kokkos::View<std::uint8_t*, MemorySpace> truncated;   ///< [T] 1: the episode was cut at s_{t+1} (bootstrap)

  std::int64_t size() const { return static_cast<std::int64_t>(actions.extent(0)); }
  int obs_dim() const { return static_cast<int>(observations.extent(1)); }
};

}  // namespace foxrl
