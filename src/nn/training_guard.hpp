#pragma once
// TrainingGuard: keeps a learner's training from being wrecked by one bad
// update. On the device, per update and without a launch of its own, it
// rejects updates with a non-finite loss, gradient or weights or a loss
// spike over the running median of recent losses: a rejected update leaves
// weights, Adam moments and step counter as they were. After max_bad
// consecutive rejections (at once for non-finite weights) it restores the
// last good snapshot and scales the learning rate by lr_decay. The host
// never reads anything back to make these decisions; it reads the counters
// when it logs. docs/design.md describes the design.

#include "kernels/nn/adam.hpp"
#include "core/compat.hpp"
#include "core/error.hpp"
#include "views/nn/guard_state.hpp"
#include "kernels/nn/guard_kernels.hpp"
#include "views/nn/weights.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <string>

namespace foxrl {

/// Hyperparameters of the guard (TrainConfig's guard_* keys).
struct GuardConfig {
  float spike_factor = 100.0f;  ///< loss > factor x running median: rejected
  int max_bad = 5;              ///< consecutive rejections before a restore
  float lr_decay = 0.5f;        ///< learning-rate factor per restore

  void validate() const {
    auto bad = [](const std::string& field, const std::string& why) {
      throw UsageError("foxrl::GuardConfig: " + field + " " + why);
    };
    if (!(spike_factor >= 1.0f)) bad("spike_factor", "must be >= 1, got " + std::to_string(spike_factor));
    if (max_bad < 1) bad("max_bad", "must be >= 1, got " + std::to_string(max_bad));
    if (!(lr_decay >= 0.0f && lr_decay <= 1.0f)) bad("lr_decay", "must be in [0, 1], got " + std::to_string(lr_decay));
  }
};

/// The guard's counters, as the host sees them.
struct GuardCounters {
  std::int64_t rejected = 0;         ///< updates rejected (non-finite or spike)
  std::int64_t nonfinite = 0;        ///< of those: non-finite loss, gradient or weights
  std::int64_t spikes = 0;           ///< of those: loss spikes
  std::int64_t restores = 0;         ///< snapshot restores
  std::int64_t snapshots = 0;        ///< snapshots taken, the initial one included
  std::int64_t consecutive_bad = 0;  ///< current rejection streak
  double lr_scale = 1.0;             ///< factor on the configured learning rate
  int verdict = GuardState::apply;   ///< of the last update

  /// From a host copy of the state View.
  template <class HostView>
  static GuardCounters from_state(const HostView& s) {
    GuardCounters c;
    c.rejected = static_cast<std::int64_t>(s(GuardState::rejected));
    c.nonfinite = static_cast<std::int64_t>(s(GuardState::nonfinite));
    c.spikes = static_cast<std::int64_t>(s(GuardState::spikes));
    c.restores = static_cast<std::int64_t>(s(GuardState::restores));
    c.snapshots = static_cast<std::int64_t>(s(GuardState::snapshots));
    c.consecutive_bad = static_cast<std::int64_t>(s(GuardState::consecutive_bad));
    c.lr_scale = s(GuardState::lr_scale);
    c.verdict = static_cast<int>(s(GuardState::verdict));
    return c;
  }
};

template <class ExecSpace>
class TrainingGuard {
 public:
  using memory_space = typename ExecSpace::memory_space;
  using state_view = Kokkos::View<double*, memory_space>;

  TrainingGuard() = default;

