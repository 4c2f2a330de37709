#pragma once
// The training guard's decision and the optimizer step at the end of the
// fused small-network update, with one grid barrier less than
// decide_then_step (fused_optimizer.cuh), where block 0's one thread
// decides, hands the step's scalars over through global memory and every
// block waits for it at a second barrier.
//
// Here every block decides by itself, on its own shared-memory copies of
// what the decision reads and writes: the guard's state, the learner's
// metrics and the two step counters. The copies are taken before the
// launch's first grid barrier, when no block has written those yet; block
// 0 alone writes its copies back, after the last barrier. Every block adds
// the same partial sums in the same order and runs the same code on the
// same copies, so all blocks reach the same decision and scalars, bit for
// bit the ones block 0 reached before; each block then applies its own
// elements at once. Within a block, one thread judges, then a warp pushes
// an accepted loss into the guard's window (guard_window_warp.cuh) while
// another thread derives the step's scalars, and the five sums go through
// one block reduction instead of five.
//
// Only compiled in CUDA builds (kernels/cuda/ is not part of host builds).

#include "core/error.hpp"
#include "kernels/cuda/fused_optimizer.cuh"
#include "kernels/cuda/guard_window_warp.cuh"
#include "views/agents/dqn/learner_metrics.hpp"

#include <cuda_runtime.h>
#include <Kokkos_Core.hpp>

#include <cstdint>
#include <string>

