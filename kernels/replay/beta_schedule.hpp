#pragma once
// The importance-sampling exponent of prioritized replay: a fixed value, or
// annealed linearly towards 1 over a number of updates (the PER paper's
// schedule). The trainer evaluates it on the host for its logs and the
// sample kernel on the device at the update count it reads: both evaluate
// the same expression, whose product feeds a division (no fused
// multiply-add can form), so they give the same bits.

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace foxrl {
namespace kernels {

struct BetaSchedule {
  double start = 0.0;
  /// Updates over which beta reaches 1; 0 keeps it at `start`.
  std::int64_t anneal_updates = 0;

  static BetaSchedule fixed(float beta) { return {static_cast<double>(beta), 0}; }

  /// min(1, start + (1 - start) updates / anneal_updates).
  KOKKOS_INLINE_FUNCTION float operator()(std::int64_t updates) const {
    if (anneal_updates <= 0) return static_cast<float>(start);
    const double b = start + (1.0 - start) * static_cast<double>(updates) / static_cast<double>(anneal_updates);
    return static_cast<float>(b < 1.0 ? b : 1.0);
  }
};

}  // namespace kernels
}  // namespace foxrl
