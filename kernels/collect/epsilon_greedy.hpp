#pragma once
// Epsilon-greedy action selection on the device: the exploration schedule,
// the per-env decision (a pure function of (seed, env, global step), so the
// host can recompute it) and the selection kernel of ActionSelector
// (src/collect/action_selector.hpp).

#include "core/compat.hpp"
#include "kernels/core/counter_read.hpp"
#include "kernels/core/counter_rng.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace foxrl {

/// Exploration rate as a function of the global env step (env steps taken
/// before the current iteration, summed over envs).
///   linear:      max(end, start + (end - start) * step / decay_env_steps)   (BENCHMARKS.md)
///   exponential: end + (start - end) * exp(-step / decay_env_steps)
struct EpsilonSchedule {
  enum class Kind { linear, exponential };
  Kind kind = Kind::linear;
  double start = 1.0;
  double end = 0.05;
  double decay_env_steps = 1e6;

  KOKKOS_INLINE_FUNCTION double operator()(std::int64_t global_step) const {
    const double s = static_cast<double>(global_step);
    // The product rounded on its own (as host compilers do), so the device
    // evaluates the same expression as the host.
    if (kind == Kind::exponential) return end + kernels::mul_unfused(start - end, math::exp(-s / decay_env_steps));
    const double e = start + (end - start) * s / decay_env_steps;
    return e > end ? e : end;
  }
};

namespace kernels {

/// Index of the largest of q[0..A) (the first one on ties).
template <class QRow>
KOKKOS_INLINE_FUNCTION std::int32_t argmax_row(const QRow& q, int num_actions) {
  std::int32_t best = 0;
  float best_q = q(0);
  for (int a = 1; a < num_actions; ++a) {
    if (q(a) > best_q) {
      best_q = q(a);
      best = a;
    }
  }
  return best;
}

/// The epsilon-greedy decision of env `env` at `global_step`: explore when
/// the uniform draw (counter 2 g) is below epsilon, then take the uniform
/// action drawn with counter 2 g + 1. Host and device give the same answer.
KOKKOS_INLINE_FUNCTION std::int32_t epsilon_greedy_action(std::uint64_t explore_seed, int env, std::int64_t global_step,
                                                          float epsilon, std::int32_t greedy, int num_actions) {
  const auto g = static_cast<std::uint64_t>(global_step);
  const auto e = static_cast<std::uint64_t>(env);
  if (counter_uniform(explore_seed, e, 2 * g) < epsilon) {
    return static_cast<std::int32_t>(
        counter_index(explore_seed, e, 2 * g + 1, static_cast<std::uint32_t>(num_actions)));
  }
  return greedy;
}

/// The action of env `env` at `global_step` around its greedy action
/// `best`: with epsilon `eps`, or when eps < 0 the schedule's epsilon at
/// that step (0 in greedy_mode). The one body of select_actions and of
/// EpsilonGreedyChoice.
KOKKOS_INLINE_FUNCTION std::int32_t choose_action(std::uint64_t explore_seed, int env, std::int64_t global_step,
                                                  float eps, bool greedy_mode, const EpsilonSchedule& schedule,
                                                  std::int32_t best, int num_actions) {
  float e = eps;
  if (e < 0) e = greedy_mode ? 0.0f : static_cast<float>(schedule(global_step));
  return e > 0 ? epsilon_greedy_action(explore_seed, env, global_step, e, best, num_actions) : best;
}

/// select_actions from greedy actions as a per-env functor, for a kernel
/// that takes the action in the same thread (an env step: one launch
/// fewer than selecting first). choice(i) writes actions(i) and returns it.
template <class MemorySpace>
struct EpsilonGreedyChoice {
  Kokkos::View<const std::int32_t*, MemorySpace> greedy;
  Kokkos::View<std::int32_t*, MemorySpace> actions;
  CounterRead global_step;
  float eps = -1.0f;  ///< < 0: the schedule's at the step (see choose_action)
  EpsilonSchedule schedule;
  bool greedy_mode = false;
  std::uint64_t explore_seed = 0;
  int num_actions = 1;

  KOKKOS_INLINE_FUNCTION std::int32_t operator()(int i) const {
    const std::int32_t a =
        choose_action(explore_seed, i, global_step(), eps, greedy_mode, schedule, greedy(i), num_actions);
    actions(i) = a;
    return a;
  }
};

/// Env i of select_actions: its greedy action (the argmax of q(i, :) when
/// from_q, else greedy(i)), then the epsilon-greedy choice around it. A
/// named functor, not a KOKKOS_LAMBDA (see RecordStepInOneTeam in
/// kernels/collect/record_step.hpp).
template <class MemorySpace>
struct SelectActionsKernel {
  Kokkos::View<const float**, Kokkos::LayoutRight, MemorySpace> q;
  Kokkos::View<const std::int32_t*, MemorySpace> greedy;
  Kokkos::View<std::int32_t*, MemorySpace> actions;
  CounterRead global_step;
  float eps;
  int A;
  std::uint64_t seed;
  EpsilonSchedule schedule;
  bool greedy_mode;
  bool from_q;
  KOKKOS_INLINE_FUNCTION void operator()(int i) const {
    const std::int32_t best = from_q ? kernels::argmax_row(Kokkos::subview(q, i, Kokkos::ALL), A) : greedy(i);
    actions(i) = kernels::choose_action(seed, i, global_step(), eps, greedy_mode, schedule, best, A);
  }
};

/// actions[i] = epsilon-greedy around the argmax of q(i, :) (or greedy[i]
/// when q is empty) with env i's draws at the global step `step` (read when
/// the kernel runs), with epsilon `eps`, or when eps < 0 the schedule's
/// epsilon at that step (0 in greedy_mode). One launch, labelled `label`.
template <class ExecSpace, class MemorySpace>
void select_actions(const ExecSpace& space, const char* label,
                    const Kokkos::View<const float**, Kokkos::LayoutRight, MemorySpace>& q,
                    const Kokkos::View<const std::int32_t*, MemorySpace>& greedy, CounterRead global_step, float eps,
                    int num_actions, std::uint64_t explore_seed, const EpsilonSchedule& epsilon_schedule,
                    bool greedy_only, const Kokkos::View<std::int32_t*, MemorySpace>& actions) {
  const int A = num_actions;
  const std::uint64_t seed = explore_seed;
  const EpsilonSchedule schedule = epsilon_schedule;
  const bool greedy_mode = greedy_only;
  const bool from_q = q.data() != nullptr;
  const int n = static_cast<int>(actions.extent(0));
  Kokkos::parallel_for(
      label, compat::light(Kokkos::RangePolicy<ExecSpace>(space, 0, n)),
      SelectActionsKernel<MemorySpace>{q, greedy, actions, global_step, eps, A, seed, schedule, greedy_mode, from_q});
}

}  // namespace kernels
}  // namespace foxrl
