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

#include "core/compat.hpp"
#include "core/error.hpp"
#include "core/host_mirror.hpp"
#include "kernels/nn/adam.hpp"
#include "kernels/nn/guard_kernels.hpp"
#include "views/nn/guard_state.hpp"
#include "views/nn/parameter_set.hpp"

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace foxrl {

/// Hyperparameters of the guard (TrainConfig's guard_* keys).
struct GuardConfig {
  float spike_factor = 100.0f;  ///< loss > factor x running median: rejected
  int max_bad = 5;              ///< consecutive rejections before a restore
  float lr_decay = 0.5f;        ///< learning-rate factor per restore
  /// Judge spikes against the largest loss of the window rather than its
  /// median. The offline learners set it: a regression on a fixed dataset
  /// can drive its loss toward zero, where a harmless 100x rise over a
  /// tiny median would otherwise be rejected again and again (and the
  /// restores would decay the learning rate); the largest recent loss
  /// keeps the scale of where training came from.
  bool spike_over_window_max = false;

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

/// One buffer the guard snapshots and restores: a name (the trainer's state
/// file calls the copy "guard.snapshot_<name>") and the flat View.
template <class MemorySpace>
struct GuardedBuffer {
  std::string name;
  FlatParams<MemorySpace> view;
  bool nonnegative = false;  ///< its values are >= 0 (a second moment): checked when a state is loaded
};

/// The guard over a list of flat parameter buffers of one length (e.g. a
/// learner's online, target and optimizer moments) plus an optimizer step
/// counter; see the file comment.
template <class ExecSpace>
class TrainingGuard {
 public:
  using memory_space = typename ExecSpace::memory_space;
  using state_view = Kokkos::View<double*, memory_space>;
  using step_view = Kokkos::View<std::int64_t, memory_space>;

  TrainingGuard() = default;

  /// Device state (learning-rate scale 1, counters 0) and a snapshot buffer
  /// for each of `buffers` (all of one length, at most
  /// GuardedStep::max_buffers) and for `step` (may be empty: no counter);
  /// the first snapshot is the caller's (snapshot(..., true)).
  TrainingGuard(const ExecSpace& space, const std::vector<GuardedBuffer<memory_space>>& buffers, const step_view& step,
                const GuardConfig& config)
      : config_(config), live_(buffers), step_(step) {
    config_.validate();
    if (buffers.empty() || buffers.size() > std::size_t(kernels::GuardedStep<memory_space>::max_buffers))
      throw LogicError("foxrl::TrainingGuard: guards 1 to " +
                       std::to_string(kernels::GuardedStep<memory_space>::max_buffers) + " buffers, got " +
                       std::to_string(buffers.size()));
    for (const auto& b : buffers)
      if (b.view.extent(0) != buffers[0].view.extent(0))
        throw LogicError("foxrl::TrainingGuard: buffer '" + b.name + "' has " + std::to_string(b.view.extent(0)) +
                         " elements, '" + buffers[0].name + "' " + std::to_string(buffers[0].view.extent(0)));
    state_ = state_view(Kokkos::view_alloc(space, "foxrl::TrainingGuard::state"), GuardState::count);
    Kokkos::deep_copy(space, Kokkos::subview(state_, int(GuardState::lr_scale)), 1.0);
    for (const auto& b : buffers)
      saved_.push_back({b.name,
                        FlatParams<memory_space>(Kokkos::view_alloc(space, "foxrl::TrainingGuard::snapshot_" + b.name),
                                                 b.view.extent(0)),
                        b.nonnegative});
    snapshot_step_ = step_view(Kokkos::view_alloc(space, "foxrl::TrainingGuard::snapshot_step"));
  }

  /// Queues a snapshot of the guarded buffers and step counter on `space`:
  /// taken on the device only if the last update was applied, so a
  /// snapshot never captures a state the guard has doubts about; `force`
  /// takes it regardless (fresh or loaded weights). One launch; callers
  /// take it at a coarse cadence (the trainer: once per epoch), since
  /// restores are rare and a snapshot copies every guarded buffer.
  void snapshot(const ExecSpace& space, bool force = false) const {
    if (!state_.data()) throw LogicError("foxrl::TrainingGuard::snapshot: a default-constructed guard");
    kernels::guard_snapshot(space, state_, pairs(), step_, snapshot_step_, force);
  }

  /// The decision functor for gradient_sq_norm_then; the loss is read from
  /// metrics(LearnerMetrics::loss), or from loss_source(loss_slot) when
  /// `loss_source` is given.
  kernels::GuardDecision<memory_space> decision(
      const Kokkos::View<float*, memory_space>& metrics,
      const Kokkos::View<const float*, memory_space>& loss_source = Kokkos::View<const float*, memory_space>(),
      int loss_slot = 0) const {
    kernels::GuardDecision<memory_space> d;
    d.state = state_;
    d.metrics = metrics;
    d.loss_source = loss_source;
    d.loss_slot = loss_slot;
    d.adam_step = step_;
    d.snapshot_step = snapshot_step_;
    d.spike_factor = static_cast<double>(config_.spike_factor);
    d.max_bad = config_.max_bad;
    d.lr_decay = static_cast<double>(config_.lr_decay);
    d.spike_over_max = config_.spike_over_window_max;
    return d;
  }

  /// What adam_update needs to carry out the verdict.
  kernels::GuardedStep<memory_space> step(const Kokkos::View<float*, memory_space>& td_errors) const {
    kernels::GuardedStep<memory_space> g = pairs();
    g.state = state_;
    g.td_errors = td_errors;
    return g;
  }

  /// Copies the counters to the host; fences `space` (not for the hot path:
  /// the trainer copies state() alongside its epoch sums instead).
  GuardCounters counters(const ExecSpace& space) const {
    auto h = host_mirror(state_);
    Kokkos::deep_copy(space, h, state_);
    compat::fence(space, "foxrl::TrainingGuard::counters");
    return GuardCounters::from_state(h);
  }

  const state_view& state() const { return state_; }
  /// The last good state: one snapshot buffer per guarded buffer, same
  /// names, same order.
  const std::vector<GuardedBuffer<memory_space>>& snapshot_buffers() const { return saved_; }
  /// The step counter's snapshot.
  const step_view& snapshot_step() const { return snapshot_step_; }
  const GuardConfig& config() const { return config_; }

 private:
  kernels::GuardedStep<memory_space> pairs() const {
    kernels::GuardedStep<memory_space> g;
    g.buffers = static_cast<int>(live_.size());
    g.length = live_.empty() ? 0 : live_[0].view.extent(0);
    for (std::size_t b = 0; b < live_.size(); ++b) {
      g.live[b] = live_[b].view.data();
      g.saved[b] = saved_[b].view.data();
    }
    return g;
  }

  GuardConfig config_;
  state_view state_;
  std::vector<GuardedBuffer<memory_space>> live_, saved_;
  step_view step_, snapshot_step_;

 public:
  /// The guard in a trainer state (guard.*): learning-rate scale, counters,
  /// loss window, and the last good snapshot a later restore returns to
  /// (one tensor per guarded buffer, named after it). `a` is a StateWriter
  /// or a StateReader (which writes the device data behind these handles).
  /// `prefix` starts every tensor name (a learner of several guarded
  /// networks gives each its own).
  template <class Archive>
  void visit_state(Archive& a, const ExecSpace& space, const std::string& prefix = "guard.") const {
    a.tensor(space, prefix + "state", state_);
    for (const auto& b : saved_) a.tensor(space, prefix + "snapshot_" + b.name, b.view);
    a.tensor(space, prefix + "snapshot_adam_step", snapshot_step_);
    if constexpr (!Archive::saving) check_state(a, prefix);
  }

  /// Checks a loaded state before a kernel reads it (the loss window's
  /// length and ring position index the state): verdict one of the
  /// Verdict values, learning-rate scale in [0, 1], counters whole numbers
  /// >= 0, the window's losses finite and its sorted copy ascending,
  /// snapshots finite (>= 0 where the buffer is nonnegative), snapshot
  /// step >= 0.
  template <class Reader>
  void check_state(const Reader& a, const std::string& prefix = "guard.") const {
    const std::string name = prefix + "state";
    const auto s = a.template values<double>(name);
    const auto whole = [](double x, double lo, double hi) { return x >= lo && x <= hi && x == std::floor(x); };
    const auto require = [&](int slot, bool ok, const std::string& what) {
      if (!ok) a.fail_value(name, s.index(slot), s[slot], what);
    };
    require(GuardState::verdict, whole(s[GuardState::verdict], GuardState::apply, GuardState::restore),
            "the verdict must be 0 (apply), 1 (skip) or 2 (restore)");
    require(GuardState::lr_scale, s[GuardState::lr_scale] >= 0.0 && s[GuardState::lr_scale] <= 1.0,
            "the learning-rate scale must be in [0, 1]");
    const double big = 9007199254740992.0;  // 2^53: every count below is exact in a double
    for (int slot : {int(GuardState::consecutive_bad), int(GuardState::rejected), int(GuardState::nonfinite),
                     int(GuardState::spikes), int(GuardState::restores), int(GuardState::snapshots)})
      require(slot, whole(s[slot], 0, big), "a counter must be a whole number >= 0");
    require(GuardState::losses, whole(s[GuardState::losses], 0, GuardState::window),
            "the window's loss count must be a whole number in [0, " + std::to_string(GuardState::window) + "]");
    require(GuardState::ring_next, whole(s[GuardState::ring_next], 0, GuardState::window - 1),
            "the ring position must be a whole number in [0, " + std::to_string(GuardState::window) + ")");
    require(GuardState::weights_nonfinite, whole(s[GuardState::weights_nonfinite], 0, 1), "the flag must be 0 or 1");
    const int losses = static_cast<int>(s[GuardState::losses]);
    for (int k = 0; k < losses; ++k) {
      require(GuardState::ring + k, std::isfinite(s[GuardState::ring + k]), "a loss must be finite");
      const int at = GuardState::sorted + k;
      require(at, std::isfinite(s[at]) && (k == 0 || s[at] >= s[at - 1]),
              "the sorted losses must be finite and ascending");
    }
    for (const auto& b : saved_) {
      const bool nonnegative = b.nonnegative;
      a.template require_each<float>(
          prefix + "snapshot_" + b.name, -1, [&](float x) { return std::isfinite(x) && (!nonnegative || x >= 0.0f); },
          nonnegative ? "must be finite and >= 0" : "must be finite");
    }
    a.template require_each<std::int64_t>(
        prefix + "snapshot_adam_step", -1, [](std::int64_t x) { return x >= 0; }, "must be >= 0");
  }
};

}  // namespace foxrl
