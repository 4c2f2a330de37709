#pragma once
// NoPerEnvStep: stands for an env whose step is not one per-env functor (the
// market's step and observation launches), where a caller could otherwise
// run the step inside a launch of its own (a learner's greedy forward,
// kernels::ChooseThenStep). Here, not in kernels/envs/, so that a learner
// names it without including an env's kernels.

namespace foxrl::kernels {

struct NoPerEnvStep {};

}  // namespace foxrl::kernels
