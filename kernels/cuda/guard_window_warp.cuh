#pragma once
// The training guard's loss window updated by one warp: the CUDA twin of
// GuardDecision::push_loss (kernels/nn/guard_kernels.hpp), which one thread
// runs as a chain of up to a hundred dependent local-memory loads and
// stores (copy the sorted losses, find the evicted one, shift, find the
// insertion point, shift, copy back). Here lane k holds sorted loss k; a
// ballot finds the evicted entry and the insertion point, a shuffle shifts.
// The same comparisons decide the same positions, so the state ends bit for
// bit as push_loss leaves it (tests/test_guard_window_warp.cpp).
//
// Only compiled in CUDA builds (kernels/cuda/ is not part of host builds).

#include "views/nn/guard_state.hpp"

#include <cuda_runtime.h>

namespace foxrl {
namespace kernels {
namespace cuda {

static_assert(GuardState::window == 32, "one lane per window entry");

/// push_loss(x, n) on the guard state `state` (GuardState slots, shared or
/// global memory) by the 32 lanes of one warp, all of which call it.
__device__ inline void warp_push_loss(double* state, double x, int n) {
  constexpr unsigned all = 0xffffffffu;
  constexpr int W = GuardState::window;
  const int lane = static_cast<int>(threadIdx.x % 32);
  double v = lane < n ? state[GuardState::sorted + lane] : 0.0;
  const int next = static_cast<int>(state[GuardState::ring_next]);
  int m = n;
  if (n == W) {
    // push_loss removes the first of the m - 1 lowest entries equal to the
    // evicted loss, else the last entry, and shifts the rest down.
    const double old = state[GuardState::ring + next];
    const unsigned equal = __ballot_sync(all, lane < m - 1 && v == old);
    const int k = equal != 0u ? __ffs(static_cast<int>(equal)) - 1 : m - 1;
    const double above = __shfl_down_sync(all, v, 1);  // lane 31 keeps its own
    if (lane >= k) v = above;
    --m;
  }
  // push_loss walks down from m while the entry below is > x: x goes right
  // above the highest of the m entries that is not.
  const unsigned not_above = __ballot_sync(all, lane < m && !(v > x));
  const int j = not_above != 0u ? 32 - __clz(static_cast<int>(not_above)) : 0;
  const double below = __shfl_up_sync(all, v, 1);
  if (lane > j) v = below;
  if (lane == j) v = x;
  ++m;
  if (lane < m) state[GuardState::sorted + lane] = v;
  if (lane == 0) {
    state[GuardState::ring + next] = x;
    state[GuardState::ring_next] = static_cast<double>((next + 1) % W);
    state[GuardState::losses] = static_cast<double>(m);
  }
}

}  // namespace cuda
}  // namespace kernels
}  // namespace foxrl
