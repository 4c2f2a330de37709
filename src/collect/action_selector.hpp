#pragma once
// ActionSelector: epsilon-greedy over Q-values (or precomputed greedy
// actions), one launch per call. Env i's draw at global step g is keyed by
// (seed, i, g), so a seed gives the same actions on every backend and the
// host can recompute them (kernels::epsilon_greedy_action).

#include "core/compat.hpp"
#include "kernels/core/counter_rng.hpp"
#include "core/error.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <string>

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
    if (kind == Kind::exponential) return end + (start - end) * math::exp(-s / decay_env_steps);
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
KOKKOS_INLINE_FUNCTION std::int32_t epsilon_greedy_action(std::uint64_t explore_seed, int env,
                                                          std::int64_t global_step, float epsilon,
                                                          std::int32_t greedy, int num_actions) {
  const auto g = static_cast<std::uint64_t>(global_step);
  const auto e = static_cast<std::uint64_t>(env);
  if (counter_uniform(explore_seed, e, 2 * g) < epsilon) {
    return static_cast<std::int32_t>(
        counter_index(explore_seed, e, 2 * g + 1, static_cast<std::uint32_t>(num_actions)));
  }
  return greedy;
}

}  // namespace kernels

template <class ExecSpace>
class ActionSelector {
 public:
  using memory_space = typename ExecSpace::memory_space;
  using q_view = Kokkos::View<const float**, Kokkos::LayoutRight, memory_space>;
  using action_view = Kokkos::View<std::int32_t*, memory_space>;
  using const_action_view = Kokkos::View<const std::int32_t*, memory_space>;
  /// A device-resident global step (rank 0), for callers that keep the
  /// counter on the device (e.g. inside a captured graph).
  using step_view = Kokkos::View<const std::int64_t, memory_space>;

  ActionSelector(int num_actions, std::uint64_t seed, EpsilonSchedule schedule = {})
      : num_actions_(num_actions),
        explore_seed_(kernels::derive_seed(seed, kernels::rng_tag::explore)),
        schedule_(schedule) {
    if (num_actions <= 0) throw UsageError("ActionSelector: num_actions must be positive");
    if (!(schedule.decay_env_steps > 0)) throw UsageError("ActionSelector: decay_env_steps must be positive");
  }

  int num_actions() const { return num_actions_; }
  const EpsilonSchedule& schedule() const { return schedule_; }
  /// The seed the exploration draws use (for host re-evaluation).
  std::uint64_t explore_seed() const { return explore_seed_; }
  /// Greedy mode (evaluation): epsilon is 0 whatever the schedule says.
  void set_greedy(bool greedy) { greedy_ = greedy; }
  bool greedy() const { return greedy_; }
  /// Epsilon used at `global_step` (0 in greedy mode).
  double epsilon(std::int64_t global_step) const { return greedy_ ? 0.0 : schedule_(global_step); }

  /// actions[i] = epsilon-greedy over q(i, :) at `global_step` (host value).
  void select(const ExecSpace& space, const q_view& q, std::int64_t global_step, const action_view& actions) const {
    check(q.extent(0), q.extent(1), actions.extent(0));
    const float eps = static_cast<float>(epsilon(global_step));
    launch(space, "foxrl::ActionSelector::select", q, const_action_view(), step_view(), global_step, eps, actions);
  }

  /// Same with the global step read from the device (epsilon evaluated there).
  void select(const ExecSpace& space, const q_view& q, const step_view& global_step, const action_view& actions) const {
    check(q.extent(0), q.extent(1), actions.extent(0));
    launch(space, "foxrl::ActionSelector::select", q, const_action_view(), global_step, 0, -1.0f, actions);
  }

  /// actions[i] = epsilon-greedy around greedy[i] (already the argmax).
  void select_from_greedy(const ExecSpace& space, const const_action_view& greedy, std::int64_t global_step,
                          const action_view& actions) const {
    check(greedy.extent(0), static_cast<std::size_t>(num_actions_), actions.extent(0));
    const float eps = static_cast<float>(epsilon(global_step));
    launch(space, "foxrl::ActionSelector::select_from_greedy", q_view(), greedy, step_view(), global_step, eps,
           actions);
  }

  /// Launches the selection kernel (public only because CUDA's extended
  /// lambdas may not live in private members). `eps < 0` means: evaluate
  /// the schedule on the device from `device_step`.
  void launch(const ExecSpace& space, const char* label, const q_view& q, const const_action_view& greedy,
              const step_view& device_step, std::int64_t host_step, float eps, const action_view& actions) const {
    const int A = num_actions_;
    const std::uint64_t seed = explore_seed_;
    const EpsilonSchedule schedule = schedule_;
    const bool greedy_mode = greedy_;
    const bool from_q = q.data() != nullptr;
    const int n = static_cast<int>(actions.extent(0));
    Kokkos::parallel_for(
        label, compat::light(Kokkos::RangePolicy<ExecSpace>(space, 0, n)), KOKKOS_LAMBDA(int i) {
          std::int64_t step = host_step;
          float e = eps;
          if (e < 0) {
            step = device_step();
            e = greedy_mode ? 0.0f : static_cast<float>(schedule(step));
          }
          const std::int32_t best = from_q ? kernels::argmax_row(Kokkos::subview(q, i, Kokkos::ALL), A) : greedy(i);
          actions(i) = e > 0 ? kernels::epsilon_greedy_action(seed, i, step, e, best, A) : best;
        });
  }

 private:
  void check(std::size_t rows, std::size_t cols, std::size_t out) const {
    if (static_cast<int>(cols) != num_actions_ || rows != out) {
      throw UsageError("ActionSelector: got Q/greedy input [" + std::to_string(rows) + ", " + std::to_string(cols) +
                       "] and " + std::to_string(out) + " action slots; expected [N, " +
                       std::to_string(num_actions_) + "] and N");
    }
  }

  int num_actions_;
  std::uint64_t explore_seed_;
  EpsilonSchedule schedule_;
  bool greedy_ = false;
};

}  // namespace foxrl
