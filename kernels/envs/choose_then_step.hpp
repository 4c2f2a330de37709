#pragma once
// ChooseThenStep: one env step whose action each thread chooses itself
// before taking it. The collector's epsilon-greedy choice
// (kernels::EpsilonGreedyChoice, which also records the action) and the
// env's step then share one launch instead of two, one node fewer on the
// iteration's chain; the action passes in a register, so nothing reads back
// what the same launch wrote.

#include "kernels/core/no_per_env_step.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace foxrl::kernels {

/// `Choose`: std::int32_t operator()(int env); `Step`: an env's step
/// functor with step_with(int env, std::int32_t action).
template <class Choose, class Step>
struct ChooseThenStep {
  Choose choose;
  Step step;

  KOKKOS_INLINE_FUNCTION void operator()(int i) const { step.step_with(i, choose(i)); }
};

}  // namespace foxrl::kernels
