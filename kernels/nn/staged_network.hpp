#pragma once
// StagedNetwork: how the fused small-network kernels (kernels/cuda/) lay a
// network out in one block's shared memory, and where each float of the
// flat parameter layout (views/nn/network_layout.hpp) goes there.
//
// Layer l's weight [out, in] is staged with the odd row stride in | 1, so
// that the threads of a warp, one output row each, read 32 different
// banks; its bias follows. The flat layout's tensors each start on 32
// floats, so every aligned group of four flat floats lies in one tensor or
// in the padding after it: a kernel copies the whole flat buffer as float4
// in one pass, with all of its loads in flight at once, and places each
// group with segment_of() and offset_in(). Portable, so the host tests
// (tests/test_staged_network.cpp) check the placement the kernels use.

#include "kernels/core/fast_divisor.hpp"
#include "views/nn/network_layout.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace foxrl {

namespace kernels {

/// Threads per block of the kernels that run a staged network (the DQN
/// learner's one-launch update and forward, kernels/cuda/): the fastest of
/// 256, 512 and 1024 for cartpole-learn (101.5, 92.5 and 90.8 us per
/// iteration on an H100: perf/results/h100-23ff710.md); a learner may ask
/// for the others (DqnLearnerConfig::fused_threads).
inline constexpr int small_network_default_threads = 1024;

/// One tensor of the flat layout as staged: flat floats [begin, begin +
/// length) of a row-major [length / cols, cols] tensor; element idx goes
/// to at + row * ld + col (a bias is one row).
struct StagedSegment {
  int begin = 0, length = 0, at = 0, ld = 0;
  FastDivisor cols;
};

struct StagedNetwork {
  static constexpr int max_layers = NetworkLayout::max_layers;
  int weight_ld[max_layers] = {}, weight_at[max_layers] = {}, bias_at[max_layers] = {};
  /// Each layer's input and output widths as divisors, for the kernels'
  /// flat-index loops over its tensors and rows.
  FastDivisor in[max_layers], out[max_layers];
  /// The layout's tensors in flat order: weight 0, bias 0, weight 1, ...
  StagedSegment segment[2 * max_layers];
  int segments = 0;
  int floats = 0;       ///< of the staged copy
  int flat_floats = 0;  ///< of the flat layout, padding included (a multiple of 32)

  StagedNetwork() = default;
  explicit StagedNetwork(const NetworkLayout& layout) {
    flat_floats = static_cast<int>(layout.total);
    for (int l = 0; l < layout.num_layers; ++l) {
      const auto& s = layout.layers[l];
      weight_ld[l] = s.in | 1;
      weight_at[l] = floats;
      floats += s.out * weight_ld[l];
      bias_at[l] = floats;
      floats += s.out;
      in[l] = FastDivisor(static_cast<std::uint32_t>(s.in));
      out[l] = FastDivisor(static_cast<std::uint32_t>(s.out));
      segment[segments++] = {static_cast<int>(s.weight_offset), s.out * s.in, weight_at[l], weight_ld[l], in[l]};
      segment[segments++] = {static_cast<int>(s.bias_offset), s.out, bias_at[l], s.out, out[l]};
    }
  }

  /// The last segment that begins at or before flat float `f`: the tensor
  /// that holds f, or whose padding does when f - begin >= length.
  KOKKOS_INLINE_FUNCTION const StagedSegment& segment_of(int f) const {
    int s = 0;
    while (s + 1 < segments && segment[s + 1].begin <= f) ++s;
    return segment[s];
  }

  /// Where element `idx` (< g.length) of segment `g` goes in the staged copy.
  KOKKOS_INLINE_FUNCTION static int offset_in(const StagedSegment& g, int idx) {
    const int row = static_cast<int>(g.cols.divide(static_cast<std::uint32_t>(idx)));
    return g.at + row * g.ld + (idx - row * static_cast<int>(g.cols.divisor()));
  }

  /// Whether every flat index the kernels divide by a layer's width (its
  /// weight's elements, and `rows` rows of its input or output) is one the
  /// divisors divide exactly. Always so for a network that fits shared
  /// memory (tests/test_fast_divisor.cpp); checked all the same.
  bool divides_exactly(const NetworkLayout& layout, int rows) const {
    for (int l = 0; l < layout.num_layers; ++l) {
      const auto& s = layout.layers[l];
      const auto below = [](long long count, const FastDivisor& d) { return count - 1 <= d.max_exact(); };
      if (!below(1LL * s.out * s.in, in[l]) || !below(1LL * rows * s.in, in[l]) || !below(1LL * rows * s.out, out[l]))
        return false;
    }
    return true;
  }
};

/// The widest hidden layer (1 without any).
inline int widest_hidden(const NetworkLayout& layout) {
  int widest = 1;
  for (int l = 0; l + 1 < layout.num_layers; ++l)
    widest = widest > layout.layers[l].out ? widest : layout.layers[l].out;
  return widest;
}

}  // namespace kernels
}  // namespace foxrl
