#pragma once
// Inference of a small dueling network in one CUDA launch: every block
// stages the network in shared memory and runs a few rows through all of
// its layers, writing the head outputs and each row's greedy action. The
// portable twin is Mlp::forward (on the blas backend one gemm, one bias +
// ReLU and one head kernel per pair of hidden layers: four to five
// launches for 4-120-84) followed by the dueling argmax;
// tests/test_fused_small_update.cpp compares the two.
//
// Why: the collector asks for the greedy actions of a handful of envs every
// iteration (8 in cartpole-learn), and each of the twin's launches costs
// more host time than its few thousand multiply-adds take on the GPU.
//
// Where one block takes every row, the launch can also run a per-row
// functor after the greedy actions (`after`, e.g. the env's choosing step,
// kernels::ChooseThenStep): the env's step then costs no launch and no
// node of the iteration's graph of its own.
//
// Only compiled in CUDA builds (kernels/cuda/ is not part of host builds).

#include "core/error.hpp"
#include "kernels/cuda/small_network.cuh"
#include "kernels/nn/dueling.hpp"
#include "views/nn/network_layout.hpp"

#include <cuda_runtime.h>
#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

namespace foxrl {
namespace kernels {
namespace cuda {

/// Threads per block of the fused forward by default (1024;
/// DqnLearnerConfig::fused_threads asks for 256 or 512, as for the fused update).
constexpr int small_forward_block = small_network_default_threads;
/// Rows per block: enough to keep the block's threads busy on the first
/// layers, few enough that a handful of rows is one block.
constexpr int small_forward_rows = 16;
/// Most rows one fused forward takes: beyond this the gemms of the twin
/// spread over more of the GPU than the staged blocks would.
constexpr int small_forward_max_rows = 512;

/// Grid and shared-memory layout of one fused forward (offsets in floats).
struct SmallForwardPlan {
  NetworkLayout layout;
  StagedNetwork net;
  int threads = small_forward_block;  ///< per block: 256, 512 or 1024
  int rows = 0;                       ///< rows of this forward
  int blocks = 0;                     ///< ceil(rows / small_forward_rows)
  int inputs_at = 0, work_at[2] = {}, head_at = 0;
  std::size_t shared_bytes = 0;
};

inline SmallForwardPlan plan_small_forward(const NetworkLayout& layout, int rows, int threads = small_forward_block) {
  fused_threads_slot(threads, "foxrl::kernels::cuda::plan_small_forward");
  SmallForwardPlan p;
  p.threads = threads;
  p.layout = layout;
  p.net = StagedNetwork(layout);
  p.rows = rows;
  p.blocks = (rows + small_forward_rows - 1) / small_forward_rows;
  const int R = small_forward_rows, widest = widest_hidden(layout);
  int at = p.net.floats;
  p.inputs_at = at;
  at += R * layout.obs_dim;
  p.work_at[0] = at;
  at += R * widest;
  p.work_at[1] = at;
  at += R * widest;
  p.head_at = at;
  at += R * layout.head_outputs();
  p.shared_bytes = std::size_t(at) * sizeof(float);
  return p;
}

/// Pointers of one fused forward (device memory).
struct SmallForwardArgs {
  SmallForwardPlan plan;
  const float* params = nullptr;  ///< flat parameters (NetworkLayout)
  const float* states = nullptr;  ///< [rows, obs] with row stride states_ld
  int states_ld = 0;
  float* head = nullptr;  ///< [rows, 1 + A] with row stride head_ld
  int head_ld = 0;
  std::int32_t* greedy = nullptr;  ///< [rows] argmax_a Q (lowest index on ties); may be null
};

/// No per-row work after the forward (fused_small_forward's default).
struct NoWorkAfterForward {
  __device__ void operator()(int) const {}
};

/// Whether a forward of `rows` rows runs as one block (so a functor after
/// it sees every row's greedy action).
constexpr bool small_forward_one_block(int rows) { return rows >= 1 && rows <= small_forward_rows; }

/// The fused forward with `Threads` threads per block, then `after(row)`
/// for each of the block's rows once every greedy action of the block is
/// written (see the file comment; a grid of one block when `After` does
/// work).
template <int Threads, class After, int Rows = small_forward_rows>
__global__ void __launch_bounds__(Threads) fused_small_forward_kernel(SmallForwardArgs a, After after) {
  extern __shared__ float sm[];
  const SmallForwardPlan& p = a.plan;
  const NetworkLayout& L = p.layout;
  const int nl = L.num_layers, H = L.layers[nl - 1].out, obs = L.obs_dim;
  const int row0 = blockIdx.x * Rows;
  const int R = min(Rows, p.rows - row0);
  {
    const float* from[1] = {a.params};
    float* to[1] = {sm};
    stage_networks<1, 8>(p.net, from, to);
  }
  float* x = sm + p.inputs_at;
  for (int idx = threadIdx.x; idx < R * obs; idx += blockDim.x) {
    const int r = static_cast<int>(p.net.in[0].divide(static_cast<std::uint32_t>(idx)));
    x[idx] = a.states[std::size_t(row0 + r) * a.states_ld + (idx - r * obs)];
  }
  __syncthreads();
  float* head = sm + p.head_at;
  for (int l = 0; l < nl; ++l) {
    const auto& s = L.layers[l];
    const bool last = l == nl - 1;
    dense_rows(l == 0 ? x : sm + p.work_at[(l - 1) & 1], R, s.in, sm + p.net.weight_at[l], p.net.weight_ld[l],
               sm + p.net.bias_at[l], p.net.out[l], last ? head : sm + p.work_at[l & 1], !last);
    __syncthreads();
  }
  for (int idx = threadIdx.x; idx < R * H; idx += blockDim.x) {
    const int r = static_cast<int>(p.net.out[nl - 1].divide(static_cast<std::uint32_t>(idx)));
    a.head[std::size_t(row0 + r) * a.head_ld + (idx - r * H)] = head[idx];
  }
  if (a.greedy != nullptr)
    for (int r = threadIdx.x; r < R; r += blockDim.x) {
      const SharedRows rows{head, H};
      a.greedy[row0 + r] = greedy_action(rows, r, H - 1, advantage_mean(rows, r, H - 1));
    }
  if constexpr (!std::is_same_v<After, NoWorkAfterForward>) {
    // The block's global writes (the greedy actions) are visible to all of
    // its threads after the barrier.
    __syncthreads();
    for (int r = threadIdx.x; r < R; r += blockDim.x) after(row0 + r);
  }
}

/// The largest dynamic shared memory one block of the forward may use on
/// this device (it declares none of its own).
inline std::size_t small_forward_shared_limit() { return dynamic_shared_limit(0); }

/// Whether the fused forward runs `layout` (a dueling network whose staged
/// copy and a block's rows fit one block's shared memory).
inline bool small_forward_fits(const NetworkLayout& layout) {
  const SmallForwardPlan p = plan_small_forward(layout, 1);
  return layout.head_kind == HeadKind::dueling && p.shared_bytes <= small_forward_shared_limit() &&
         p.net.divides_exactly(layout, small_forward_rows);
}

/// Launches one fused forward of args.plan.rows rows (1 <= rows <=
/// small_forward_max_rows) on `space`'s stream, then `after(row)` for every
/// row in the same launch (a device-callable functor taken by value, e.g. a
/// Kokkos functor of Views; only for rows that small_forward_one_block
/// takes).
template <class After = NoWorkAfterForward>
void fused_small_forward(const Kokkos::Cuda& space, const SmallForwardArgs& args, const After& after = After()) {
  // Kernel parameters: 4 KB on every architecture and toolkit we build for.
  static_assert(sizeof(SmallForwardArgs) + sizeof(After) <= 4096, "the forward's arguments exceed 4 KB");
  constexpr bool works_after = !std::is_same_v<After, NoWorkAfterForward>;
  if (works_after && !small_forward_one_block(args.plan.rows))
    throw LogicError("foxrl::kernels::cuda::fused_small_forward: work after the forward needs one block, " +
                     std::to_string(args.plan.rows) + " rows take " + std::to_string(args.plan.blocks));
  using Kernel = void (*)(SmallForwardArgs, After);
  static const Kernel kernels[3] = {fused_small_forward_kernel<256, After>, fused_small_forward_kernel<512, After>,
                                    fused_small_forward_kernel<1024, After>};
  static const bool configured = [] {
    for (const Kernel k : kernels)
      check_cuda(
          cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, int(small_forward_shared_limit())),
          "foxrl::kernels::cuda::fused_small_forward: shared memory attribute");
    return true;
  }();
  (void)configured;
  const int threads = args.plan.threads;
  const Kernel kernel = kernels[fused_threads_slot(threads, "foxrl::kernels::cuda::fused_small_forward")];
  void* params[] = {const_cast<SmallForwardArgs*>(&args), const_cast<After*>(&after)};
  check_cuda(cudaLaunchKernel(reinterpret_cast<const void*>(kernel), dim3(args.plan.blocks), dim3(threads), params,
                              args.plan.shared_bytes, space.cuda_stream()),
             "foxrl::kernels::cuda::fused_small_forward: launch failed");
}

}  // namespace cuda
}  // namespace kernels
}  // namespace foxrl
