#pragma once
// Batch: one sampled minibatch for the learner, as device Views. Filled by
// ReplayBuffer::sample without host involvement; read by the train step.

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace foxrl {

template <class MemorySpace>
struct Batch {
  using matrix = Kokkos::View<float**, Kokkos::LayoutRight, MemorySpace>;
  using vector = Kokkos::View<float*, MemorySpace>;

  matrix states;                                     ///< [B, obs_dim] s_t
  Kokkos::View<std::int32_t*, MemorySpace> actions;  ///< [B] a_t
  vector rewards;      ///< [B] n-step return sum_k gamma^k r_{t+k}, stopped at episode end
  matrix next_states;  ///< [B, obs_dim] s_{t+n} (the real observation, never a reset one)
  vector discounts;    ///< [B] gamma^k * (1 - terminated): 0 when the window ended in a termination
  Kokkos::View<std::int64_t*, MemorySpace> indices;  ///< [B] replay slots (for priority updates)
  vector is_weights;                                 ///< [B] importance weights, max-normalised (1 for uniform)

  int size() const { return static_cast<int>(states.extent(0)); }
  int obs_dim() const { return static_cast<int>(states.extent(1)); }
};

}  // namespace foxrl
