#pragma once
// AcrobotState: the SoA state of N Acrobot envs on the device.

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace foxrl {

template <class MemorySpace>
struct AcrobotState {
  /// float64, as Gymnasium integrates: the RK4 step of a chaotic double
  /// pendulum in float32 would leave the reference's trajectory within a
  /// few dozen steps.
  using vector = Kokkos::View<double*, MemorySpace>;
  vector theta1, theta2;                                   ///< [N] joint angles in [-pi, pi]
  vector dtheta1, dtheta2;                                 ///< [N] joint velocities (bounded, see AcrobotPhysics)
  Kokkos::View<std::int32_t*, MemorySpace> episode_steps;  ///< [N] steps taken in the episode
  /// [N] episodes started so far; keys the reset RNG so every reset of every
  /// env draws fresh, reproducible numbers.
  Kokkos::View<std::uint64_t*, MemorySpace> episodes;

  int size() const { return static_cast<int>(theta1.extent(0)); }
};

}  // namespace foxrl
