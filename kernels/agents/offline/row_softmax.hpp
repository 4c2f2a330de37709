#pragma once
// Per-row helpers of the offline losses over a [B, A] head: the row max,
// logsumexp stabilised by it (no overflow for logits of any finite size),
// the greedy action, and the smaller of two twin Q-values. Device and host
// callable; NaN inputs give NaN results (never a silently finite loss that
// a training guard could not see).

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

/// log sum_j exp(m(i, j)) as max + log sum_j exp(m(i, j) - max): every
/// exponent is <= 0 and the sum is in [1, n].
template <class Matrix>
KOKKOS_INLINE_FUNCTION float row_logsumexp(const Matrix& m, int i, int n, float max) {
  float s = 0.0f;
  for (int j = 0; j < n; ++j) s += math::exp(m(i, j) - max);
  return max + math::log(s);
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
