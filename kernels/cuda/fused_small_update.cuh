#pragma once
// The whole DQN update of a small network in one CUDA launch: online
// forward at s and s', target forward at s', the double-DQN n-step target
// and the importance-weighted loss, backward, then gradient norm, the
// training guard's decision, clip + Adam + target update and the td errors
// for the replay priorities. The portable twin is the learner's sequence
// of Kokkos launches (Mlp forward and backward, kernels::dqn_loss,
// gradient_sq_norm_then, adam_update; about 16 launches on the blas
// backend); tests/test_fused_small_update.cpp compares the two.
//
// Why one launch wins for small networks (the cartpole-learn case, 4-120-84
// with batch 128): every product is far too small to fill the GPU, so the
// portable sequence is a chain of launches each paying its latency and
// its drain. Here each block stages both networks in shared memory (odd
// row strides: conflict-free reads), runs its slice of the batch through
// forward, loss and backward without leaving the SM, and writes its
// partial gradient; after a grid barrier every thread adds the blocks'
// partials of its elements in block order (deterministic: the same inputs
// give the same bits), and after a second one every block takes the
// guard's decision on its own copies and applies its share of the step
// (decide_in_every_block_then_step).
//
// The per-row loss arithmetic (kernels::dqn_row_loss) and the per-element
// optimizer arithmetic (kernels::AdamStep) are the portable path's own;
// the products and sums add in another order, so results agree with the
// twin to rounding.
//
// Only compiled in CUDA builds (kernels/cuda/ is not part of host builds).

#include "core/error.hpp"
#include "kernels/agents/dqn/dqn_loss.hpp"
#include "kernels/cuda/decide_in_every_block.cuh"
#include "kernels/cuda/fused_optimizer.cuh"
#include "kernels/cuda/small_network.cuh"
#include "kernels/nn/adam.hpp"
#include "views/agents/dqn/fused_update_stamps.hpp"
#include "views/agents/dqn/learner_metrics.hpp"
#include "views/nn/network_layout.hpp"

#include <cooperative_groups.h>
#include <cuda_runtime.h>
#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

