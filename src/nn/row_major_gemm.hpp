#pragma once
// RowMajorGemm: C = op(A) op(B) on row-major (LayoutRight) float matrices,
// on the caller's instance. On CUDA it calls cuBLAS directly through a
// CublasHandle it owns (bound to the instance's stream once); elsewhere it
// calls Kokkos Kernels' gemm (src/core/compat_blas.hpp).
//
// cuBLAS is column-major. A row-major [r, c] matrix with row stride ld is
// the column-major [c, r] matrix (its transpose) with leading dimension ld,
// so the row-major C = op(A) op(B) is the column-major
// C^T = op(B)^T op(A)^T = op(B_cm) op(A_cm): the operands swap, the
// transpose flags stay, and (m, n, k) = (N, M, K). E.g. Y = X W^T with
// W [out, in]: cublasSgemm(T, N, out, rows, in, W, in, X, in, Y, out).

#include "core/compat_blas.hpp"
#include "core/error.hpp"
#include "nn/cublas_handle.hpp"
#include "views/nn/matrix.hpp"

#include <Kokkos_Core.hpp>

#include <cstddef>
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

/// C = op(A) op(B) (beta = 0) on row-major matrices; see the file comment.
template <class ExecSpace>
class RowMajorGemm {
 public:
  using memory_space = typename ExecSpace::memory_space;

  explicit RowMajorGemm(const ExecSpace&) {}

  void operator()(const ExecSpace& space, bool trans_a, bool trans_b, const ConstMatrix<memory_space>& a,
                  const ConstMatrix<memory_space>& b, const MutableMatrix<memory_space>& c) {
    int M = 0, N = 0, K = 0;
    detail::check_gemm_shapes(trans_a, trans_b, a, b, c, M, N, K);
    if (M == 0 || N == 0) return;
    compat::gemm(space, trans_a ? "T" : "N", trans_b ? "T" : "N", 1.0f, a, b, 0.0f, c);
  }
};

#ifdef KOKKOS_ENABLE_CUDA
/// cuBLAS on the instance's stream (one handle per object).
template <>
class RowMajorGemm<Kokkos::Cuda> {
 public:
  using memory_space = Kokkos::Cuda::memory_space;

  explicit RowMajorGemm(const Kokkos::Cuda& space) : handle_(space) {}

  void operator()(const Kokkos::Cuda& space, bool trans_a, bool trans_b, const ConstMatrix<memory_space>& a,
                  const ConstMatrix<memory_space>& b, const MutableMatrix<memory_space>& c) {
    int M = 0, N = 0, K = 0;
    detail::check_gemm_shapes(trans_a, trans_b, a, b, c, M, N, K);
    if (M == 0 || N == 0) return;
    const float alpha = 1.0f, beta = 0.0f;
    const auto op = [](bool t) { return t ? CUBLAS_OP_T : CUBLAS_OP_N; };
    detail::check_cublas(cublasSgemm(handle_.get(space), op(trans_b), op(trans_a), N, M, K, &alpha, b.data(),
                                     static_cast<int>(b.stride(0)), a.data(), static_cast<int>(a.stride(0)), &beta,
                                     c.data(), static_cast<int>(c.stride(0))),
                         "cublasSgemm");
  }

 private:
  CublasHandle handle_;
};
#endif

}  // namespace foxrl
