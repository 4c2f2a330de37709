#pragma once
// The training guard's device side: the per-update decision (run by the one
// thread of the gradient-norm kernel that holds the totals, so it costs no
// launch) and the snapshot copy. The optimizer kernel carries out the
// verdict (kernels/nn/adam.hpp, GuardedStep).

#include "core/compat.hpp"
#include "kernels/nn/adam.hpp"
#include "views/agents/dqn/learner_metrics.hpp"
#include "views/nn/guard_state.hpp"
#include "views/nn/parameter_set.hpp"

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>

namespace foxrl {
namespace kernels {

/// The decision on one update, called once per update with the squared
/// gradient norm and the count of non-finite online parameters (see
/// gradient_sq_norm_then); metrics(loss) already holds the update's loss.
///
/// - non-finite loss, gradient or weights, or (once the window holds
///   GuardState::min_losses losses) loss > spike_factor x running median:
///   the update is rejected and counted;
/// - max_bad consecutive rejections, or non-finite weights (skipping cannot
///   repair those; nothing but a restore can): restore the snapshot, scale
///   the learning rate by lr_decay and empty the loss window (its losses
///   describe the weights just thrown away);
/// - otherwise the loss joins the window.
/// The loss kernel already advanced the Adam step counter; a rejection
/// takes that back (skip) or sets the snapshot's counter (restore).
template <class MemorySpace>
struct GuardDecision {
  Kokkos::View<double*, MemorySpace> state;  ///< GuardState slots
  Kokkos::View<float*, MemorySpace> metrics;
  Kokkos::View<std::int64_t, MemorySpace> adam_step;      ///< the optimizer's step counter (may be empty)
  Kokkos::View<std::int64_t, MemorySpace> snapshot_step;  ///< its snapshot
  double spike_factor = 100.0;
  int max_bad = 5;
  double lr_decay = 0.5;
  /// Where the update's loss is read when set: slot `loss_slot` of a view
  /// the learner's loss kernel writes (an offline learner's OfflineMetrics,
  /// one slot per network); unset: metrics(LearnerMetrics::loss).
  Kokkos::View<const float*, MemorySpace> loss_source;
  int loss_slot = 0;
  /// Spikes are judged against the window's largest loss instead of its
  /// median (the offline learners: see GuardConfig::spike_over_window_max).
  bool spike_over_max = false;

  /// What judge() leaves to push_loss: an accepted update's loss joins
  /// the window of `losses` losses.
  struct Judgement {
    bool push = false;
    double loss = 0.0;
    int losses = 0;
  };

  KOKKOS_INLINE_FUNCTION void operator()(float grad_sq, float nonfinite_params) const {
    const Judgement j = judge(grad_sq, nonfinite_params);
    if (j.push) push_loss(j.loss, j.losses);
  }

  /// The decision but the window's update: the verdict, the counters, the
  /// step counter; an accepted update's loss is left to push_loss (the
  /// fused CUDA update pushes it with a warp, kernels/cuda/).
  KOKKOS_INLINE_FUNCTION Judgement judge(float grad_sq, float nonfinite_params) const {
    metrics(LearnerMetrics::grad_sq) = grad_sq;
    const float loss = loss_source.data() != nullptr ? loss_source(loss_slot) : metrics(LearnerMetrics::loss);
    const bool weights_bad = nonfinite_params > 0.0f;
    const bool nonfinite = weights_bad || !math::isfinite(loss) || !math::isfinite(grad_sq);
    // Tells the Adam launch whether non-finite td errors are the rows' own
    // (quarantine them) or the weights' (every row is NaN: keep priorities).
    state(GuardState::weights_nonfinite) = weights_bad ? 1.0 : 0.0;
    const int n = static_cast<int>(state(GuardState::losses));
    bool spike = false;
    // A zero median (losses exactly 0) gives no scale to compare against.
    if (!nonfinite && n >= GuardState::min_losses) {
      const double reference = spike_over_max ? state(GuardState::sorted + n - 1) : running_median(n);
      spike = reference > 0.0 && static_cast<double>(loss) > spike_factor * reference;
    }
    const bool bad = nonfinite || spike;
    metrics(LearnerMetrics::rejected) = bad ? 1.0f : 0.0f;
    Judgement j;
    if (!bad) {
      state(GuardState::consecutive_bad) = 0.0;
      state(GuardState::verdict) = GuardState::apply;
      j.push = true;
      j.loss = static_cast<double>(loss);
      j.losses = n;
      return j;
    }
    state(GuardState::rejected) += 1.0;
    if (nonfinite)
      state(GuardState::nonfinite) += 1.0;
    else
      state(GuardState::spikes) += 1.0;
    const double streak = state(GuardState::consecutive_bad) + 1.0;
    if (weights_bad || streak >= static_cast<double>(max_bad)) {
      state(GuardState::verdict) = GuardState::restore;
      state(GuardState::consecutive_bad) = 0.0;
      state(GuardState::restores) += 1.0;
      state(GuardState::lr_scale) *= lr_decay;
      state(GuardState::losses) = 0.0;
      state(GuardState::ring_next) = 0.0;
      if (adam_step.data() != nullptr) adam_step() = snapshot_step();
    } else {
      state(GuardState::verdict) = GuardState::skip;
      state(GuardState::consecutive_bad) = streak;
      if (adam_step.data() != nullptr) adam_step() -= 1;
    }
    return j;
  }

