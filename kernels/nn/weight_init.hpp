#pragma once
// Weight initialisation from a counter-based hash: parameter k of tensor t
// gets a value that depends only on (seed, t, k), computed with integer
// arithmetic and one float multiply, so every backend produces bit-identical
// weights for the same seed.

#include "views/nn/network_layout.hpp"
#include "views/nn/parameter_set.hpp"

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstdint>

namespace foxrl {

/// How dense layers are initialised.
enum class InitScheme {
  torch_default,   ///< PyTorch nn.Linear: W, b ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in))
  he_uniform,      ///< W ~ U(-sqrt(6/fan_in), sqrt(6/fan_in)), b = 0
  xavier_uniform,  ///< W ~ U(-sqrt(6/(fan_in+fan_out)), +...), b = 0
};

namespace kernels {

/// splitmix64 finaliser: a bijective 64-bit mix with good avalanche.
KOKKOS_INLINE_FUNCTION std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/// Uniform float in [-1, 1) for parameter `element` of tensor `tensor`
/// (tensor 2 l is layer l's weight, 2 l + 1 its bias). Exact: 24 random bits
/// scaled by a power of two.
KOKKOS_INLINE_FUNCTION float init_uniform_pm1(std::uint64_t seed, int tensor, std::uint64_t element) {
  const std::uint64_t counter = (static_cast<std::uint64_t>(tensor) << 40) ^ element;
  const std::uint64_t bits = splitmix64(splitmix64(seed) ^ counter) >> 40;  // 24 bits
  const float u = static_cast<float>(bits) * (1.0f / 16777216.0f);          // [0, 1)
  return 2.0f * u - 1.0f;                                                   // exact
}

/// Half-widths of the uniform distributions of one layout.
struct InitBounds {
  float weight[NetworkLayout::max_layers] = {};
  float bias[NetworkLayout::max_layers] = {};
};

/// Bounds for `scheme`, computed on the host in double and rounded once.
inline InitBounds init_bounds(const NetworkLayout& layout, InitScheme scheme) {
  InitBounds b;
  for (int l = 0; l < layout.num_layers; ++l) {
    const double fan_in = layout.layers[l].in;
    const double fan_out = layout.layers[l].out;
    switch (scheme) {
      case InitScheme::torch_default:
        b.weight[l] = static_cast<float>(1.0 / std::sqrt(fan_in));
        b.bias[l] = b.weight[l];
        break;
      case InitScheme::he_uniform:
        b.weight[l] = static_cast<float>(std::sqrt(6.0 / fan_in));
        break;
      case InitScheme::xavier_uniform:
        b.weight[l] = static_cast<float>(std::sqrt(6.0 / (fan_in + fan_out)));
        break;
    }
  }
  return b;
}

/// Value of flat parameter index `i` (0 in alignment gaps); usable on the
/// host to check a device initialisation bit for bit.
KOKKOS_INLINE_FUNCTION float init_value(const NetworkLayout& layout, const InitBounds& bounds, std::uint64_t seed,
                                        std::size_t i) {
  for (int l = 0; l < layout.num_layers; ++l) {
    const auto& s = layout.layers[l];
    if (i >= s.weight_offset && i < s.weight_offset + s.weight_size())
      return init_uniform_pm1(seed, 2 * l, i - s.weight_offset) * bounds.weight[l];
    if (i >= s.bias_offset && i < s.bias_offset + static_cast<std::size_t>(s.out))
      return init_uniform_pm1(seed, 2 * l + 1, i - s.bias_offset) * bounds.bias[l];
  }
  return 0.0f;
}

/// The init_weights kernel. A named functor, not a KOKKOS_LAMBDA: the
/// function is a header template that several translation units of one
/// program instantiate (the library and code that calls it directly), and
/// nvcc's wrapper of an extended lambda in such a template was seen to
/// call a null host function pointer on CUDA (H200, nvcc 13.0) where the
/// instantiations met.
template <class MemorySpace>
struct InitWeightsKernel {
  FlatParams<MemorySpace> flat;
  NetworkLayout layout;
  InitBounds bounds;
  std::uint64_t seed;
  KOKKOS_INLINE_FUNCTION void operator()(std::size_t i) const { flat(i) = init_value(layout, bounds, seed, i); }
};

/// Fills `flat` (laid out by `layout`) with freshly initialised parameters.
template <class ExecSpace, class MemorySpace>
void init_weights(const ExecSpace& space, const FlatParams<MemorySpace>& flat, const NetworkLayout& layout,
                  std::uint64_t seed, InitScheme scheme) {
  Kokkos::parallel_for("foxrl::kernels::init_weights", Kokkos::RangePolicy<ExecSpace>(space, 0, flat.extent(0)),
                       InitWeightsKernel<MemorySpace>{flat, layout, init_bounds(layout, scheme), seed});
}

}  // namespace kernels
}  // namespace foxrl
