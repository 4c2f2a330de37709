#pragma once
// TransitionBatch: what the experience collector hands to the replay buffer
// each iteration: one finished n-step transition per environment (row i is
// env i), written to slots (ptr + i) % capacity. The collector inserts only
// once every env's n-step window is full, so every row is a real transition.

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace foxrl {

template <class MemorySpace>
struct TransitionBatch {
  using matrix = Kokkos::View<float**, Kokkos::LayoutRight, MemorySpace>;
  using vector = Kokkos::View<float*, MemorySpace>;

  matrix observations;                               ///< [N, obs_dim] s_t
  Kokkos::View<std::int32_t*, MemorySpace> actions;  ///< [N]
  vector rewards;                                    ///< [N] n-step return, stopped at the episode end
  matrix next_observations;                          ///< [N, obs_dim] s_{t+k}, the real (pre-reset) observation
  vector discounts;                                  ///< [N] gamma^k * (1 - terminated)
  /// [N] 1 when next_observations(i) is the observation the same env will
  /// hand over `n` iterations later (no episode boundary inside the window),
  /// so storage may keep it once; 0 at episode boundaries.
  Kokkos::View<std::uint8_t*, MemorySpace> next_is_successor;
  int size() const { return static_cast<int>(observations.extent(0)); }
  int obs_dim() const { return static_cast<int>(observations.extent(1)); }
};

}  // namespace foxrl
