#pragma once
// RowMajorGemm: C = op(A) op(B) on row-major (LayoutRight) float matrices,
// on the caller's instance, in one MatmulPrecision. On CUDA it calls cuBLAS
// directly through a CublasHandle it owns (bound to the instance's stream
// once): cublasSgemm in fp32; in tf32 cublasGemmEx with the compute type
// CUBLAS_COMPUTE_32F_FAST_TF32 (fp32 operands, rounded inside the
// tensor-core kernel, fp32 accumulation); in bf16 cublasGemmEx on bf16
// copies of both operands (one rounding launch each) with fp32 output and
// accumulation: the compute type _FAST_16BF on fp32 operands was measured
// to give tf32's results bit for bit (H200, CUDA 13.0), so it is not used.
// Elsewhere it calls Kokkos Kernels' gemm
// (src/core/compat_blas.hpp), on rounded copies of the operands in tf32
// and bf16.
//
// cuBLAS is column-major. A row-major [r, c] matrix with row stride ld is
// the column-major [c, r] matrix (its transpose) with leading dimension ld,
// so the row-major C = op(A) op(B) is the column-major
// C^T = op(B)^T op(A)^T = op(B_cm) op(A_cm): the operands swap, the
// transpose flags stay, and (m, n, k) = (N, M, K). E.g. Y = X W^T with
// W [out, in]: cublasSgemm(T, N, out, rows, in, W, in, X, in, Y, out).

#include "core/compat_blas.hpp"
#include "core/error.hpp"
#include "kernels/core/write_words.hpp"
#include "kernels/nn/matmul_precision.hpp"
#include "kernels/nn/round_operand.hpp"
#include "nn/cublas_handle.hpp"
#include "views/nn/matrix.hpp"

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

namespace foxrl {

namespace detail {

/// Checks op(A) [M, K] x op(B) [K, N] = C [M, N]; returns {M, N, K}.
template <class A, class B, class C>
void check_gemm_shapes(bool trans_a, bool trans_b, const A& a, const B& b, const C& c, int& M, int& N, int& K) {
  M = static_cast<int>(trans_a ? a.extent(1) : a.extent(0));
  K = static_cast<int>(trans_a ? a.extent(0) : a.extent(1));
  const auto kb = trans_b ? b.extent(1) : b.extent(0);
  N = static_cast<int>(trans_b ? b.extent(0) : b.extent(1));
  if (kb != std::size_t(K) || c.extent(0) != std::size_t(M) || c.extent(1) != std::size_t(N))
    throw LogicError("foxrl::RowMajorGemm: shape mismatch: op(A) [" + std::to_string(M) + ", " + std::to_string(K) +
                     "], op(B) [" + std::to_string(kb) + ", " + std::to_string(N) + "], C [" +
                     std::to_string(c.extent(0)) + ", " + std::to_string(c.extent(1)) + "]");
  if (K == 0) throw LogicError("foxrl::RowMajorGemm: inner dimension is 0");
}

}  // namespace detail

/// Up to three products Y_j = X_j W_j^T of one shape (M rows, K inputs, N
/// outputs) and one row stride per operand kind, for
/// RowMajorGemm::forward_batched.
template <class MemorySpace>
struct BatchedForward {
  static constexpr int max_count = 3;
  int count = 0;
  int rows = 0, inputs = 0, outputs = 0;
  std::int64_t x_ld = 0, w_ld = 0, y_ld = 0;
  const float* x[max_count] = {};
  const float* w[max_count] = {};
  float* y[max_count] = {};

  /// Adds product Y = X W^T; false (nothing added) when it is the
  /// (count + 1)-th past max_count or its shape or strides differ from the
  /// first's.
  bool add(const ConstMatrix<MemorySpace>& x_j, const ConstMatrix<MemorySpace>& w_j,
           const MutableMatrix<MemorySpace>& y_j) {
    const int m = static_cast<int>(x_j.extent(0)), k = static_cast<int>(x_j.extent(1));
    const int n = static_cast<int>(w_j.extent(0));
    if (count == max_count || w_j.extent(1) != std::size_t(k) || y_j.extent(0) != std::size_t(m) ||
        y_j.extent(1) != std::size_t(n))
      return false;
    const auto ld = [](const auto& v) { return static_cast<std::int64_t>(v.stride(0)); };
    if (count == 0) {
      rows = m, inputs = k, outputs = n;
      x_ld = ld(x_j), w_ld = ld(w_j), y_ld = ld(y_j);
    } else if (m != rows || k != inputs || n != outputs || ld(x_j) != x_ld || ld(w_j) != w_ld || ld(y_j) != y_ld) {
      return false;
    }
    x[count] = x_j.data();
    w[count] = w_j.data();
    y[count] = y_j.data();
    ++count;
    return true;
  }
};

/// C = op(A) op(B) (beta = 0) on row-major matrices; see the file comment.
template <class ExecSpace>
class RowMajorGemm {
 public:
  using memory_space = typename ExecSpace::memory_space;

