#pragma once
// Per-row helpers of the offline losses over a [B, A] head: the row max,
// logsumexp relative to it (no overflow for logits of any finite size),
// the greedy action, and the smaller of two twin Q-values. Device and host
// callable. nan_min and row_max keep a NaN input (fmin and a plain compare
// would drop it), so a broken head gives a NaN loss that a training guard
// sees rather than a silently finite one.

#include "core/compat.hpp"

#include <Kokkos_Core.hpp>

namespace foxrl {
namespace kernels {

/// The smaller of a and b; NaN if either is NaN (fmin would drop it).
KOKKOS_INLINE_FUNCTION float nan_min(float a, float b) { return (a < b || a != a) ? a : b; }

/// max over j < n of m(i, j); NaN if any entry is NaN.
template <class Matrix>
KOKKOS_INLINE_FUNCTION float row_max(const Matrix& m, int i, int n) {
  float best = m(i, 0);
  for (int j = 1; j < n; ++j) {
    const float x = m(i, j);
    if (x > best || x != x) best = x;
    if (best != best) break;
  }
  return best;
}

/// log sum_j exp(m(i, j) - max), max the row's max: every exponent is <= 0
/// and the sum is in [1, n]. Callers form log softmax as
/// (m(i, j) - max) - this, never max + this: the difference of two floats
/// of one row is exact near the max (Sterbenz), whereas a logsumexp of
/// large logits (say 1e4, a float ulp of 1e-3) would round away the
/// probabilities' leading digits.
template <class Matrix>
KOKKOS_INLINE_FUNCTION float row_log_sum_exp_shifted(const Matrix& m, int i, int n, float max) {
  float s = 0.0f;
  for (int j = 0; j < n; ++j) s += math::exp(m(i, j) - max);
  return math::log(s);
}

/// The first j with the row's largest entry (the greedy action).
template <class Matrix>
KOKKOS_INLINE_FUNCTION int row_argmax(const Matrix& m, int i, int n) {
  int best = 0;
  for (int j = 1; j < n; ++j)
    if (m(i, j) > m(i, best)) best = j;
  return best;
}

}  // namespace kernels
}  // namespace foxrl
