#pragma once
// NStepAccumulator: per-env n-step return accumulation for the experience
// collector. Each push() records one vectorized env step; from the n-th push
// on, output() holds one finished n-step transition per env (the one whose
// window ends with the latest step), ready for ReplayBuffer::insert. Correct
// across terminations (no bootstrap), truncations (bootstrap from the real
// last observation) and same-step auto-resets. One kernel launch per push
// (or a share of the collector's one-team record, push_with).

#include "core/compat.hpp"
#include "core/error.hpp"
#include "kernels/collect/nstep_returns.hpp"
#include "views/collect/transition_batch.hpp"

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstdint>
#include <string>

namespace foxrl {

template <class ExecSpace>
class NStepAccumulator {
 public:
  using memory_space = typename ExecSpace::memory_space;
  using StepRecord = kernels::StepRecord<memory_space>;
  using Record = kernels::NStepRecord<memory_space>;

  NStepAccumulator(const ExecSpace& space, int num_envs, int obs_dim, int n, float gamma) : n_(n), gamma_(gamma) {
    if (num_envs < 1 || obs_dim < 1 || n < 1) {
      throw Error("NStepAccumulator: num_envs, obs_dim and n must be positive (got " + std::to_string(num_envs) + ", " +
                  std::to_string(obs_dim) + ", " + std::to_string(n) + ")");
    }
    auto alloc = [&](const char* label) {
      return Kokkos::view_alloc(space, Kokkos::WithoutInitializing, std::string("foxrl::NStep::") + label);
    };
    ring_.observations = decltype(ring_.observations)(alloc("ring_observations"), n, num_envs, obs_dim);
    ring_.next_observations = decltype(ring_.next_observations)(alloc("ring_next_observations"), n, num_envs, obs_dim);
    ring_.actions = decltype(ring_.actions)(alloc("ring_actions"), n, num_envs);
    ring_.rewards = decltype(ring_.rewards)(alloc("ring_rewards"), n, num_envs);
    ring_.episode_end = decltype(ring_.episode_end)(alloc("ring_episode_end"), n, num_envs);
    out_.observations = decltype(out_.observations)(alloc("observations"), num_envs, obs_dim);
    out_.actions = decltype(out_.actions)(alloc("actions"), num_envs);
    out_.rewards = decltype(out_.rewards)(alloc("rewards"), num_envs);
    out_.next_observations = decltype(out_.next_observations)(alloc("next_observations"), num_envs, obs_dim);
    out_.discounts = decltype(out_.discounts)(alloc("discounts"), num_envs);
    out_.next_is_successor = decltype(out_.next_is_successor)(alloc("next_is_successor"), num_envs);
  }

  /// Records one step of every env. Returns true when output() now holds a
  /// finished transition per env (every push from the n-th on).
  bool push(const ExecSpace& space, const StepRecord& step) {
    return push(space, step, kernels::CounterRead::host(steps_));
  }

  /// The same, with the kernel reading the push count from `steps_before`
  /// (which must equal steps_pushed(): a trainer's device clock).
  bool push(const ExecSpace& space, const StepRecord& step, kernels::CounterRead steps_before) {
    return push_with(step, steps_before, [&](const Record& record) { kernels::record_step_and_emit(space, record); });
  }

  /// The same, with `launch(record)` launching the push's record (a
  /// kernels::NStepRecord) where the caller wants it: the collector runs it
  /// in one launch with the episode statistics (kernels/collect/record_step.hpp).
  template <class Launch>
  bool push_with(const StepRecord& step, kernels::CounterRead steps_before, Launch&& launch) {
    if (aliased_ && !same_views(step, aliased_step_)) {
      throw Error("NStepAccumulator: a push with other Views than the step it aliases (alias_one_step)");
    }
    const Record record(ring_, step, out_, steps_before, gamma_, will_emit(), aliased_);
    launch(record);
    ++steps_;
    return record.emit;
  }

