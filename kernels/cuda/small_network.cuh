#pragma once
// A small MLP staged in one block's shared memory (the layout is
// kernels/nn/staged_network.hpp's), the copy that stages it, and the
// block-wide dense layer over a few rows that the fused small-network
// kernels (the update and the inference forward) run on it.
//
// Only compiled in CUDA builds (kernels/cuda/ is not part of host builds).

#include "core/error.hpp"
#include "kernels/core/fast_divisor.hpp"
#include "kernels/cuda/check_cuda.cuh"
#include "kernels/nn/staged_network.hpp"
#include "views/nn/network_layout.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

namespace foxrl {
namespace kernels {
namespace cuda {

/// The dynamic shared memory one block may use on this device (the opt-in
/// maximum), less `static_bytes` that the kernel declares itself.
inline std::size_t dynamic_shared_limit(std::size_t static_bytes) {
  static const std::size_t optin = [] {
    int device = 0, bytes = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
    return std::size_t(bytes);
  }();
  return optin > static_bytes ? optin - static_bytes : 0;
}

/// Where a block size sits in the fused kernels' tables of instances (256,
/// 512 and 1024 threads: DqnLearnerConfig::fused_threads); any other is refused.
inline int fused_threads_slot(int threads, const char* who) {
  if (threads == 256) return 0;
  if (threads == 512) return 1;
  if (threads == 1024) return 2;
  throw LogicError(std::string(who) + ": " + std::to_string(threads) +
                   " threads per block; the kernel is built for 256, 512 and 1024");
}

/// Row-major rows in shared memory, read as head(row, col).
struct SharedRows {
  const float* data;
  int ld;
  __device__ float operator()(int r, int c) const { return data[r * ld + c]; }
};

/// Copies `Count` networks (1 or 2) of the flat layout from flat[c] into
/// their staged form at dst[c] (StagedNetwork), with all threads of the
/// block: one pass over the whole flat buffer as float4, `InFlight` loads
/// per network and thread in flight at once. One block moves tens of KB
/// from L2, so the copy costs what its rounds of L2 latency cost: a pass
/// per tensor, with its biases' scalar loads each a round of their own,
/// took three times as many rounds.
template <int Count, int InFlight>
__device__ inline void stage_networks(const StagedNetwork& net, const float* const* flat, float* const* dst) {
  const int n4 = net.flat_floats / 4;
  for (int base = threadIdx.x; base < n4; base += InFlight * blockDim.x) {
    float4 v[Count][InFlight];
#pragma unroll
    for (int c = 0; c < Count; ++c)
#pragma unroll
      for (int u = 0; u < InFlight; ++u) {
        const int i4 = base + u * blockDim.x;
        if (i4 < n4) v[c][u] = __ldg(reinterpret_cast<const float4*>(flat[c]) + i4);
      }
#pragma unroll
    for (int u = 0; u < InFlight; ++u) {
      const int f = 4 * (base + u * blockDim.x);
      if (f >= net.flat_floats) continue;
      const StagedSegment& g = net.segment_of(f);
      const int idx = f - g.begin;
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        if (idx + e >= g.length) continue;  // the padding after the tensor
        const int at = StagedNetwork::offset_in(g, idx + e);
#pragma unroll
        for (int c = 0; c < Count; ++c) {
          const float4 x = v[c][u];
          dst[c][at] = e == 0 ? x.x : e == 1 ? x.y : e == 2 ? x.z : x.w;
        }
      }
    }
  }
}

/// out[r, j] = act(b[j] + sum_k in[r, k] w[j, k]) for `rows` rows; one
/// thread per output, four accumulators to shorten the dependent chain.
__device__ inline void dense_rows(const float* in, int rows, int n_in, const float* w, int w_ld, const float* b,
                                  const FastDivisor& outputs, float* out, bool relu) {
  const int n_out = static_cast<int>(outputs.divisor());
  for (int idx = threadIdx.x; idx < rows * n_out; idx += blockDim.x) {
    const int r = static_cast<int>(outputs.divide(static_cast<std::uint32_t>(idx))), j = idx - r * n_out;
    const float* x = in + r * n_in;
    const float* wj = w + j * w_ld;
    float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
    int k = 0;
    for (; k + 3 < n_in; k += 4) {
      a0 = fmaf(x[k], wj[k], a0);
      a1 = fmaf(x[k + 1], wj[k + 1], a1);
      a2 = fmaf(x[k + 2], wj[k + 2], a2);
      a3 = fmaf(x[k + 3], wj[k + 3], a3);
    }
    for (; k < n_in; ++k) a0 = fmaf(x[k], wj[k], a0);
    const float v = ((a0 + a1) + (a2 + a3)) + b[j];
    out[idx] = relu && !(v > 0.0f) ? 0.0f : v;  // as bias_activation: NaN -> 0
  }
}

}  // namespace cuda
}  // namespace kernels
}  // namespace foxrl
