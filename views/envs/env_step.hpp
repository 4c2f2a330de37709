#pragma once
// EnvStep: what one vectorized environment step writes, as device Views
// (row i is env i). Shared by every environment so the experience collector
// composes with any of them.

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <string>

namespace foxrl {

template <class MemorySpace>
struct EnvStep {
  using matrix = Kokkos::View<float**, Kokkos::LayoutRight, MemorySpace>;

  /// [N, obs_dim] the real observation after the step, before any auto-reset
  /// (what a transition's s' must be).
  matrix next_observations;
  Kokkos::View<float*, MemorySpace> rewards;            ///< [N]
  Kokkos::View<std::uint8_t*, MemorySpace> terminated;  ///< [N] 1: terminal state (no bootstrap)
  Kokkos::View<std::uint8_t*, MemorySpace> truncated;   ///< [N] 1: time limit reached (bootstrap)

  int size() const { return static_cast<int>(rewards.extent(0)); }
  int obs_dim() const { return static_cast<int>(next_observations.extent(1)); }

  /// Allocates all Views on `space` (uninitialised: a step writes every entry).
  template <class ExecSpace>
  static EnvStep allocate(const ExecSpace& space, int num_envs, int obs_dim, const std::string& prefix) {
    EnvStep s;
    s.next_observations = matrix(Kokkos::view_alloc(space, Kokkos::WithoutInitializing, prefix + "::next_observations"),
                                 num_envs, obs_dim);
    s.rewards = Kokkos::View<float*, MemorySpace>(
        Kokkos::view_alloc(space, Kokkos::WithoutInitializing, prefix + "::rewards"), num_envs);
    s.terminated = Kokkos::View<std::uint8_t*, MemorySpace>(
        Kokkos::view_alloc(space, Kokkos::WithoutInitializing, prefix + "::terminated"), num_envs);
    s.truncated = Kokkos::View<std::uint8_t*, MemorySpace>(
        Kokkos::view_alloc(space, Kokkos::WithoutInitializing, prefix + "::truncated"), num_envs);
    return s;
  }
};

}  // namespace foxrl