  explicit RowMajorGemm(const ExecSpace&, MatmulPrecision precision = MatmulPrecision::fp32) : precision_(precision) {}

  MatmulPrecision precision() const { return precision_; }
  /// The library's device workspace for other calls on the same stream
  /// (none on this backend).
  void* workspace() const { return nullptr; }

  void operator()(const ExecSpace& space, bool trans_a, bool trans_b, const ConstMatrix<memory_space>& a,
                  const ConstMatrix<memory_space>& b, const MutableMatrix<memory_space>& c) {
    int M = 0, N = 0, K = 0;
    detail::check_gemm_shapes(trans_a, trans_b, a, b, c, M, N, K);
    if (M == 0 || N == 0) return;
    if (precision_ == MatmulPrecision::fp32) {
      compat::gemm(space, trans_a ? "T" : "N", trans_b ? "T" : "N", 1.0f, a, b, 0.0f, c);
      return;
    }
    compat::gemm(space, trans_a ? "T" : "N", trans_b ? "T" : "N", 1.0f, rounded(space, 0, a), rounded(space, 1, b),
                 0.0f, c);
  }

  /// Products Y_j = X_j W_j^T of one shape in one library call (CUDA; see
  /// there). Not offered here: returns false, nothing runs.
  bool forward_batched(const ExecSpace&, const BatchedForward<memory_space>&) { return false; }

 private:
  /// A copy of `m` rounded to the precision, in operand buffer `slot`
  /// (grown on first use of a larger operand, then reused).
  ConstMatrix<memory_space> rounded(const ExecSpace& space, int slot, const ConstMatrix<memory_space>& m) {
    Kokkos::View<float*, memory_space>& buffer = operands_[slot];
    const std::size_t n = m.extent(0) * m.extent(1);
    if (buffer.extent(0) < n)
      buffer = Kokkos::View<float*, memory_space>(
          Kokkos::view_alloc(space, Kokkos::WithoutInitializing, "foxrl::RowMajorGemm::rounded_operand"), n);
    const MutableMatrix<memory_space> copy(buffer.data(), m.extent(0), m.extent(1));
    kernels::round_operand(space, m, copy, precision_);
    return copy;
  }

  MatmulPrecision precision_;
  Kokkos::View<float*, memory_space> operands_[2];
};

#ifdef KOKKOS_ENABLE_CUDA
/// cuBLAS on the instance's stream (one handle per object).
template <>
class RowMajorGemm<Kokkos::Cuda> {
 public:
  using memory_space = Kokkos::Cuda::memory_space;

  explicit RowMajorGemm(const Kokkos::Cuda& space, MatmulPrecision precision = MatmulPrecision::fp32)
      : handle_(space), precision_(precision) {}

  MatmulPrecision precision() const { return precision_; }
  /// cuBLAS's workspace (CublasHandle::workspace_bytes), for cuBLASLt calls
  /// on the same stream.
  void* workspace() const { return handle_.workspace(); }

