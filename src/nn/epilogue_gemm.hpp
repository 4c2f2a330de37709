#pragma once
// EpilogueGemm: dense-layer products with their element-wise work done in
// the gemm's own epilogue, so no separate launch reads the product back:
//   forward         Y  = act(X W^T + b)                  (bias, ReLU; optionally
//                                                         the ReLU's bitmask)
//   forward_pair    Y_i = act(X W_i^T + b_i), i = 1, 2   (two networks' layer
//                                                         over one input, one
//                                                         batched call)
//   backward_input  dX = (dY W) * [mask], db = colsum dX  (the mask is the
//                                                         bitmask the forward
//                                                         of that layer wrote)
// On CUDA this is cuBLASLt (epilogues BIAS, RELU_BIAS, RELU_AUX_BIAS and
// DRELU_BGRAD), one algorithm per shape from its heuristics, cached. The
// library does not offer every epilogue for every type, shape and
// alignment: each call says whether it ran (false: nothing was done, the
// caller runs its gemm + epilogue kernels, DenseOps). Elsewhere nothing is
// available and DenseOps never asks.
//
// Row-major C = op(A) op(B) is the column-major C^T = op(B)^T op(A)^T (see
// row_major_gemm.hpp), so for cuBLASLt the operands swap and the product's
// rows are our columns: the bias (one value per output feature) is a vector
// over the rows of its D, as cuBLASLt wants it, and the ReLU bitmask of a
// row-major [rows, features] activation is its column-major
// [features, rows] mask, `ld_bits` bits per row (a multiple of 128).

#include "kernels/nn/matmul_precision.hpp"
#include "views/nn/matrix.hpp"

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>

namespace foxrl {

/// The ReLU bitmask of a layer's output for rows [0, rows): row r's bit for
/// feature f is bit f % 8 of byte bits[r * ld_bits / 8 + f / 8] (cuBLASLt's
/// layout). Empty (bits == nullptr): no mask.
struct ReluBitmask {
  std::uint8_t* bits = nullptr;
  std::int64_t ld_bits = 0;
  int rows = 0;

  /// Bits per row for `features` outputs (cuBLASLt needs a multiple of 128).
  static std::int64_t row_bits(int features) { return (std::int64_t(features) + 127) / 128 * 128; }
  /// Bytes of a mask of `rows` rows of `features` outputs.
  static std::size_t bytes(int rows, int features) { return std::size_t(rows) * std::size_t(row_bits(features) / 8); }
};

/// No fused epilogues on this backend: every call reports that it did not
/// run (see the file comment).
template <class ExecSpace>
class EpilogueGemm {
 public:
  using memory_space = typename ExecSpace::memory_space;
  static constexpr bool available = false;

  EpilogueGemm(const ExecSpace&, MatmulPrecision, void* /*workspace*/) {}

  bool forward(const ExecSpace&, const ConstMatrix<memory_space>&, const ConstMatrix<memory_space>&,
               const ConstVector<memory_space>&, bool, const MutableMatrix<memory_space>&, const ReluBitmask&,
               bool = true) {
    return false;
  }
  bool forward_pair(const ExecSpace&, const ConstMatrix<memory_space>&, const ConstMatrix<memory_space>&,
                    const ConstVector<memory_space>&, const MutableMatrix<memory_space>&,
                    const ConstMatrix<memory_space>&, const ConstVector<memory_space>&,
                    const MutableMatrix<memory_space>&, bool, bool = true) {
    return false;
  }
  bool backward_input(const ExecSpace&, const ConstMatrix<memory_space>&, const ConstMatrix<memory_space>&,
                      const ReluBitmask&, const MutableMatrix<memory_space>&, const MutableVector<memory_space>&,
                      bool = true) {
    return false;
  }
};

}  // namespace foxrl

#ifdef KOKKOS_ENABLE_CUDA
#include "nn/cublaslt_epilogue_gemm.hpp"
#endif
