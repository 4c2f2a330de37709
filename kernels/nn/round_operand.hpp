#pragma once
// round_operand: a copy of a row-major matrix with every element rounded to
// a tensor-core input precision (kernels/nn/matmul_precision.hpp): what the host
// backends' RowMajorGemm multiplies in the tf32 and bf16 modes, so they lose
// the input precision a GPU's tensor cores lose. bf16_operand: the same
// rounding to bf16, stored as bf16 (the upper 16 bits of the rounded
// float, exact): the operands cuBLAS multiplies in the bf16 mode.

#include "core/compat.hpp"
#include "kernels/nn/matmul_precision.hpp"
#include "views/nn/matrix.hpp"

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>

namespace foxrl {
namespace kernels {

/// round_operand's kernel: to[i] = round_to_precision(from[i], precision).
/// A named functor, not a KOKKOS_LAMBDA (see RecordStepInOneTeam in
/// kernels/collect/record_step.hpp).
struct RoundOperandKernel {
  const float* from;
  float* to;
  MatmulPrecision precision;
  KOKKOS_INLINE_FUNCTION void operator()(const std::size_t i) const { to[i] = round_to_precision(from[i], precision); }
};

/// dst = round_to_precision(src, precision), element by element; dst has
/// src's shape (both LayoutRight, so one flat index covers them).
template <class ExecSpace>
void round_operand(const ExecSpace& space, const ConstMatrix<typename ExecSpace::memory_space>& src,
                   const MutableMatrix<typename ExecSpace::memory_space>& dst, MatmulPrecision precision) {
  const std::size_t n = src.extent(0) * src.extent(1);
  const float* from = src.data();
  float* to = dst.data();
  Kokkos::parallel_for("foxrl::kernels::round_operand", Kokkos::RangePolicy<ExecSpace>(space, 0, n),
                       RoundOperandKernel{from, to, precision});
}

/// bf16_operand's kernel: to[i] = the bf16 bits of round_to_precision(from[i], bf16).
struct Bf16OperandKernel {
  const float* from;
  std::uint16_t* to;
  KOKKOS_INLINE_FUNCTION void operator()(const std::size_t i) const {
    to[i] = static_cast<std::uint16_t>(compat::float_bits(round_to_precision(from[i], MatmulPrecision::bf16)) >> 16);
  }
};

/// dst[i] = the bf16 bits of round_to_precision(src[i], bf16) (its low 16
/// bits are zero after the rounding, so dropping them loses nothing).
template <class ExecSpace>
void bf16_operand(const ExecSpace& space, const ConstMatrix<typename ExecSpace::memory_space>& src,
                  const Kokkos::View<std::uint16_t*, typename ExecSpace::memory_space>& dst) {
  const std::size_t n = src.extent(0) * src.extent(1);
  const float* from = src.data();
  std::uint16_t* to = dst.data();
  Kokkos::parallel_for("foxrl::kernels::bf16_operand", Kokkos::RangePolicy<ExecSpace>(space, 0, n),
                       Bf16OperandKernel{from, to});
}

}  // namespace kernels
}  // namespace foxrl
