#pragma once
// The dueling combination of a head output row [V, A_1 .. A_A]:
// Q_j = V + A_j - mean(A), and its greedy action. One definition for the
// loss, the inference kernels and the head kernel's fused greedy action, so
// that every argmax agrees bit for bit.

#include <Kokkos_Core.hpp>

namespace foxrl {
namespace kernels {

/// Q_j = V + A_j - mean(A); the one formula both the learner and the action
/// selector use, so their argmax agree.
KOKKOS_INLINE_FUNCTION float dueling_q(float v, float a_j, float mean_a) { return (v + a_j) - mean_a; }

/// mean_j head(row, 1 + j) for a [rows, 1 + A] head output.
template <class Head>
KOKKOS_INLINE_FUNCTION float advantage_mean(const Head& head, int row, int num_actions) {
  float s = 0.0f;
  for (int j = 0; j < num_actions; ++j) s += head(row, 1 + j);
  return s / static_cast<float>(num_actions);
}

/// argmax_j Q(row, j) of a head output, lowest index on ties.
template <class Head>
KOKKOS_INLINE_FUNCTION int greedy_action(const Head& head, int row, int num_actions, float mean_a) {
  const float v = head(row, 0);
  int best = 0;
  float best_q = dueling_q(v, head(row, 1), mean_a);
  for (int j = 1; j < num_actions; ++j) {
    const float q = dueling_q(v, head(row, 1 + j), mean_a);
    if (q > best_q) {
      best_q = q;
      best = j;
    }
  }
  return best;
}

}  // namespace kernels
}  // namespace foxrl