  /// For n = 1: every later push passes the Views of `step` (a collector's
  /// buffers, written anew by each env step), so the ring's only row and
  /// output()'s observations, next observations and actions can be those
  /// Views instead of copies, and a push writes only the episode-end flags
  /// and the transition's reward, discount and successor flag: the same
  /// values, the same trainer-state bytes, a launch's copy fewer. The Views
  /// must outlive the accumulator, and output() holds the step's transitions
  /// only until the step's Views are written again.
  void alias_one_step(const StepRecord& step) {
    const int envs = static_cast<int>(ring_.actions.extent(1));
    const int dim = static_cast<int>(ring_.observations.extent(2));
    if (n_ != 1) throw Error("NStepAccumulator::alias_one_step: needs n = 1 (got " + std::to_string(n_) + ")");
    if (static_cast<int>(step.observations.extent(0)) != envs || static_cast<int>(step.observations.extent(1)) != dim ||
        static_cast<int>(step.next_observations.extent(0)) != envs ||
        static_cast<int>(step.next_observations.extent(1)) != dim || static_cast<int>(step.actions.extent(0)) != envs ||
        static_cast<int>(step.rewards.extent(0)) != envs) {
      throw Error("NStepAccumulator::alias_one_step: the step's Views do not match " + std::to_string(envs) +
                  " envs of " + std::to_string(dim) + " components");
    }
    // The step's Views are read-only to the record; the ring's restore on
    // resume writes through these (the saved step, the same bytes).
    ring_.observations = decltype(ring_.observations)(const_cast<float*>(step.observations.data()), 1, envs, dim);
    ring_.next_observations =
        decltype(ring_.next_observations)(const_cast<float*>(step.next_observations.data()), 1, envs, dim);
    ring_.actions = decltype(ring_.actions)(const_cast<std::int32_t*>(step.actions.data()), 1, envs);
    ring_.rewards = decltype(ring_.rewards)(const_cast<float*>(step.rewards.data()), 1, envs);
    out_.observations = decltype(out_.observations)(const_cast<float*>(step.observations.data()), envs, dim);
    out_.next_observations =
        decltype(out_.next_observations)(const_cast<float*>(step.next_observations.data()), envs, dim);
    out_.actions = decltype(out_.actions)(const_cast<std::int32_t*>(step.actions.data()), envs);
    aliased_step_ = step;
    aliased_ = true;
  }
  /// Whether alias_one_step() made the ring and output the step's Views.
  bool aliases_step() const noexcept { return aliased_; }
  /// The record's threads per env (kernels::NStepRecord::elements_per_env).
  int record_elements_per_env() const noexcept { return aliased_ ? 1 : static_cast<int>(ring_.observations.extent(2)); }

  /// Whether the next push finishes a transition per env.
  bool will_emit() const noexcept { return steps_ + 1 >= n_; }
  /// Counts a push whose launch ran inside a replayed graph.
  void count_replayed_push() noexcept { ++steps_; }

  const TransitionBatch<memory_space>& output() const noexcept { return out_; }
  int n() const noexcept { return n_; }
  float gamma() const noexcept { return gamma_; }
  std::int64_t steps_pushed() const noexcept { return steps_; }
  /// Restart the windows (e.g. after all envs were reset for evaluation).
  void clear() noexcept { steps_ = 0; }
  /// The window of the last n steps (saved and restored on resume).
  const kernels::NStepRing<memory_space>& ring() const noexcept { return ring_; }
  /// Sets the push count after ring() was restored (resume).
  void restore_steps_pushed(std::int64_t steps) noexcept { steps_ = steps; }

 private:
  int n_;
  float gamma_;
  std::int64_t steps_ = 0;
  kernels::NStepRing<memory_space> ring_;
  TransitionBatch<memory_space> out_;
  bool aliased_ = false;
  StepRecord aliased_step_;

  static bool same_views(const StepRecord& a, const StepRecord& b) {
    return a.observations.data() == b.observations.data() && a.actions.data() == b.actions.data() &&
           a.rewards.data() == b.rewards.data() && a.terminated.data() == b.terminated.data() &&
           a.truncated.data() == b.truncated.data() && a.next_observations.data() == b.next_observations.data();
  }

 public:
  /// The n-step windows in a trainer state (nstep.*); the push count is
  /// host state the collector saves. `a` is a StateWriter or StateReader;
  /// loading checks the rows the saved run wrote (min(steps_pushed, n):
  /// the others were never written and are never read): actions below
  /// `num_actions`, rewards finite, episode-end flags two bits.
  template <class Archive>
  void visit_state(Archive& a, const ExecSpace& space, std::int64_t steps_pushed, int num_actions) {
    a.tensor(space, "nstep.observations", ring_.observations);
    a.tensor(space, "nstep.next_observations", ring_.next_observations);
    a.tensor(space, "nstep.actions", ring_.actions);
    a.tensor(space, "nstep.rewards", ring_.rewards);
    a.tensor(space, "nstep.episode_end", ring_.episode_end);
    if constexpr (!Archive::saving) {
      const std::int64_t written = (steps_pushed < n_ ? steps_pushed : n_) * std::int64_t(ring_.actions.extent(1));
      a.template require_each<std::int32_t>(
          "nstep.actions", written, [&](std::int32_t x) { return x >= 0 && x < num_actions; },
          "must be an action in [0, " + std::to_string(num_actions) + ")");
      a.template require_each<float>(
          "nstep.rewards", written, [](float x) { return std::isfinite(x); }, "must be finite");
      a.template require_each<std::uint8_t>(
          "nstep.episode_end", written, [](std::uint8_t x) { return x <= 3; },
          "must be 0-3 (bit 0 terminated, bit 1 truncated)");
    }
  }
};

}  // namespace foxrl