  /// Median of the `n` window losses (mean of the middle two for even n).
  KOKKOS_INLINE_FUNCTION double running_median(int n) const {
    const double hi = state(GuardState::sorted + n / 2);
    return n % 2 == 1 ? hi : 0.5 * (state(GuardState::sorted + n / 2 - 1) + hi);
  }

  /// Appends `x` to the ring (evicting the oldest of a full window) and
  /// keeps the sorted copy sorted. The sorted values are staged in a local
  /// array: one round of independent loads instead of a chain of dependent
  /// global-memory round trips for the single thread doing this.
  KOKKOS_INLINE_FUNCTION void push_loss(double x, int n) const {
    constexpr int W = GuardState::window;
    double s[W];
    for (int k = 0; k < n; ++k) s[k] = state(GuardState::sorted + k);
    const int next = static_cast<int>(state(GuardState::ring_next));
    int m = n;
    if (n == W) {
      const double old = state(GuardState::ring + next);
      int k = 0;
      while (k < m - 1 && s[k] != old) ++k;
      for (; k < m - 1; ++k) s[k] = s[k + 1];
      --m;
    }
    int j = m;
    while (j > 0 && s[j - 1] > x) {
      s[j] = s[j - 1];
      --j;
    }
    s[j] = x;
    ++m;
    for (int k = 0; k < m; ++k) state(GuardState::sorted + k) = s[k];
    state(GuardState::ring + next) = x;
    state(GuardState::ring_next) = static_cast<double>((next + 1) % W);
    state(GuardState::losses) = static_cast<double>(m);
  }
};

/// guard_snapshot's kernel: element i of every guarded buffer into its
/// snapshot and, by thread 0, the step counter and the snapshot count
/// (unless `force`, only when no rejection streak is under way). A named
/// functor, not a KOKKOS_LAMBDA (see RecordStepInOneTeam in
/// kernels/collect/record_step.hpp).
template <class MemorySpace>
struct GuardSnapshotKernel {
  Kokkos::View<double*, MemorySpace> state;
  GuardedStep<MemorySpace> pairs;
  Kokkos::View<std::int64_t, MemorySpace> step, snap_step;
  bool count_step, force;
  KOKKOS_INLINE_FUNCTION void operator()(std::size_t i) const {
    if (!force && state(GuardState::consecutive_bad) != 0.0) return;
    for (int b = 0; b < pairs.buffers; ++b) pairs.saved[b][i] = pairs.live[b][i];
    if (i == 0) {
      if (count_step) snap_step() = step();
      state(GuardState::snapshots) += 1.0;
    }
  }
};

/// Copies every guarded buffer (`pairs.live[b]` -> `pairs.saved[b]`) and
/// the step counter into the snapshot, on the device: unless `force`, only
/// when the last update was applied (or restored), i.e. its weights, loss
/// and gradient were finite and no rejection streak is under way; otherwise
/// the previous snapshot stays. One launch for all buffers.
template <class ExecSpace, class MemorySpace>
void guard_snapshot(const ExecSpace& space, const Kokkos::View<double*, MemorySpace>& state,
                    const GuardedStep<MemorySpace>& pairs, const Kokkos::View<std::int64_t, MemorySpace>& step,
                    const Kokkos::View<std::int64_t, MemorySpace>& snap_step, bool force) {
  const std::size_t n = pairs.length;
  const bool count_step = step.data() != nullptr;
  Kokkos::parallel_for("foxrl::kernels::guard_snapshot", Kokkos::RangePolicy<ExecSpace>(space, 0, n),
                       GuardSnapshotKernel<MemorySpace>{state, pairs, step, snap_step, count_step, force});
}

/// finite_copy's kernel: target(i) = online(i) if online(i) is finite.
template <class MemorySpace>
struct FiniteCopyKernel {
  FlatParams<MemorySpace> online, target;
  KOKKOS_INLINE_FUNCTION void operator()(std::size_t i) const {
    const float x = online(i);
    if (math::isfinite(x)) target(i) = x;
  }
};

/// target(i) = online(i) where online(i) is finite (a hard copy that cannot
/// carry a NaN or Inf of the online network into the target).
template <class ExecSpace, class MemorySpace>
void finite_copy(const ExecSpace& space, const FlatParams<MemorySpace>& online, const FlatParams<MemorySpace>& target) {
  Kokkos::parallel_for("foxrl::kernels::finite_copy", Kokkos::RangePolicy<ExecSpace>(space, 0, online.extent(0)),
                       FiniteCopyKernel<MemorySpace>{online, target});
}

}  // namespace kernels
}  // namespace foxrl
