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

/// One step of every env into the ring, and (when `emit`) every env's
/// transition whose window ends with it: thread `flat` handles env
/// flat / dim, component flat % dim, so copies are coalesced; the d == 0
/// thread of each env also writes the env's scalars. Launched on its own
/// (record_step_and_emit) or inside the collector's one-team record
/// (kernels/collect/record_step.hpp).
///
/// `one_step_aliased` (n = 1, NStepAccumulator::alias_one_step): the ring's
/// only row and the output's observations, next observations and actions
/// are the step's own Views, so nothing is copied; one thread per env
/// writes what the step does not hold: the episode-end flags, the
/// transition's reward (0 + 1 x r, as the window's sum forms it: -0 becomes
/// +0), its discount and whether its next observation is the successor.
template <class MemorySpace>
struct NStepRecord {
  NStepRing<MemorySpace> ring;
  StepRecord<MemorySpace> step;
  TransitionBatch<MemorySpace> out;
  CounterRead steps_before;
  float gamma = 1.0f;
  bool emit = false;
  bool one_step_aliased = false;
  int n = 1, dim = 1;
  // A GPU has no integer divide: (env, d) from the flat index by a
  // multiply-high where it is exact (always, short of 2^32 / dim threads),
  // and the step's ring slots from one 64-bit modulo instead of two.
  FastDivisor by_dim;
  bool fast_index = false;

  NStepRecord(const NStepRing<MemorySpace>& ring_, const StepRecord<MemorySpace>& step_,
              const TransitionBatch<MemorySpace>& out_, CounterRead steps_before_, float gamma_, bool emit_,
              bool one_step_aliased_ = false)
      : ring(ring_),
        step(step_),
        out(out_),
        steps_before(steps_before_),
        gamma(gamma_),
        emit(emit_),
        one_step_aliased(one_step_aliased_),
        n(static_cast<int>(ring_.actions.extent(0))),
        dim(static_cast<int>(ring_.observations.extent(2))),
        by_dim(static_cast<std::uint32_t>(dim)),
        fast_index(count() - 1 <= static_cast<std::int64_t>(by_dim.max_exact())) {}

  /// Threads of one record: envs x elements_per_env().
  std::int64_t count() const { return static_cast<std::int64_t>(ring.actions.extent(1)) * elements_per_env(); }
  /// Threads per env: one per observation component, one when aliased.
  KOKKOS_INLINE_FUNCTION int elements_per_env() const { return one_step_aliased ? 1 : dim; }

  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t flat) const {
    if (one_step_aliased) {
      record_aliased(static_cast<int>(flat));
      return;
    }
    const std::int64_t step_index = steps_before();
    const int slot = static_cast<int>(step_index % n);
    // Oldest step of the window that this step completes: (step_index + 1) % n.
    const int first = slot + 1 == n ? 0 : slot + 1;
    const int env =
        fast_index ? static_cast<int>(by_dim.divide(static_cast<std::uint32_t>(flat))) : static_cast<int>(flat / dim);
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
  }

  /// Env `env`'s share of an aliased one-step record: the window of one
  /// step, as operator() forms it with n = 1.
  KOKKOS_INLINE_FUNCTION void record_aliased(int env) const {
    const bool terminated = step.terminated(env) != 0;
    const bool truncated = step.truncated(env) != 0;
    ring.episode_end(0, env) = static_cast<std::uint8_t>((terminated ? 1 : 0) | (truncated ? 2 : 0));
    float reward = 0.f;
    reward += 1.f * step.rewards(env);
    out.rewards(env) = reward;
    out.discounts(env) = terminated ? 0.f : 1.f * gamma;
    out.next_is_successor(env) = terminated || truncated ? 0 : 1;
  }
};

/// `record` as a launch of its own, one thread per (env, component).
template <class ExecSpace>
void record_step_and_emit(const ExecSpace& space, const NStepRecord<typename ExecSpace::memory_space>& record) {
  Kokkos::parallel_for("foxrl::NStep::record_step_and_emit",
                       compat::light(Kokkos::RangePolicy<ExecSpace>(space, 0, record.count())), record);
}

}  // namespace foxrl::kernels
