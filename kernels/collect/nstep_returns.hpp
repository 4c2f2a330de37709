#pragma once
// One fused kernel of the n-step accumulator: record the step just taken by
// every env into its ring of the last n steps and emit, for every env, the
// transition whose n-step window ends with this step.
//
// Window of the transition starting at step s: steps s .. s+n-1 of the same
// env, cut after the first step that ended the episode:
//   reward   = sum_{j<k} gamma^j r_{s+j}            (k = steps in the window)
//   discount = 0 if the window ended in a termination, else gamma^k
//   next obs = the real (pre-reset) observation after step s+k-1
// With no episode end inside the window, that next observation is the one
// the env acts on at step s+n: `next_is_successor` tells storage it may keep
// it once.

#include "core/compat.hpp"
#include "kernels/core/counter_read.hpp"
#include "kernels/core/fast_divisor.hpp"
#include "views/collect/transition_batch.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace foxrl::kernels {

template <class MemorySpace>
struct NStepRing {
  Kokkos::View<float***, Kokkos::LayoutRight, MemorySpace> observations;       ///< [n, N, D]
  Kokkos::View<float***, Kokkos::LayoutRight, MemorySpace> next_observations;  ///< [n, N, D]
  Kokkos::View<std::int32_t**, Kokkos::LayoutRight, MemorySpace> actions;      ///< [n, N]
  Kokkos::View<float**, Kokkos::LayoutRight, MemorySpace> rewards;             ///< [n, N]
  /// [n, N]: bit 0 terminated, bit 1 truncated.
  Kokkos::View<std::uint8_t**, Kokkos::LayoutRight, MemorySpace> episode_end;
};

/// Inputs of one env step, all [N] or [N, D].
template <class MemorySpace>
struct StepRecord {
  Kokkos::View<const float**, Kokkos::LayoutRight, MemorySpace> observations;
  Kokkos::View<const std::int32_t*, MemorySpace> actions;
  Kokkos::View<const float*, MemorySpace> rewards;
  Kokkos::View<const std::uint8_t*, MemorySpace> terminated;
  Kokkos::View<const std::uint8_t*, MemorySpace> truncated;
  Kokkos::View<const float**, Kokkos::LayoutRight, MemorySpace> next_observations;
};

template <class ExecSpace>
void record_step_and_emit(const ExecSpace& space, const NStepRing<typename ExecSpace::memory_space>& ring,
                          const StepRecord<typename ExecSpace::memory_space>& step,
                          const TransitionBatch<typename ExecSpace::memory_space>& out, CounterRead steps_before,
                          float gamma, bool emit) {
  const int n = static_cast<int>(ring.actions.extent(0));
  const int num_envs = static_cast<int>(ring.actions.extent(1));
  const int dim = static_cast<int>(ring.observations.extent(2));
  const std::int64_t count = static_cast<std::int64_t>(num_envs) * dim;
  // A GPU has no integer divide: (env, d) from the flat index by a
  // multiply-high where it is exact (always, short of 2^32 / dim threads),
  // and the step's ring slots from one 64-bit modulo instead of two.
  const FastDivisor by_dim(static_cast<std::uint32_t>(dim));
  const bool fast_index = count - 1 <= static_cast<std::int64_t>(by_dim.max_exact());
  // One thread per (env, observation component), so copies are coalesced;
  // the d == 0 thread of each env also writes the env's scalars.
  Kokkos::parallel_for(
      "foxrl::NStep::record_step_and_emit", compat::light(Kokkos::RangePolicy<ExecSpace>(space, 0, count)),
      KOKKOS_LAMBDA(std::int64_t flat) {
        const std::int64_t step_index = steps_before();
        const int slot = static_cast<int>(step_index % n);
        // Oldest step of the window that this step completes: (step_index + 1) % n.
        const int first = slot + 1 == n ? 0 : slot + 1;
        const int env = fast_index ? static_cast<int>(by_dim.divide(static_cast<std::uint32_t>(flat)))
                                   : static_cast<int>(flat / dim);
        const int d = static_cast<int>(flat - static_cast<std::int64_t>(env) * dim);
        const float obs = step.observations(env, d);
        const float next = step.next_observations(env, d);
        ring.observations(slot, env, d) = obs;
        ring.next_observations(slot, env, d) = next;
        const auto end_here = static_cast<std::uint8_t>((step.terminated(env) ? 1 : 0) | (step.truncated(env) ? 2 : 0));
        if (d == 0) {
          ring.actions(slot, env) = step.actions(env);
          ring.rewards(slot, env) = step.rewards(env);
          ring.episode_end(slot, env) = end_here;
        }
        if (!emit) return;
        // Walk the window from its oldest step; the current step's flags are
        // read from `step` (the ring write above is not visible to other
        // threads of this launch).
        float reward = 0.f, discount = 1.f;
        int last = first;
        std::uint8_t ended = 0;
        for (int j = 0; j < n; ++j) {
          const int idx = first + j < n ? first + j : first + j - n;  // (first + j) % n: first, j < n
          const std::uint8_t flags = idx == slot ? end_here : ring.episode_end(idx, env);
          if (d == 0) reward += discount * (idx == slot ? step.rewards(env) : ring.rewards(idx, env));
          discount *= gamma;
          last = idx;
          if (flags != 0) {
            ended = flags;
            break;
          }
        }
        out.observations(env, d) = first == slot ? obs : ring.observations(first, env, d);
        out.next_observations(env, d) = last == slot ? next : ring.next_observations(last, env, d);
        if (d == 0) {
          out.actions(env) = first == slot ? step.actions(env) : ring.actions(first, env);
          out.rewards(env) = reward;
          out.discounts(env) = (ended & 1) ? 0.f : discount;
          out.next_is_successor(env) = ended == 0 ? 1 : 0;
        }
      });
}

}  // namespace foxrl::kernels
