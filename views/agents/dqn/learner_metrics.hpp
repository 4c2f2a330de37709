#pragma once
// Slots of the learner's device metrics View (float[LearnerMetrics::count]):
// written by the train step's kernels, copied to the host once per log
// interval by whoever reports them.

namespace foxrl {

/// The td error a learner hands to ReplayBuffer::update_priorities for a row
/// whose priority must not change (a rejected update's healthy rows). Any
/// negative value means that; NaN or +inf means the transition's own target
/// is broken (e.g. a non-finite reward) and quarantines it at priority 0.
constexpr float keep_priority_td = -1.0f;

struct LearnerMetrics {
  enum Slot : int {
    loss = 0,         ///< mean over the batch of w_i * loss_i
    mean_q = 1,       ///< mean over the batch of Q_online(s, a)
    mean_abs_td = 2,  ///< mean over the batch of |Q_online(s, a) - y|
    grad_norm = 3,    ///< global L2 norm of the gradient, before clipping
    grad_sq = 4,      ///< its square (the reduction's result; internal)
    rejected = 5,     ///< 1 if the training guard rejected the update (nothing applied), else 0
    count = 6
  };
};

}  // namespace foxrl
