#pragma once
// CartPoleState: the SoA state of N CartPole envs on the device.

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace foxrl {

template <class MemorySpace>
struct CartPoleState {
  using vector = Kokkos::View<float*, MemorySpace>;
  vector x, x_dot, theta, theta_dot;                       ///< [N] float32 physics state
  Kokkos::View<std::int32_t*, MemorySpace> episode_steps;  ///< [N] steps taken in the episode
  /// [N] episodes started so far; keys the reset RNG so every reset of every
  /// env draws fresh, reproducible numbers.
  Kokkos::View<std::uint64_t*, MemorySpace> episodes;

  int size() const { return static_cast<int>(x.extent(0)); }
};

}  // namespace foxrl