  void operator()(const Kokkos::Cuda& space, bool trans_a, bool trans_b, const ConstMatrix<memory_space>& a,
                  const ConstMatrix<memory_space>& b, const MutableMatrix<memory_space>& c) {
    int M = 0, N = 0, K = 0;
    detail::check_gemm_shapes(trans_a, trans_b, a, b, c, M, N, K);
    if (M == 0 || N == 0) return;
    const float alpha = 1.0f, beta = 0.0f;
    const auto op = [](bool t) { return t ? CUBLAS_OP_T : CUBLAS_OP_N; };
    if (precision_ == MatmulPrecision::tf32) {
      detail::check_cublas(
          cublasGemmEx(handle_.get(space), op(trans_b), op(trans_a), N, M, K, &alpha, b.data(), CUDA_R_32F,
                       static_cast<int>(b.stride(0)), a.data(), CUDA_R_32F, static_cast<int>(a.stride(0)), &beta,
                       c.data(), CUDA_R_32F, static_cast<int>(c.stride(0)), CUBLAS_COMPUTE_32F_FAST_TF32,
                       CUBLAS_GEMM_DEFAULT),
          "cublasGemmEx");
      return;
    }
    if (precision_ == MatmulPrecision::bf16) {
      const std::uint16_t* a16 = bf16(space, 0, a);
      const std::uint16_t* b16 = bf16(space, 1, b);
      detail::check_cublas(
          cublasGemmEx(handle_.get(space), op(trans_b), op(trans_a), N, M, K, &alpha, b16, CUDA_R_16BF,
                       static_cast<int>(b.stride(0)), a16, CUDA_R_16BF, static_cast<int>(a.stride(0)), &beta, c.data(),
                       CUDA_R_32F, static_cast<int>(c.stride(0)), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
          "cublasGemmEx");
      return;
    }
    detail::check_cublas(cublasSgemm(handle_.get(space), op(trans_b), op(trans_a), N, M, K, &alpha, b.data(),
                                     static_cast<int>(b.stride(0)), a.data(), static_cast<int>(a.stride(0)), &beta,
                                     c.data(), static_cast<int>(c.stride(0))),
                         "cublasSgemm");
  }

  /// The products of `p` in one cublasSgemmBatched call (fp32 only: other
  /// precisions return false and run nothing). Its arrays of operand
  /// pointers live in device memory, rewritten by a one-thread-per-pointer
  /// launch on `space` only when they differ from the last call's: a
  /// learner's paired forward passes the same buffers every update, so a
  /// replayed graph holds the product alone.
  bool forward_batched(const Kokkos::Cuda& space, const BatchedForward<memory_space>& p) {
    if (precision_ != MatmulPrecision::fp32 || p.count == 0) return false;
    constexpr int n = BatchedForward<memory_space>::max_count;
    Kokkos::Array<std::uintptr_t, 3 * n> wanted{};
    for (int j = 0; j < p.count; ++j) {
      wanted[j] = reinterpret_cast<std::uintptr_t>(p.w[j]);
      wanted[n + j] = reinterpret_cast<std::uintptr_t>(p.x[j]);
      wanted[2 * n + j] = reinterpret_cast<std::uintptr_t>(p.y[j]);
    }
    if (pointers_.extent(0) == 0)
      pointers_ = Kokkos::View<std::uintptr_t*, memory_space>(
          Kokkos::view_alloc(space, "foxrl::RowMajorGemm::batch_pointers"), 3 * n);
    bool same = pointers_set_;
    for (int i = 0; i < 3 * n; ++i) same = same && pointers_host_[i] == wanted[i];
    if (!same) {
      kernels::write_words(space, pointers_, wanted);
      pointers_host_ = wanted;
      pointers_set_ = true;
    }
    const float alpha = 1.0f, beta = 0.0f;
    const auto* base = reinterpret_cast<float* const*>(pointers_.data());
    // Column-major Y_j^T [N, M] = op_T(W_j) X_j^T, as operator() for
    // (trans_a, trans_b) = (false, true).
    detail::check_cublas(cublasSgemmBatched(handle_.get(space), CUBLAS_OP_T, CUBLAS_OP_N, p.outputs, p.rows, p.inputs,
                                            &alpha, base, static_cast<int>(p.w_ld), base + n, static_cast<int>(p.x_ld),
                                            &beta, base + 2 * n, static_cast<int>(p.y_ld), p.count),
                         "cublasSgemmBatched");
    return true;
  }

 private:
  /// A bf16 copy of `m` in operand buffer `slot` (grown on first use of a
  /// larger operand: a learner's first update runs directly, before any
  /// graph capture, so the allocation never lands inside one).
  const std::uint16_t* bf16(const Kokkos::Cuda& space, int slot, const ConstMatrix<memory_space>& m) {
    Kokkos::View<std::uint16_t*, memory_space>& buffer = bf16_[slot];
    const std::size_t n = m.extent(0) * m.extent(1);
    if (buffer.extent(0) < n)
      buffer = Kokkos::View<std::uint16_t*, memory_space>(
          Kokkos::view_alloc(space, Kokkos::WithoutInitializing, "foxrl::RowMajorGemm::bf16_operand"), n);
    kernels::bf16_operand(space, m, buffer);
    return buffer.data();
  }

  CublasHandle handle_;
  MatmulPrecision precision_;
  Kokkos::View<std::uint16_t*, memory_space> bf16_[2];
  /// forward_batched's operand pointers (W, then X, then Y; 3 each) on the
  /// device and as last written.
  Kokkos::View<std::uintptr_t*, memory_space> pointers_;
  Kokkos::Array<std::uintptr_t, 3 * BatchedForward<memory_space>::max_count> pointers_host_{};
  bool pointers_set_ = false;
};
#endif

}  // namespace foxrl