  /// Device state (learning-rate scale 1, counters 0) and snapshot buffers
  /// for `layout`; the first snapshot is the caller's (snapshot(..., true)).
  TrainingGuard(const ExecSpace& space, const NetworkLayout& layout, const GuardConfig& config) : config_(config) {
    config_.validate();
    state_ = state_view(Kokkos::view_alloc(space, "foxrl::TrainingGuard::state"), GuardState::count);
    Kokkos::deep_copy(space, Kokkos::subview(state_, int(GuardState::lr_scale)), 1.0);
    snapshot_.layout = layout;
    auto flat = [&](const char* name) {
      return FlatParams<memory_space>(Kokkos::view_alloc(space, std::string("foxrl::TrainingGuard::") + name),
                                      layout.total);
    };
    snapshot_.online = flat("snapshot_online");
    snapshot_.target = flat("snapshot_target");
    snapshot_.adam_m = flat("snapshot_adam_m");
    snapshot_.adam_v = flat("snapshot_adam_v");
    snapshot_.adam_step =
        Kokkos::View<std::int64_t, memory_space>(Kokkos::view_alloc(space, "foxrl::TrainingGuard::snapshot_step"));
  }

  /// Queues a snapshot of `weights` (online, target, Adam state) on
  /// `space`: taken on the device only if the last update was applied, so
  /// a snapshot never captures a state the guard has doubts about; `force`
  /// takes it regardless (fresh or loaded weights). One launch; callers
  /// take it at a coarse cadence (the trainer: once per epoch), since
  /// restores are rare and a snapshot copies four parameter buffers.
  void snapshot(const ExecSpace& space, const Weights<memory_space>& weights, bool force = false) const {
    kernels::guard_snapshot(space, state_, weights, snapshot_, force);
  }

  /// The decision functor for gradient_sq_norm_then.
  kernels::GuardDecision<memory_space> decision(const Kokkos::View<float*, memory_space>& metrics,
                                                const Kokkos::View<std::int64_t, memory_space>& adam_step) const {
    kernels::GuardDecision<memory_space> d;
    d.state = state_;
    d.metrics = metrics;
    d.adam_step = adam_step;
    d.snapshot_step = snapshot_.adam_step;
    d.spike_factor = static_cast<double>(config_.spike_factor);
    d.max_bad = config_.max_bad;
    d.lr_decay = static_cast<double>(config_.lr_decay);
    return d;
  }

  /// What adam_update needs to carry out the verdict.
  kernels::GuardedStep<memory_space> step(const Kokkos::View<float*, memory_space>& td_errors) const {
    kernels::GuardedStep<memory_space> g;
    g.state = state_;
    g.snapshot_online = snapshot_.online;
    g.snapshot_target = snapshot_.target;
    g.snapshot_m = snapshot_.adam_m;
    g.snapshot_v = snapshot_.adam_v;
    g.td_errors = td_errors;
    return g;
  }

  /// Copies the counters to the host; fences `space` (not for the hot path:
  /// the trainer copies state() alongside its epoch sums instead).
  GuardCounters counters(const ExecSpace& space) const {
    auto h = Kokkos::create_mirror_view(Kokkos::HostSpace(), state_);
    Kokkos::deep_copy(space, h, state_);
    compat::fence(space, "foxrl::TrainingGuard::counters");
    return GuardCounters::from_state(h);
  }

  const state_view& state() const { return state_; }
  /// The last good state (grads unallocated).
  const Weights<memory_space>& snapshot_weights() const { return snapshot_; }
  const GuardConfig& config() const { return config_; }

 private:
  GuardConfig config_;
  state_view state_;
  Weights<memory_space> snapshot_;

 public:
  /// The guard in a trainer state (guard.*): learning-rate scale, counters,
  /// loss window, and the last good snapshot a later restore returns to.
  /// `a` is a StateWriter or a StateReader (which writes the device data
  /// behind these handles).
  template <class Archive>
  void visit_state(Archive& a, const ExecSpace& space) const {
    a.tensor(space, "guard.state", state_);
    a.tensor(space, "guard.snapshot_online", snapshot_.online);
    a.tensor(space, "guard.snapshot_target", snapshot_.target);
    a.tensor(space, "guard.snapshot_adam_m", snapshot_.adam_m);
    a.tensor(space, "guard.snapshot_adam_v", snapshot_.adam_v);
    a.tensor(space, "guard.snapshot_adam_step", snapshot_.adam_step);
  }
};

}  // namespace foxrl
