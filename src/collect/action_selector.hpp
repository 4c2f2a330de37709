#pragma once
// ActionSelector: epsilon-greedy over Q-values (or precomputed greedy
// actions), one launch per call. Env i's draw at global step g is keyed by
// (seed, i, g), so a seed gives the same actions on every backend and the
// host can recompute them (kernels::epsilon_greedy_action).

#include "core/compat.hpp"
#include "core/error.hpp"
#include "core/validate.hpp"
#include "kernels/collect/epsilon_greedy.hpp"
#include "kernels/core/counter_rng.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <string>

namespace foxrl {

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
    require_positive("ActionSelector", "num_actions", num_actions);
    require_positive("foxrl::EpsilonSchedule", "decay_env_steps", schedule.decay_env_steps);
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
    launch(space, "foxrl::ActionSelector::select", q, const_action_view(), kernels::CounterRead::host(global_step), eps,
           actions);
  }

  /// Same with the global step read from the device (epsilon evaluated there).
  void select(const ExecSpace& space, const q_view& q, const step_view& global_step, const action_view& actions) const {
    check(q.extent(0), q.extent(1), actions.extent(0));
    launch(space, "foxrl::ActionSelector::select", q, const_action_view(), kernels::CounterRead{global_step.data(), 0},
           -1.0f, actions);
  }

  /// actions[i] = epsilon-greedy around greedy[i] (already the argmax).
  void select_from_greedy(const ExecSpace& space, const const_action_view& greedy, std::int64_t global_step,
                          const action_view& actions) const {
    check(greedy.extent(0), static_cast<std::size_t>(num_actions_), actions.extent(0));
    const float eps = static_cast<float>(epsilon(global_step));
    launch(space, "foxrl::ActionSelector::select_from_greedy", q_view(), greedy,
           kernels::CounterRead::host(global_step), eps, actions);
  }

  /// Same with the global step read when the kernel runs (a trainer's device
  /// clock; epsilon evaluated there, the same bits as on the host).
  void select_from_greedy(const ExecSpace& space, const const_action_view& greedy, kernels::CounterRead global_step,
                          const action_view& actions) const {
    check(greedy.extent(0), static_cast<std::size_t>(num_actions_), actions.extent(0));
    launch(space, "foxrl::ActionSelector::select_from_greedy", q_view(), greedy, global_step, -1.0f, actions);
  }

  /// select_from_greedy's per-env choice as a functor, for a launch that
  /// takes the action in the same thread (VectorEnv::step_choosing): the
  /// same actions, written to `actions`, one launch fewer. The global step
  /// is a host value (epsilon evaluated on the host, as select_from_greedy
  /// does) or one read when the kernel runs (epsilon evaluated there).
  kernels::EpsilonGreedyChoice<memory_space> greedy_choice(const const_action_view& greedy, std::int64_t global_step,
                                                           const action_view& actions) const {
    auto c = greedy_choice(greedy, kernels::CounterRead::host(global_step), actions);
    c.eps = static_cast<float>(epsilon(global_step));
    return c;
  }
  kernels::EpsilonGreedyChoice<memory_space> greedy_choice(const const_action_view& greedy,
                                                           kernels::CounterRead global_step,
                                                           const action_view& actions) const {
    check(greedy.extent(0), static_cast<std::size_t>(num_actions_), actions.extent(0));
    return {greedy, actions, global_step, -1.0f, schedule_, greedy_, explore_seed_, num_actions_};
  }

  /// Launches the selection kernel (kernels::select_actions) unchecked.
  /// `eps < 0` means: evaluate the schedule on the device at `global_step`.
  void launch(const ExecSpace& space, const char* label, const q_view& q, const const_action_view& greedy,
              kernels::CounterRead global_step, float eps, const action_view& actions) const {
    kernels::select_actions(space, label, q, greedy, global_step, eps, num_actions_, explore_seed_, schedule_, greedy_,
                            actions);
  }

 private:
  void check(std::size_t rows, std::size_t cols, std::size_t out) const {
    if (static_cast<int>(cols) != num_actions_ || rows != out) {
      throw LogicError("ActionSelector: got Q/greedy input [" + std::to_string(rows) + ", " + std::to_string(cols) +
                       "] and " + std::to_string(out) + " action slots; expected [N, " + std::to_string(num_actions_) +
                       "] and N");
    }
  }

  int num_actions_;
  std::uint64_t explore_seed_;
  EpsilonSchedule schedule_;
  bool greedy_ = false;
};

}  // namespace foxrl
