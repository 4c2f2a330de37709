#pragma once
// MatmulPrecision: the arithmetic of a network's dense products (TrainConfig's
// matmul_precision). fp32 is exact single precision (FFMA, no tensor cores),
// the default and the only mode the benchmarks' exact configs use. tf32 and
// bf16 are the opt-in tensor-core modes: each product reads its operands
// rounded to TF32 (10 explicit mantissa bits) or BF16 (7), multiplies them
// exactly and accumulates in fp32; weights, gradients and optimizer state
// stay fp32 (the "master weights"), only the products' inputs are rounded.
// On CUDA cuBLAS does the rounding inside its tensor-core kernels; on the
// host backends RowMajorGemm rounds copies of the operands first
// (round_to_precision below), so a host run shows the same loss of input
// precision a GPU run has and CI can check that training survives it.

#include "core/compat.hpp"
#include "core/error.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <string>

namespace foxrl {

enum class MatmulPrecision { fp32, tf32, bf16 };

inline const char* to_string(MatmulPrecision p) {
  switch (p) {
    case MatmulPrecision::tf32:
      return "tf32";
    case MatmulPrecision::bf16:
      return "bf16";
    default:
      return "fp32";
  }
}

/// "fp32", "tf32" or "bf16"; UsageError naming `where` otherwise.
inline MatmulPrecision parse_matmul_precision(const std::string& text, const std::string& where) {
  if (text == "fp32") return MatmulPrecision::fp32;
  if (text == "tf32") return MatmulPrecision::tf32;
  if (text == "bf16") return MatmulPrecision::bf16;
  throw UsageError(where + ": matmul_precision '" + text + "': expected fp32, tf32 or bf16");
}

/// Explicit mantissa bits an operand keeps (fp32 keeps all 23).
KOKKOS_INLINE_FUNCTION constexpr int mantissa_bits(MatmulPrecision p) {
  return p == MatmulPrecision::tf32 ? 10 : p == MatmulPrecision::bf16 ? 7 : 23;
}

/// `x` rounded to `bits` explicit mantissa bits, to nearest with ties to
/// even, in the fp32 exponent range (what a tensor core reads of an fp32
/// operand). Infinities and NaN pass unchanged; a finite value that rounds
/// past the largest float becomes infinity, as the conversion does.
KOKKOS_INLINE_FUNCTION float round_mantissa(float x, int bits) {
  if (bits >= 23) return x;
  std::uint32_t u = compat::float_bits(x);
  if ((u & 0x7f800000u) == 0x7f800000u) return x;  // inf or NaN
  const int drop = 23 - bits;
  const std::uint32_t half = 1u << (drop - 1);
  const std::uint32_t lsb = (u >> drop) & 1u;
  u += half - 1u + lsb;  // carries into the exponent where the mantissa overflows
  u &= ~((1u << drop) - 1u);
  return compat::bits_float(u);
}

KOKKOS_INLINE_FUNCTION float round_to_precision(float x, MatmulPrecision p) {
  return round_mantissa(x, mantissa_bits(p));
}

}  // namespace foxrl
