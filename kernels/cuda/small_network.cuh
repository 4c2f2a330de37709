#pragma once
// A small MLP staged in one block's shared memory, and the block-wide dense
// layer over a few rows that the fused small-network kernels (the update
// and the inference forward) run on it. Each layer's weight [out, in] is
// staged with an odd row stride, so that the threads of a warp, one output
// each, read 32 different banks.
//
// Only compiled in CUDA builds (kernels/cuda/ is not part of host builds).

#include "kernels/cuda/check_cuda.cuh"
#include "views/nn/network_layout.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>

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

/// Where each tensor of a network staged in shared memory sits (floats from
/// the network's base): layer l's weight with row stride weight_ld[l] at
/// weight_at[l], its bias at bias_at[l].
struct StagedNetwork {
  static constexpr int max_layers = NetworkLayout::max_layers;
  int weight_ld[max_layers] = {}, weight_at[max_layers] = {}, bias_at[max_layers] = {};
  int floats = 0;

  StagedNetwork() = default;
  explicit StagedNetwork(const NetworkLayout& layout) {
    for (int l = 0; l < layout.num_layers; ++l) {
      const auto& s = layout.layers[l];
      weight_ld[l] = s.in | 1;
      weight_at[l] = floats;
      floats += s.out * weight_ld[l];
      bias_at[l] = floats;
      floats += s.out;
    }
  }
};

/// The widest hidden layer (1 without any).
inline int widest_hidden(const NetworkLayout& layout) {
  int widest = 1;
  for (int l = 0; l + 1 < layout.num_layers; ++l) widest = std::max(widest, layout.layers[l].out);
  return widest;
}

/// Row-major rows in shared memory, read as head(row, col).
struct SharedRows {
  const float* data;
  int ld;
  __device__ float operator()(int r, int c) const { return data[r * ld + c]; }
};

/// Floats of a staged tensor: element idx of a row-major [rows, cols]
/// tensor goes to dst[row * ld + col].
__device__ inline void stage_element(float* dst, int ld, int cols, int idx, float v) {
  const int row = idx / cols;
  dst[row * ld + (idx - row * cols)] = v;
}

/// Copies `count` networks (1 or 2) in the flat layout `layout` from
/// flat[n] into their staged form at dst[n], with all threads of the block.
/// Global reads are float4 (every tensor starts on 32 floats) and each
/// thread keeps several in flight per network: one block moves tens of KB
/// from L2, and with one load at a time per thread its latency would
/// dominate the whole kernel.
__device__ inline void stage_networks(const NetworkLayout& layout, const StagedNetwork& net, int count,
                                      const float* const* flat, float* const* dst) {
  constexpr int in_flight = 4;
  for (int l = 0; l < layout.num_layers; ++l) {
    const auto& s = layout.layers[l];
    const int n = s.out * s.in, n4 = n / 4;
    for (int base = threadIdx.x; base < n4; base += in_flight * blockDim.x) {
      float4 v[2][in_flight];
#pragma unroll
      for (int c = 0; c < 2; ++c)
#pragma unroll
        for (int u = 0; u < in_flight; ++u) {
          const int i4 = base + u * blockDim.x;
          if (c < count && i4 < n4) v[c][u] = __ldg(reinterpret_cast<const float4*>(flat[c] + s.weight_offset) + i4);
        }
#pragma unroll
      for (int c = 0; c < 2; ++c)
#pragma unroll
        for (int u = 0; u < in_flight; ++u) {
          const int i4 = base + u * blockDim.x;
          if (c >= count || i4 >= n4) continue;
          float* ws = dst[c] + net.weight_at[l];
          stage_element(ws, net.weight_ld[l], s.in, 4 * i4, v[c][u].x);
          stage_element(ws, net.weight_ld[l], s.in, 4 * i4 + 1, v[c][u].y);
          stage_element(ws, net.weight_ld[l], s.in, 4 * i4 + 2, v[c][u].z);
          stage_element(ws, net.weight_ld[l], s.in, 4 * i4 + 3, v[c][u].w);
        }
    }
    for (int c = 0; c < count; ++c) {
      for (int idx = 4 * n4 + threadIdx.x; idx < n; idx += blockDim.x)
        stage_element(dst[c] + net.weight_at[l], net.weight_ld[l], s.in, idx, flat[c][s.weight_offset + idx]);
      for (int j = threadIdx.x; j < s.out; j += blockDim.x) dst[c][net.bias_at[l] + j] = flat[c][s.bias_offset + j];
    }
  }
}

/// out[r, j] = act(b[j] + sum_k in[r, k] w[j, k]) for `rows` rows; one
/// thread per output, four accumulators to shorten the dependent chain.
__device__ inline void dense_rows(const float* in, int rows, int n_in, const float* w, int w_ld, const float* b,
                                  int n_out, float* out, bool relu) {
  for (int idx = threadIdx.x; idx < rows * n_out; idx += blockDim.x) {
    const int r = idx / n_out, j = idx - r * n_out;
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