namespace foxrl {
namespace kernels {
namespace cuda {

/// One block's copies of what the decision touches (shared memory; plain
/// data, so it needs no constructor there).
struct DecisionCopies {
  double state[staged_state_capacity];
  float metrics[LearnerMetrics::count];
  std::int64_t adam_step;
  std::int64_t snapshot_step;
};

/// The static shared memory of decide_in_every_block_then_step and its
/// copies (the block sums, the scalars and the judgement under 64 bytes)
/// fits the margin small_update_shared_limit() leaves for it.
static_assert(sizeof(DecisionCopies) + 5 * 32 * sizeof(float) + 64 <= 2 * sizeof(double) * staged_state_capacity);

/// Throws unless the decision `finish` (a GuardDecision) and the optimizer
/// step `step` share the update's metrics and step counter (`metrics`,
/// `adam_step`) and the guard's state fits a block's copy: the copies stand
/// for all of them at once.
template <class Finish, class Step>
void check_decision_copies(const Finish& finish, const Step& step, const float* metrics,
                           const std::int64_t* adam_step) {
  const char* where = "foxrl::kernels::cuda::fused_small_update: ";
  if (finish.state.extent(0) > std::size_t(staged_state_capacity))
    throw LogicError(std::string(where) + "the guard's state holds " + std::to_string(finish.state.extent(0)) +
                     " doubles, a block's copy " + std::to_string(staged_state_capacity));
  if (finish.metrics.data() != metrics || step.metrics.data() != metrics ||
      finish.metrics.extent(0) != std::size_t(LearnerMetrics::count))
    throw LogicError(std::string(where) + "the decision and the step must write the update's own metrics");
  if (finish.adam_step.data() != adam_step || step.step.data() != adam_step || finish.snapshot_step.data() == nullptr)
    throw LogicError(std::string(where) + "the decision and the step must count the update's own Adam steps");
  if (step.guarded && step.gs.data() != finish.state.data())
    throw LogicError(std::string(where) + "the step must carry out the decision's own guard state");
}

/// The block's copies, read by all its threads before the launch's first
/// grid barrier (any later block barrier publishes them within the block).
template <class Finish>
__device__ void load_decision_copies(const Finish& finish, DecisionCopies& c) {
  const int count = static_cast<int>(finish.state.extent(0));
  for (int k = threadIdx.x; k < count; k += blockDim.x) c.state[k] = finish.state(k);
  for (int k = threadIdx.x; k < LearnerMetrics::count; k += blockDim.x) c.metrics[k] = finish.metrics(k);
  if (threadIdx.x == 0) {
    c.adam_step = finish.adam_step();
    c.snapshot_step = finish.snapshot_step();
  }
}

/// block_sum (fused_optimizer.cuh) of N values at once: the same shuffle
/// tree and the same order of the warps' sums for each, so each result has
/// block_sum's bits, with two block barriers instead of 2 N. `shared` holds
/// 32 N floats. The results are valid in thread 0.
template <int N>
__device__ void block_sums(float (&values)[N], float* shared) {
  for (int offset = 16; offset > 0; offset /= 2)
#pragma unroll
    for (int m = 0; m < N; ++m) values[m] += __shfl_down_sync(0xffffffffu, values[m], offset);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  __syncthreads();  // `shared` may still be read by a previous call
  if (lane == 0)
#pragma unroll
    for (int m = 0; m < N; ++m) shared[32 * m + warp] = values[m];
  __syncthreads();
#pragma unroll
  for (int m = 0; m < N; ++m) {
    float v = 0.0f;
    if (warp == 0) {
      v = lane < static_cast<int>(blockDim.x / 32) ? shared[32 * m + lane] : 0.0f;
      for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
    }
    values[m] = v;
  }
}

/// After the grid barrier that completes `metric_partials` ([blocks, 3]:
/// each block's loss, Q and |td| sums over its rows) and `norm_partials`
/// ([blocks, 2]: sum g^2 and the non-finite weights): in every block, the
/// batch means of the loss metrics and the Adam step counter advanced by
/// one (the twin's loss kernel does both), the guard's decision on the
/// block's copies (thread 0 judges; warp 0 pushes an accepted loss into the
/// window while a thread of warp 1 derives the step's scalars, which do not
/// read the window); block 0 writes its copies back; then clip + Adam +
/// target update (or the verdict) of the block's elements, as the portable
/// adam_update does it. All threads of every block call this (at least two
/// warps).
template <class Finish, class Step>
__device__ void decide_in_every_block_then_step(const float* metric_partials, const float* norm_partials, int batch,
                                                const Finish& finish, const Step& step, DecisionCopies& c) {
  using Scalars = typename Step::Scalars;
  using Judgement = typename Finish::Judgement;
  __shared__ alignas(Scalars) unsigned char scalars_bytes[sizeof(Scalars)];
  __shared__ alignas(Judgement) unsigned char judgement_bytes[sizeof(Judgement)];
  __shared__ float reduce[5 * 32];
  Scalars& scalars = *reinterpret_cast<Scalars*>(scalars_bytes);
  Judgement& judgement = *reinterpret_cast<Judgement*>(judgement_bytes);
  // The same sums in the same order as block 0 of decide_then_step.
  float sums[5] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
  for (unsigned b = threadIdx.x; b < gridDim.x; b += blockDim.x) {
#pragma unroll
    for (int m = 0; m < 3; ++m) sums[m] += metric_partials[3 * b + m];
#pragma unroll
    for (int m = 0; m < 2; ++m) sums[3 + m] += norm_partials[2 * b + m];
  }
  block_sums(sums, reduce);
  const int count = static_cast<int>(finish.state.extent(0));
  if (threadIdx.x == 0) {
    const float inv_b = 1.0f / static_cast<float>(batch);
    c.metrics[LearnerMetrics::loss] = sums[0] * inv_b;
    c.metrics[LearnerMetrics::mean_q] = sums[1] * inv_b;
    c.metrics[LearnerMetrics::mean_abs_td] = sums[2] * inv_b;
    c.adam_step += 1;
    Finish decide = finish;
    decide.state = decltype(decide.state)(c.state, count);
    decide.metrics = decltype(decide.metrics)(c.metrics, LearnerMetrics::count);
    decide.adam_step = decltype(decide.adam_step)(&c.adam_step);
    decide.snapshot_step = decltype(decide.snapshot_step)(&c.snapshot_step);
    judgement = decide.judge(sums[3], sums[4]);
  }
  __syncthreads();
  if (threadIdx.x < 32) {
    if (judgement.push) warp_push_loss(c.state, judgement.loss, judgement.losses);
  } else if (threadIdx.x == 32) {
    Step derive = step;
    derive.metrics = decltype(derive.metrics)(c.metrics, LearnerMetrics::count);
    derive.step = decltype(derive.step)(&c.adam_step);
    if (derive.guarded) derive.gs = decltype(derive.gs)(c.state, count);
    scalars = derive.scalars();
  }
  __syncthreads();
  if (blockIdx.x == 0) {
    for (int k = threadIdx.x; k < count; k += blockDim.x) finish.state(k) = c.state[k];
    for (int k = threadIdx.x; k < LearnerMetrics::count; k += blockDim.x) finish.metrics(k) = c.metrics[k];
    if (threadIdx.x == 0) finish.adam_step() = c.adam_step;
    __syncthreads();  // the step's thread 0 writes metrics(grad_norm) next
  }
  const std::size_t id = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (id < step.threads) step.apply(id, scalars);
}

}  // namespace cuda
}  // namespace kernels
}  // namespace foxrl
