#pragma once
// Counter-based random numbers: a draw is a pure function of (seed, stream,
// counter), so any env on any backend can produce its numbers without RNG
// state, in any order, and the host can recompute what the device drew.
// Only integer arithmetic and one exact float multiplication are involved in
// the uniform draws, so their bits are identical on every backend. Normals go
// through log/sqrt/cos, whose last bit may differ between CUDA's and the host
// libm; they are used only where the host generates data (market series).

#include "core/compat.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <type_traits>

namespace foxrl::kernels {

/// splitmix64 finaliser: a bijective 64-bit mixer with full avalanche.
KOKKOS_INLINE_FUNCTION std::uint64_t mix64(std::uint64_t z) {
  z += 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

/// Seed of one use of randomness ("reset", "explore", ...) derived from the
/// run's seed, so different uses never share numbers.
KOKKOS_INLINE_FUNCTION std::uint64_t derive_seed(std::uint64_t seed, std::uint64_t tag) {
  return mix64(seed ^ mix64(tag + 0x632BE59BD9B4E019ULL));
}

/// 64 random bits for (seed, stream, counter); stream is typically the env.
KOKKOS_INLINE_FUNCTION std::uint64_t counter_bits(std::uint64_t seed, std::uint64_t stream, std::uint64_t counter) {
  const std::uint64_t key = mix64(seed + 0xD1B54A32D192ED03ULL * (stream + 1));
  return mix64(key ^ mix64(counter * 0x8CB92BA72F3D8DD7ULL + 0x2545F4914F6CDD1DULL));
}

/// Uniform float in [0, 1): the top 24 bits scaled exactly.
KOKKOS_INLINE_FUNCTION float bits_to_uniform_float(std::uint64_t bits) {
  return static_cast<float>(bits >> 40) * (1.0f / 16777216.0f);
}

/// a * b rounded on its own (float or double). nvcc contracts
/// `lo + width * u` into one fused multiply-add (one rounding) where host
/// compilers round twice; keeping the product separate gives the same bits
/// on every backend.
template <class T>
KOKKOS_INLINE_FUNCTION T mul_unfused(T a, T b) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>, "mul_unfused: float or double");
#if defined(__CUDA_ARCH__)
  if constexpr (std::is_same_v<T, float>)
    return __fmul_rn(a, b);
  else
    return __dmul_rn(a, b);
#else
  return a * b;
#endif
}

/// lo + (hi - lo) * u with the same bits on every backend.
KOKKOS_INLINE_FUNCTION float scale_uniform(float u, float lo, float hi) { return lo + mul_unfused(hi - lo, u); }

/// Uniform double in [0, 1): the top 53 bits scaled exactly.
KOKKOS_INLINE_FUNCTION double bits_to_uniform_double(std::uint64_t bits) {
  return static_cast<double>(bits >> 11) * (1.0 / 9007199254740992.0);
}

/// Uniform integer in [0, n) (n < 2^32) by the multiply-high method.
KOKKOS_INLINE_FUNCTION std::uint32_t bits_to_index(std::uint64_t bits, std::uint32_t n) {
  return static_cast<std::uint32_t>(((bits >> 32) * static_cast<std::uint64_t>(n)) >> 32);
}

KOKKOS_INLINE_FUNCTION float counter_uniform(std::uint64_t seed, std::uint64_t stream, std::uint64_t counter) {
  return bits_to_uniform_float(counter_bits(seed, stream, counter));
}

KOKKOS_INLINE_FUNCTION double counter_uniform_double(std::uint64_t seed, std::uint64_t stream, std::uint64_t counter) {
  return bits_to_uniform_double(counter_bits(seed, stream, counter));
}

KOKKOS_INLINE_FUNCTION std::uint32_t counter_index(std::uint64_t seed, std::uint64_t stream, std::uint64_t counter,
                                                   std::uint32_t n) {
  return bits_to_index(counter_bits(seed, stream, counter), n);
}

/// Standard normal by Box-Muller from counters 2k and 2k+1 (first output
/// only, so draws stay a pure function of k).
KOKKOS_INLINE_FUNCTION double counter_normal(std::uint64_t seed, std::uint64_t stream, std::uint64_t k) {
  // 1 - u lies in (0, 1], so the log is finite.
  const double u1 = 1.0 - counter_uniform_double(seed, stream, 2 * k);
  const double u2 = counter_uniform_double(seed, stream, 2 * k + 1);
  return math::sqrt(-2.0 * math::log(u1)) * math::cos(6.283185307179586 * u2);
}

/// Tags for derive_seed: one per use of randomness in the pipeline.
namespace rng_tag {
inline constexpr std::uint64_t cartpole_reset = 1;
inline constexpr std::uint64_t market_start = 2;
inline constexpr std::uint64_t explore = 3;
inline constexpr std::uint64_t market_series = 4;
inline constexpr std::uint64_t offline_sample = 5;
}  // namespace rng_tag

}  // namespace foxrl::kernels
