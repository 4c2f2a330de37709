#pragma once
// The whole optimizer step in one CUDA launch: gradient norm (with the scan
// of the online weights for non-finite values), the training guard's
// decision, then clip + Adam + target update (or the guard's skip or
// restore) over the flat parameter buffers. The portable path takes two
// Kokkos launches for the same work (kernels/nn/adam.hpp:
// gradient_sq_norm_then, then adam_update), and the second cannot start
// before the first drains; here one cooperative launch crosses two
// grid-wide barriers instead, and every block reduces its share of the
// norm with all of its threads.
//
// The per-element arithmetic is the portable path's own (kernels::AdamStep);
// only the norm's summation order differs (a fixed tree over this grid), so
// results agree with the portable twin to rounding of the norm
// (tests/test_fused_optimizer.cpp).
//
// Only compiled in CUDA builds (kernels/cuda/ is not part of host builds).

#include "core/error.hpp"
#include "kernels/cuda/check_cuda.cuh"
#include "kernels/nn/adam.hpp"

#include <cooperative_groups.h>
#include <cuda_runtime.h>
#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdlib>
#include <string>
#include <type_traits>
#include <utility>

namespace foxrl {
namespace kernels {
namespace cuda {

/// Threads per block of the fused optimizer.
constexpr int fused_optimizer_block = 256;

/// Sum over the block of `value` in a fixed order (warp shuffles, then the
/// warps' sums through shared memory, which holds one float per warp); the
/// result is valid in thread 0. Any block of whole warps up to 1024 threads.
__device__ inline float block_sum(float value, float* shared) {
  for (int offset = 16; offset > 0; offset /= 2) value += __shfl_down_sync(0xffffffffu, value, offset);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  __syncthreads();  // `shared` may still be read by a previous call
  if (lane == 0) shared[warp] = value;
  __syncthreads();
  value = 0.0f;
  if (warp == 0) {
    value = lane < static_cast<int>(blockDim.x / 32) ? shared[lane] : 0.0f;
    for (int offset = 16; offset > 0; offset /= 2) value += __shfl_down_sync(0xffffffffu, value, offset);
  }
  return value;
}

/// Whether a finish functor keeps its state in a `state` View (the
/// training guard's decision does): block 0 then stages that state in
/// shared memory around the one thread's decision, whose few dozen
/// dependent reads and writes would otherwise each wait on global memory.
template <class F, class = void>
struct has_state_view : std::false_type {};
template <class F>
struct has_state_view<F, std::void_t<decltype(std::declval<F&>().state.extent(0))>> : std::true_type {};

/// Doubles of a finish functor's state that fit the shared staging area.
constexpr int staged_state_capacity = 128;

/// `finish(total, total_bad)` once, by thread 0 of the calling block (all of
/// its threads call this), on a shared-memory copy of the functor's state
/// when it has one that fits.
template <class Finish>
__device__ void finish_in_block(const Finish& finish, float total, float total_bad) {
  if constexpr (has_state_view<Finish>::value) {
    __shared__ double staged[staged_state_capacity];
    const int count = static_cast<int>(finish.state.extent(0));
    if (count <= staged_state_capacity) {
      for (int k = threadIdx.x; k < count; k += blockDim.x) staged[k] = finish.state(k);
      __syncthreads();
      if (threadIdx.x == 0) {
        Finish local = finish;
        local.state = decltype(local.state)(staged, count);
        local(total, total_bad);
      }
      __syncthreads();
      for (int k = threadIdx.x; k < count; k += blockDim.x) finish.state(k) = staged[k];
      __syncthreads();  // thread 0 reads the written-back state next
      return;
    }
  }
  if (threadIdx.x == 0) finish(total, total_bad);
}

/// Floats of scratch the fused launch needs besides two partials per block
/// (the step's scalars, handed from block 0 to every thread).
constexpr std::size_t fused_optimizer_extra_floats = 16;

/// No work before the decision (the plain optimizer step).
struct NothingBeforeDecision {
  __device__ void operator()(float* /*shared*/) const {}
};

/// Steps 2 and 3 of an optimizer step whose blocks have each stored their
/// (sum g^2, non-finite count) pair in partials[2 b], [2 b + 1]: a grid
/// barrier; block 0 runs `before(shared)` with all its threads (work the
/// decision depends on, e.g. the loss's metrics), adds the blocks' sums in
/// a fixed order (each thread a stripe, then the block's tree), takes the
/// decision and derives the step's scalars once (two double-precision
/// powers: per thread, as the portable launch derives them, they cost more
/// than the pass); a second barrier; then clip + Adam + target update (or
/// the guard's verdict), as the portable adam_update does it, with this
/// grid's threads. `partials` holds 2 x gridDim.x +
/// fused_optimizer_extra_floats floats.
template <class Finish, class Step, class Before>
__device__ void decide_then_step(const cooperative_groups::grid_group& grid, float* partials, const Finish& finish,
                                 const Step& step, const Before& before, float* shared) {
  grid.sync();
  if (blockIdx.x == 0) {
    before(shared);
    float total = 0.0f, total_bad = 0.0f;
    for (unsigned b = threadIdx.x; b < gridDim.x; b += blockDim.x) {
      total += partials[2 * b];
      total_bad += partials[2 * b + 1];
    }
    total = block_sum(total, shared);
    total_bad = block_sum(total_bad, shared);
    // block_sum leaves the totals in thread 0, which alone decides.
    finish_in_block(finish, total, total_bad);
    if (threadIdx.x == 0) *reinterpret_cast<typename Step::Scalars*>(partials + 2 * gridDim.x) = step.scalars();
  }
  grid.sync();
  const auto scalars = *reinterpret_cast<const typename Step::Scalars*>(partials + 2 * gridDim.x);
  const std::size_t id = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (id < step.threads) step.apply(id, scalars);
}

/// The fused step; see the file comment. `partials` holds 2 x gridDim.x +
/// fused_optimizer_extra_floats floats.
template <class Finish, class Step>
__global__ void __launch_bounds__(fused_optimizer_block)
    fused_optimizer_kernel(const float* grads, const float* params, std::size_t n, float* partials, Finish finish,
                           Step step) {
  __shared__ float shared[fused_optimizer_block / 32];
  const std::size_t threads = std::size_t(gridDim.x) * blockDim.x;
  const std::size_t id = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;

  // 1. This thread's share of sum g^2 and of the non-finite weights.
  float sq = 0.0f, bad = 0.0f;
  for (std::size_t i = id; i < n; i += threads) {
    const float g = grads[i];
    sq += g * g;
    if (params != nullptr && !math::isfinite(params[i])) bad += 1.0f;
  }
  sq = block_sum(sq, shared);
  bad = block_sum(bad, shared);
  if (threadIdx.x == 0) {
    partials[2 * blockIdx.x] = sq;
    partials[2 * blockIdx.x + 1] = bad;
  }
  // 2. and 3.
  decide_then_step(cooperative_groups::this_grid(), partials, finish, step, NothingBeforeDecision(), shared);
}

/// The most blocks of fused_optimizer_kernel<Finish, Step> the launch uses:
/// those resident at once on the current device (a cooperative launch may
/// not exceed it).
template <class Finish, class Step>
int fused_optimizer_resident_blocks() {
  static const int blocks = [] {
    int device = 0, sms = 0, per_sm = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, fused_optimizer_kernel<Finish, Step>, fused_optimizer_block,
                                                  0);
    return sms * per_sm;
  }();
  return blocks;
}

/// Blocks one fused step over `n` parameters launches (and partial pairs
/// its scratch needs).
template <class Finish, class Step>
int fused_optimizer_blocks(std::size_t n) {
  const std::size_t wanted = (n + fused_optimizer_block - 1) / fused_optimizer_block;
  const int resident = fused_optimizer_resident_blocks<Finish, Step>();
  const int blocks = static_cast<int>(wanted < std::size_t(resident) ? wanted : std::size_t(resident));
  return blocks > 0 ? blocks : 1;
}

/// Launches the fused step on `space`'s stream: sum_i grads(i)^2 and the
/// count of non-finite params(i) (when `params` is allocated) go to
/// `finish(grad_sq, nonfinite)` in one thread, then `step` (a configured
/// AdamStep; its `threads` is set here) runs. `partials` holds
/// `partial_floats` floats, at least 2 x fused_optimizer_blocks(n) +
/// fused_optimizer_extra_floats.
template <class Finish, class MemorySpace, bool host>
void fused_optimizer_step(const Kokkos::Cuda& space, const FlatParams<MemorySpace>& grads,
                          const FlatParams<MemorySpace>& params, const Finish& finish, AdamStep<MemorySpace, host> step,
                          float* partials, std::size_t partial_floats) {
  static_assert(!host, "the fused optimizer is the GPU path");
  const std::size_t n = grads.extent(0);
  if (params.extent(0) != 0 && params.extent(0) != n)
    throw LogicError("foxrl::kernels::cuda::fused_optimizer_step: params and grads differ in length");
  using Step = AdamStep<MemorySpace, host>;
  const int blocks = fused_optimizer_blocks<Finish, Step>(n);
  static_assert(sizeof(typename Step::Scalars) <= fused_optimizer_extra_floats * sizeof(float));
  if (2 * std::size_t(blocks) + fused_optimizer_extra_floats > partial_floats)
    throw LogicError("foxrl::kernels::cuda::fused_optimizer_step: " + std::to_string(blocks) + " blocks need " +
                     std::to_string(2 * blocks + fused_optimizer_extra_floats) + " partial floats, the scratch holds " +
                     std::to_string(partial_floats));
  step.threads = std::size_t(blocks) * fused_optimizer_block;
  const float* g = grads.data();
  const float* p = params.extent(0) ? params.data() : nullptr;
  void* args[] = {&g, &p, const_cast<std::size_t*>(&n), &partials, const_cast<Finish*>(&finish), &step};
  check_cuda(cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(&fused_optimizer_kernel<Finish, Step>),
                                         dim3(blocks), dim3(fused_optimizer_block), args, 0, space.cuda_stream()),
             "foxrl::kernels::cuda::fused_optimizer_step: launch failed");
}

}  // namespace cuda
}  // namespace kernels
}  // namespace foxrl
