#pragma once
// Slots of the training guard's device state (double[GuardState::count]):
// the verdict on the current update, the learning-rate scale, the counters,
// and the recent losses of applied updates (insertion-ordered ring plus the
// same values kept sorted, so the running median is two loads). Written by
// one device thread per update (kernels/nn/guard_kernels.hpp); read by the
// optimizer kernel and copied to the host when a run logs.

namespace foxrl {

struct GuardState {
  /// Losses of applied updates the running median covers.
  static constexpr int window = 32;
  /// The spike test starts once this many losses are in the window (a median
  /// of very few losses says little about the next one).
  static constexpr int min_losses = 16;

  /// What the optimizer kernel does with the current update.
  enum Verdict : int {
    apply = 0,    ///< a normal optimizer step
    skip = 1,     ///< rejected: weights, Adam moments and step counter stay as they are
    restore = 2,  ///< rejected, and the last good snapshot replaces the learner's state
  };

  enum Slot : int {
    verdict = 0,             ///< Verdict of the current (last) update
    lr_scale = 1,            ///< factor on the configured learning rate (guard_lr_decay per restore)
    consecutive_bad = 2,     ///< rejected updates since the last applied one or restore
    rejected = 3,            ///< rejected updates since construction (non-finite or spike)
    nonfinite = 4,           ///< of those: non-finite loss, gradient or weights
    spikes = 5,              ///< of those: loss above spike_factor x running median
    restores = 6,            ///< snapshot restores
    snapshots = 7,           ///< snapshots taken (the first at construction)
    losses = 8,              ///< losses in the window (<= window)
    ring_next = 9,           ///< ring position the next loss goes to
    weights_nonfinite = 10,  ///< 1 when the current update found non-finite online weights
    ring = 11,               ///< [window] losses in insertion order
    sorted = ring + window,  ///< [losses] the same losses, ascending
    count = sorted + window
  };
};

}  // namespace foxrl