namespace foxrl {
namespace kernels {
namespace cuda {

/// Threads per block by default (1024); DqnLearnerConfig::fused_threads asks for
/// 256 or 512. More warps per SM hide more
/// of the latency of the block's dependent shared-memory and L2 reads, at
/// the price of more threads idle in the phases with few outputs; 1024 was
/// the fastest of the three (perf/NOTES.md).
constexpr int small_update_block = small_network_default_threads;
/// The largest block the kernel is built for.
constexpr int small_update_max_threads = 1024;
/// Fewest batch rows one block takes: fewer would spend more on staging the
/// networks and on adding partial gradients than on the rows.
constexpr int small_update_min_rows = 4;
/// Most blocks while their rows fit shared memory: each adds one partial
/// gradient per element after the grid barrier, so more blocks cost more
/// than their rows save. Larger batches take more blocks of fewer rows.
constexpr int small_update_max_blocks = 32;

/// Grid and shared-memory layout of one fused update (offsets in floats),
/// planned on the host from the layout and the batch size.
struct SmallUpdatePlan {
  static constexpr int max_layers = NetworkLayout::max_layers;
  NetworkLayout layout;
  int threads = small_update_block;  ///< per block: 256, 512 or 1024
  int batch = 0;                     ///< rows of this update
  int rows = 0;                      ///< rows per block (the last block may take fewer)
  int blocks = 0;                    ///< ceil(batch / rows)
  StagedNetwork net;                 ///< how each network sits in shared memory
  int online_at = 0, target_at = 0;
  int inputs_at = 0;            ///< [2 rows, obs]: the block's s rows, then its s' rows
  int act_at[max_layers] = {};  ///< online hidden layer l's output [2 rows, width]
  int head_at = 0;              ///< online head [2 rows, 1 + A]
  int target_head_at = 0;       ///< target head [rows, 1 + A]
  int work_at[2] = {};          ///< [rows, widest hidden] each: the target's trunk, then backward's dZ
  int d_head_at = 0;            ///< dL/d head [rows, 1 + A]
  std::size_t shared_bytes = 0;
};

/// The plan for `batch` rows of `layout` (a dueling network) with at most
/// `shared_limit` bytes of shared memory per block: up to
/// small_update_max_blocks blocks of at least small_update_min_rows rows,
/// more blocks of fewer rows where a block's rows would not fit. When even
/// one row does not fit, shared_bytes exceeds the limit. `threads` per
/// block: 256, 512 or 1024 (the rows per block do not depend on it).
inline SmallUpdatePlan plan_small_update(const NetworkLayout& layout, int batch, std::size_t shared_limit,
                                         int threads = small_update_block) {
  fused_threads_slot(threads, "foxrl::kernels::cuda::plan_small_update");
  SmallUpdatePlan p;
  p.threads = threads;
  p.layout = layout;
  p.batch = batch;
  p.net = StagedNetwork(layout);
  const int widest = widest_hidden(layout);
  const int H = layout.head_outputs();
  // Shared floats per row of a block (see the offsets below).
  int per_row = 2 * layout.obs_dim + 3 * H + 2 * widest + H;
  for (int l = 0; l + 1 < layout.num_layers; ++l) per_row += 2 * layout.layers[l].out;
  const int wanted = std::max(1, (batch + small_update_min_rows - 1) / small_update_min_rows);
  p.rows = (batch + std::min(wanted, small_update_max_blocks) - 1) / std::min(wanted, small_update_max_blocks);
  const long long room = (static_cast<long long>(shared_limit / sizeof(float)) - 2LL * p.net.floats) / per_row;
  p.rows = static_cast<int>(std::max(1LL, std::min<long long>(p.rows, room)));
  p.blocks = (batch + p.rows - 1) / p.rows;
  const int R = p.rows;
  p.online_at = 0;
  p.target_at = p.net.floats;
  int at = 2 * p.net.floats;
  p.inputs_at = at;
  at += 2 * R * layout.obs_dim;
  for (int l = 0; l + 1 < layout.num_layers; ++l) {
    p.act_at[l] = at;
    at += 2 * R * layout.layers[l].out;
  }
  p.head_at = at;
  at += 2 * R * H;
  p.target_head_at = at;
  at += R * H;
  p.work_at[0] = at;
  at += R * widest;
  p.work_at[1] = at;
  at += R * widest;
  p.d_head_at = at;
  at += R * H;
  p.shared_bytes = std::size_t(at) * sizeof(float);
  return p;
}

/// Pointers of one fused update (device memory).
struct SmallUpdateArgs {
  SmallUpdatePlan plan;
  const float* online = nullptr;  ///< flat parameters (NetworkLayout)
  const float* target = nullptr;
  float* grads = nullptr;          ///< flat gradient, written (padding: the partials' zeros)
  float* grad_partials = nullptr;  ///< [blocks, layout.total], zero-initialised: each block's partial gradient
  const float* states = nullptr;
  const float* next_states = nullptr;
  int states_ld = 0, next_states_ld = 0;
  const std::int32_t* actions = nullptr;
  const float* rewards = nullptr;
  const float* discounts = nullptr;  ///< gamma^n (1 - terminated)
  const float* is_weights = nullptr;
  LossKind loss = LossKind::huber;
  float* td_errors = nullptr;         ///< |Q(s, a) - y| [batch]
  float* metrics = nullptr;           ///< LearnerMetrics slots
  float* metric_partials = nullptr;   ///< [blocks, 3]: each block's loss, Q and |td| sums
  float* norm_partials = nullptr;     ///< 2 x blocks + fused_optimizer_extra_floats
  std::int64_t* adam_step = nullptr;  ///< advanced by one before the decision (the loss kernel's job in the twin)
  /// A performance probe, normally null: [probe_updates, blocks,
  /// fused_update_stamp_count] clocks at the kernel's phase boundaries
  /// (views/agents/dqn/fused_update_stamps.hpp), the update's row chosen
  /// by the Adam step counter.
  unsigned long long* stamps = nullptr;
  int probe_updates = 0;
};

/// Thread 0 records stamp `which` of this block (no-op without a probe).
/// With a probe, the block first waits for all its threads (`row` is the
/// same in every thread of a block), so the stamp marks the block's end of
/// the phase, not thread 0's.
__device__ inline void stamp_phase(unsigned long long* row, int which) {
  if (row == nullptr) return;
  __syncthreads();
  if (threadIdx.x != 0) return;
  unsigned long long t = 0;
  if (which >= fused_update_stamp_start_ns) {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } else {
    t = static_cast<unsigned long long>(clock64());
  }
  row[which] = t;
}

/// This block's dW[j, k] = sum_r dz[r, j] in[r, k] and db[j] = sum_r dz[r, j]
/// over its `rows` rows, written to its partial gradient (`dw`, `db`).
__device__ inline void weight_gradient_rows(const float* dz, int rows, int n_out, const float* in,
                                            const FastDivisor& inputs, float* dw, float* db) {
  const int n_in = static_cast<int>(inputs.divisor());
  for (int idx = threadIdx.x; idx < n_out * n_in; idx += blockDim.x) {
    const int j = static_cast<int>(inputs.divide(static_cast<std::uint32_t>(idx))), k = idx - j * n_in;
    float acc = 0.0f;
    for (int r = 0; r < rows; ++r) acc = fmaf(dz[r * n_out + j], in[r * n_in + k], acc);
    dw[idx] = acc;
  }
  for (int j = threadIdx.x; j < n_out; j += blockDim.x) {
    float acc = 0.0f;
    for (int r = 0; r < rows; ++r) acc += dz[r * n_out + j];
    db[j] = acc;
  }
}

/// dX[r, k] = (sum_j dz[r, j] w[j, k]) [act[r, k] > 0]: the input gradient
/// through the previous layer's ReLU (`act` is its output).
__device__ inline void input_gradient_rows(const float* dz, int rows, int n_out, const float* w, int w_ld,
                                           const float* act, const FastDivisor& inputs, float* dx) {
  const int n_in = static_cast<int>(inputs.divisor());
  for (int idx = threadIdx.x; idx < rows * n_in; idx += blockDim.x) {
    const int r = static_cast<int>(inputs.divide(static_cast<std::uint32_t>(idx))), k = idx - r * n_in;
    float acc = 0.0f;
    for (int j = 0; j < n_out; ++j) acc = fmaf(dz[r * n_out + j], w[j * w_ld + k], acc);
    dx[idx] = !(act[idx] > 0.0f) ? 0.0f : acc;  // as relu_backward's mask
  }
}

/// sum_b column[b * stride] for b < count, in a fixed order: eight
/// interleaved partial sums fed sixteen loads at a time (one load at a
/// time, the L2 latency of each would add up), then a fixed tree of them.
__device__ inline float sum_partials_in_order(const float* column, std::size_t stride, int count) {
  float acc[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
  int b = 0;
  for (; b + 15 < count; b += 16) {
    float v[16];
#pragma unroll
    for (int u = 0; u < 16; ++u) v[u] = column[std::size_t(b + u) * stride];
#pragma unroll
    for (int u = 0; u < 16; ++u) acc[u % 8] += v[u];
  }
  for (; b + 7 < count; b += 8) {
#pragma unroll
    for (int u = 0; u < 8; ++u) acc[u] += column[std::size_t(b + u) * stride];
  }
  for (; b < count; ++b) acc[0] += column[std::size_t(b) * stride];
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

/// The fused update with `Threads` threads per block; see the file comment.
template <int Threads, class Finish, class Step>
__global__ void __launch_bounds__(Threads) fused_small_update_kernel(SmallUpdateArgs a, Finish finish, Step step) {
  extern __shared__ float sm[];
  __shared__ float reduce[Threads / 32];
  const SmallUpdatePlan& p = a.plan;
  const NetworkLayout& L = p.layout;
  const int nl = L.num_layers, H = L.layers[nl - 1].out, A = H - 1, obs = L.obs_dim;
  const int row0 = blockIdx.x * p.rows;
  const int R = min(p.rows, p.batch - row0);
  // The probe's row for this update: read before block 0 advances the
  // step counter (after the first grid barrier), so every block agrees.
  unsigned long long* stamps = nullptr;
  if (a.stamps != nullptr)
    stamps =
        a.stamps + (std::size_t(*a.adam_step % a.probe_updates) * gridDim.x + blockIdx.x) * fused_update_stamp_count;
  stamp_phase(stamps, fused_update_stamp_start_ns);
  stamp_phase(stamps, fused_update_stamp_start);
  // What the guard's decision reads, copied before any block can write it.
  __shared__ DecisionCopies decision_copies;
  load_decision_copies(finish, decision_copies);

  // 0. Both networks and this block's rows of s and s' into shared memory.
  {
    const float* from[2] = {a.online, a.target};
    float* to[2] = {sm + p.online_at, sm + p.target_at};
    stage_networks<2, 4>(p.net, from, to);
  }
  float* x = sm + p.inputs_at;
  for (int idx = threadIdx.x; idx < R * obs; idx += blockDim.x) {
    const int r = static_cast<int>(p.net.in[0].divide(static_cast<std::uint32_t>(idx))), k = idx - r * obs;
    x[idx] = a.states[std::size_t(row0 + r) * a.states_ld + k];
    x[R * obs + idx] = a.next_states[std::size_t(row0 + r) * a.next_states_ld + k];
  }
  __syncthreads();
  stamp_phase(stamps, fused_update_stamp_staged);

  // 1. Forward: online over [s; s'] (2R rows), target over s'.
  const float* on = sm + p.online_at;
  const float* tg = sm + p.target_at;
  float* head = sm + p.head_at;
  float* target_head = sm + p.target_head_at;
  for (int l = 0; l < nl; ++l) {
    const auto& s = L.layers[l];
    const bool last = l == nl - 1;
    const float* in_online = l == 0 ? x : sm + p.act_at[l - 1];
    const float* in_target = l == 0 ? x + R * obs : sm + p.work_at[(l - 1) & 1];
    dense_rows(in_online, 2 * R, s.in, on + p.net.weight_at[l], p.net.weight_ld[l], on + p.net.bias_at[l], p.net.out[l],
               last ? head : sm + p.act_at[l], !last);
    dense_rows(in_target, R, s.in, tg + p.net.weight_at[l], p.net.weight_ld[l], tg + p.net.bias_at[l], p.net.out[l],
               last ? target_head : sm + p.work_at[l & 1], !last);
    __syncthreads();
  }
  stamp_phase(stamps, fused_update_stamp_forward);

  // 2. Loss per row: dL/d head, |td| for the priorities, the block's sums.
  float* d_head = sm + p.d_head_at;
  {
    const float inv_b = 1.0f / static_cast<float>(p.batch);
    const float inv_a = 1.0f / static_cast<float>(A);
    float loss_sum = 0.0f, q_sum = 0.0f, td_sum = 0.0f;
    for (int r = threadIdx.x; r < R; r += blockDim.x) {
      const int i = row0 + r;
      const int act = a.actions[i];
      const DqnRowLoss rl = dqn_row_loss(SharedRows{head, H}, SharedRows{head + R * H, H}, SharedRows{target_head, H},
                                         r, act, A, a.rewards[i], a.discounts[i], a.loss);
      const float w = a.is_weights[i];
      const float g = w * rl.dloss * inv_b;
      d_head[r * H] = g;
      for (int j = 0; j < A; ++j) d_head[r * H + 1 + j] = g * ((j == act ? 1.0f : 0.0f) - inv_a);
      a.td_errors[i] = rl.abs_td;
      loss_sum += w * rl.loss;
      q_sum += rl.q;
      td_sum += rl.abs_td;
    }
    loss_sum = block_sum(loss_sum, reduce);
    q_sum = block_sum(q_sum, reduce);
    td_sum = block_sum(td_sum, reduce);
    if (threadIdx.x == 0) {
      a.metric_partials[3 * blockIdx.x] = loss_sum;
      a.metric_partials[3 * blockIdx.x + 1] = q_sum;
      a.metric_partials[3 * blockIdx.x + 2] = td_sum;
    }
    __syncthreads();  // d_head complete
  }
  stamp_phase(stamps, fused_update_stamp_loss);

  // 3. Backward over the block's s rows into its partial gradient.
  float* partial = a.grad_partials + std::size_t(blockIdx.x) * L.total;
  const float* dz = d_head;
  for (int l = nl - 1; l >= 0; --l) {
    const auto& s = L.layers[l];
    const float* in = l == 0 ? x : sm + p.act_at[l - 1];  // s rows come first
    weight_gradient_rows(dz, R, s.out, in, p.net.in[l], partial + s.weight_offset, partial + s.bias_offset);
    if (l == 0) break;
    float* dx = sm + p.work_at[l & 1];
    input_gradient_rows(dz, R, s.out, on + p.net.weight_at[l], p.net.weight_ld[l], in, p.net.in[l], dx);
    __syncthreads();
    dz = dx;
  }

  // 4. The gradient: the blocks' partials added in block order; this
  // thread's share of sum g^2 and of the non-finite online weights.
  stamp_phase(stamps, fused_update_stamp_backward);
  const cooperative_groups::grid_group grid = cooperative_groups::this_grid();
  grid.sync();
  stamp_phase(stamps, fused_update_stamp_barrier);
  const std::size_t threads = std::size_t(gridDim.x) * blockDim.x;
  const std::size_t id = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  // One pass over the flat buffer, padding included (the partials'
  // padding is zero and never written): every thread has at most a couple
  // of elements, so none walks a chain of small tensors one after another.
  float sq = 0.0f, bad = 0.0f;
  for (std::size_t i = id; i < L.total; i += threads) {
    const float g = sum_partials_in_order(a.grad_partials + i, L.total, p.blocks);
    a.grads[i] = g;
    sq += g * g;
    if (!math::isfinite(a.online[i])) bad += 1.0f;
  }
  sq = block_sum(sq, reduce);
  bad = block_sum(bad, reduce);
  if (threadIdx.x == 0) {
    a.norm_partials[2 * blockIdx.x] = sq;
    a.norm_partials[2 * blockIdx.x + 1] = bad;
  }

  stamp_phase(stamps, fused_update_stamp_summed);

  // 5. The guard's decision and the optimizer step, in every block.
  grid.sync();
  decide_in_every_block_then_step(a.metric_partials, a.norm_partials, p.batch, finish, step, decision_copies);
  stamp_phase(stamps, fused_update_stamp_end);
  stamp_phase(stamps, fused_update_stamp_end_ns);
}

/// The largest dynamic shared memory one block of the update may use on
/// this device: what its static arrays (the block sums, the decision's
/// copies and the step's scalars, decide_in_every_block.cuh) leave, with a
/// margin of two staged guard states.
inline std::size_t small_update_shared_limit() {
  return dynamic_shared_limit(sizeof(float) * (small_update_max_threads / 32) +
                              2 * sizeof(double) * staged_state_capacity);
}

/// The update kernel built for `threads` per block (a plan's: 256, 512 or
/// 1024), with its dynamic shared memory limit raised to
/// small_update_shared_limit() on first use.
template <class Finish, class Step>
auto small_update_kernel(int threads) {
  using Kernel = void (*)(SmallUpdateArgs, Finish, Step);
  static const Kernel kernels[3] = {fused_small_update_kernel<256, Finish, Step>,
                                    fused_small_update_kernel<512, Finish, Step>,
                                    fused_small_update_kernel<1024, Finish, Step>};
  static const bool configured = [] {
    for (const Kernel k : kernels)
      check_cuda(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, int(small_update_shared_limit())),
                 "foxrl::kernels::cuda::fused_small_update: shared memory attribute");
    return true;
  }();
  (void)configured;
  return kernels[fused_threads_slot(threads, "foxrl::kernels::cuda::fused_small_update")];
}

/// Empty if the fused update runs `layout` with batches of up to
/// `max_batch` rows on this device with `threads` per block; otherwise why
/// not (a dueling head, and both networks plus the largest plan's
/// activations in one block's shared memory, with every block of its grid
/// resident at once).
template <class Finish, class Step>
std::string small_update_unfit(const NetworkLayout& layout, int max_batch, int threads = small_update_block) {
  if (layout.head_kind != HeadKind::dueling) return "not a dueling head";
  const SmallUpdatePlan p = plan_small_update(layout, max_batch, small_update_shared_limit(), threads);
  if (p.shared_bytes > small_update_shared_limit())
    return std::to_string(p.shared_bytes) + " bytes of shared memory per block, the device allows " +
           std::to_string(small_update_shared_limit());
  if (!p.net.divides_exactly(layout, 2 * p.rows)) return "layer widths beyond the kernel's index arithmetic";
  const auto kernel = small_update_kernel<Finish, Step>(threads);
  int device = 0, sms = 0, per_sm = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, p.shared_bytes);
  if (per_sm * sms < p.blocks)
    return std::to_string(p.blocks) + " blocks, " + std::to_string(per_sm * sms) + " resident at once";
  return {};
}

/// Launches one fused update on `space`'s stream (small_update_unfit must
/// have said yes for the layout and a batch at least this large). `step`
/// is the configured AdamStep of the twin; its `threads` is set here.
template <class Finish, class MemorySpace>
void fused_small_update(const Kokkos::Cuda& space, const SmallUpdateArgs& args, const Finish& finish,
                        AdamStep<MemorySpace, false> step) {
  using Step = AdamStep<MemorySpace, false>;
  static_assert(sizeof(typename Step::Scalars) <= fused_optimizer_extra_floats * sizeof(float));
  check_decision_copies(finish, step, args.metrics, args.adam_step);
  step.threads = std::size_t(args.plan.blocks) * args.plan.threads;
  const auto kernel = small_update_kernel<Finish, Step>(args.plan.threads);
  void* params[] = {const_cast<SmallUpdateArgs*>(&args), const_cast<Finish*>(&finish), &step};
  check_cuda(cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(kernel), dim3(args.plan.blocks),
                                         dim3(args.plan.threads), params, args.plan.shared_bytes, space.cuda_stream()),
             "foxrl::kernels::cuda::fused_small_update: launch failed");
}

}  // namespace cuda
}  // namespace kernels
}  // namespace foxrl
