#pragma once
// Dense-layer products of the Q-network, instance first:
//   forward           Y  = act(X W^T + b)          (bias + ReLU fused)
//   backward_input    dX = (dY W) * [H > 0]         (ReLU mask of the input fused)
//   backward_weights  dW = dY^T X,  db = colsum dY  (bias gradient fused)
// Two backends: a portable tiled team kernel (scratch tiles; Serial, OpenMP,
// Cuda alike) and Kokkos Kernels' gemm plus small epilogue kernels.
// All matrices are row-major (LayoutRight), like PyTorch's tensors.

#include "compat.hpp"
#include "compat_blas.hpp"
#include "error.hpp"
#include "weights.hpp"

#include <Kokkos_Core.hpp>

#include <climits>
#include <cstddef>
#include <string>

namespace foxrl {

/// Which implementation runs the dense products.
enum class DenseBackend {
  portable,  ///< foxrl's tiled Kokkos team kernel (fused epilogues)
  blas,      ///< KokkosBlas::gemm (cuBLAS on CUDA) + epilogue kernels
};

inline const char* to_string(DenseBackend b) { return b == DenseBackend::portable ? "portable" : "blas"; }

/// Row-major matrix views the dense kernels take (unmanaged: callers own).
template <class MemorySpace>
using ConstMatrix =
    Kokkos::View<const float**, Kokkos::LayoutRight, MemorySpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
template <class MemorySpace>
using MutableMatrix =
    Kokkos::View<float**, Kokkos::LayoutRight, MemorySpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
template <class MemorySpace>
using ConstVector =
    Kokkos::View<const float*, Kokkos::LayoutRight, MemorySpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
template <class MemorySpace>
using MutableVector =
    Kokkos::View<float*, Kokkos::LayoutRight, MemorySpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

namespace kernels {

/// Element (r, c) of a strided matrix; rows >= split come from ptr2 (row
/// r - split), which lets one launch read two stacked inputs (s and s').
struct GemmOperand {
  const float* ptr = nullptr;
  const float* ptr2 = nullptr;
  int split = INT_MAX;
  std::ptrdiff_t row_stride = 0;
  std::ptrdiff_t col_stride = 0;

  KOKKOS_INLINE_FUNCTION float operator()(int r, int c) const {
    return r < split ? ptr[r * row_stride + c * col_stride] : ptr2[(r - split) * row_stride + c * col_stride];
  }
};

/// What happens to each output element after the product.
struct GemmEpilogue {
  const float* bias = nullptr;  ///< + bias[n]
  bool relu = false;            ///< max(., 0)
  const float* mask = nullptr;  ///< * [mask[m, n] > 0] (ReLU backward)
  std::ptrdiff_t mask_ld = 0;
  float* a_rowsum = nullptr;    ///< a_rowsum[m] = sum_k A(m, k) (bias gradient)
};

/// Tile shape of the portable kernel: a team computes a TM x TN tile of C,
/// each thread an RM x RN register block, walking K in TK-wide slabs that
/// the team stages in scratch. Host backends run one thread per team with a
/// small tile (the register block is the tile); GPUs a 64 x 64 tile with 256
/// threads of 4 x 4.
template <class ExecSpace,
          bool host = Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename ExecSpace::memory_space>::accessible>
struct GemmTiling {
  static constexpr int tm = 8, tn = 8, tk = 64, rm = 8, rn = 8;
};
template <class ExecSpace>
struct GemmTiling<ExecSpace, false> {
  static constexpr int tm = 64, tn = 64, tk = 16, rm = 4, rn = 4;
};

/// C[M, N] = epilogue(sum_k A(m, k) B(k, n)), one team per output tile.
template <class ExecSpace>
struct TiledGemm {
  using tiling = GemmTiling<ExecSpace>;
  static constexpr int TM = tiling::tm, TN = tiling::tn, TK = tiling::tk, RM = tiling::rm, RN = tiling::rn;
  static constexpr int TX = TN / RN;  // threads along n
  static constexpr int TY = TM / RM;  // threads along m
  static constexpr int team_size = TX * TY;
  // +1 keeps the transposing scratch stores free of bank conflicts.
  static constexpr int LA = TM + 1;
  static constexpr int LB = TN + 1;
  static constexpr std::size_t scratch_floats = std::size_t(TK) * LA + std::size_t(TK) * LB + TM;

  using policy_type = Kokkos::TeamPolicy<ExecSpace>;
  using member_type = typename policy_type::member_type;

  GemmOperand a, b;
  float* c = nullptr;
  std::ptrdiff_t ldc = 0;
  int M = 0, N = 0, K = 0;
  GemmEpilogue ep;
  int tiles_n = 1;

  KOKKOS_INLINE_FUNCTION void operator()(const member_type& team) const {
    float* As = static_cast<float*>(team.team_shmem().get_shmem(sizeof(float) * TK * LA));
    float* Bs = static_cast<float*>(team.team_shmem().get_shmem(sizeof(float) * TK * LB));
    float* rowsum = static_cast<float*>(team.team_shmem().get_shmem(sizeof(float) * TM));
    const int tile = team.league_rank();
    const int m0 = (tile / tiles_n) * TM;
    const int n0 = (tile % tiles_n) * TN;
    const int rank = team.team_rank();
    const int size = team.team_size();
    const int tx = rank % TX;
    const int ty = rank / TX;
    const bool do_rowsum = ep.a_rowsum != nullptr && n0 == 0;

    float acc[RM][RN];
    for (int i = 0; i < RM; ++i)
      for (int j = 0; j < RN; ++j) acc[i][j] = 0.0f;
    if (do_rowsum)
      for (int i = rank; i < TM; i += size) rowsum[i] = 0.0f;

    for (int k0 = 0; k0 < K; k0 += TK) {
      team.team_barrier();
      // Consecutive threads read consecutive addresses of whichever operand
      // index has unit stride.
      for (int e = rank; e < TM * TK; e += size) {
        int mm, kk;
        if (a.col_stride == 1) { mm = e / TK; kk = e % TK; }
        else { kk = e / TM; mm = e % TM; }
        const int m = m0 + mm, k = k0 + kk;
        As[kk * LA + mm] = (m < M && k < K) ? a(m, k) : 0.0f;
      }
      for (int e = rank; e < TN * TK; e += size) {
        int nn, kk;
        if (b.row_stride == 1) { nn = e / TK; kk = e % TK; }
        else { kk = e / TN; nn = e % TN; }
        const int n = n0 + nn, k = k0 + kk;
        Bs[kk * LB + nn] = (n < N && k < K) ? b(k, n) : 0.0f;
      }
      team.team_barrier();
      if (do_rowsum) {
        for (int i = rank; i < TM; i += size) {
          float s = 0.0f;
          for (int kk = 0; kk < TK; ++kk) s += As[kk * LA + i];
          rowsum[i] += s;
        }
      }
      for (int kk = 0; kk < TK; ++kk) {
        float av[RM], bv[RN];
        for (int i = 0; i < RM; ++i) av[i] = As[kk * LA + ty * RM + i];
        for (int j = 0; j < RN; ++j) bv[j] = Bs[kk * LB + tx + j * TX];
        for (int i = 0; i < RM; ++i)
          for (int j = 0; j < RN; ++j) acc[i][j] += av[i] * bv[j];
      }
    }

    for (int i = 0; i < RM; ++i) {
      const int m = m0 + ty * RM + i;
      if (m >= M) break;
      for (int j = 0; j < RN; ++j) {
        const int n = n0 + tx + j * TX;
        if (n >= N) break;
        float v = acc[i][j];
        if (ep.bias != nullptr) v += ep.bias[n];
        if (ep.relu) v = v > 0.0f ? v : 0.0f;
        if (ep.mask != nullptr && !(ep.mask[m * ep.mask_ld + n] > 0.0f)) v = 0.0f;
        c[m * ldc + n] = v;
      }
    }
    if (do_rowsum)
      for (int i = rank; i < TM; i += size)
        if (m0 + i < M) ep.a_rowsum[m0 + i] = rowsum[i];
  }
};

/// Launches the portable tiled product on `space`.
template <class ExecSpace>
void tiled_gemm(const ExecSpace& space, const char* label, const GemmOperand& a, const GemmOperand& b, float* c,
                std::ptrdiff_t ldc, int M, int N, int K, const GemmEpilogue& ep) {
  if (M == 0 || N == 0) return;
  using F = TiledGemm<ExecSpace>;
  F f;
  f.a = a;
  f.b = b;
  f.c = c;
  f.ldc = ldc;
  f.M = M;
  f.N = N;
  f.K = K;
  f.ep = ep;
  f.tiles_n = (N + F::TN - 1) / F::TN;
  const int tiles_m = (M + F::TM - 1) / F::TM;
  typename F::policy_type policy(space, tiles_m * f.tiles_n, F::team_size);
  Kokkos::parallel_for(label, policy.set_scratch_size(0, Kokkos::PerTeam(sizeof(float) * F::scratch_floats)), f);
}

namespace detail {

template <class View>
GemmOperand row_major(const View& v) {
  GemmOperand op;
  op.ptr = v.data();
  op.ptr2 = v.data();
  op.row_stride = static_cast<std::ptrdiff_t>(v.stride(0));
  op.col_stride = 1;
  return op;
}

template <class View>
GemmOperand transposed(const View& v) {
  GemmOperand op = row_major(v);
  op.row_stride = 1;
  op.col_stride = static_cast<std::ptrdiff_t>(v.stride(0));
  return op;
}

inline void check_shapes(bool ok, const char* what, const std::string& shapes) {
  if (!ok) throw Error(std::string("foxrl::kernels::") + what + ": shape mismatch: " + shapes);
}

inline std::string dims(std::size_t r, std::size_t c) {
  std::string s(1, '[');
  s += std::to_string(r);
  s += ", ";
  s += std::to_string(c);
  s += ']';
  return s;
}

}  // namespace detail

/// Y[M, N] = act(X W^T + b) with X = [X1; X2] stacked by rows (X2 may be
/// empty). W is [N, K] (PyTorch's layout). The blas backend needs X2 empty
/// (stack the inputs first).
template <class ExecSpace, class MemorySpace>
void dense_forward(const ExecSpace& space, DenseBackend backend, const ConstMatrix<MemorySpace>& x1,
                   const ConstMatrix<MemorySpace>& x2, const ConstMatrix<MemorySpace>& w,
                   const ConstVector<MemorySpace>& bias, bool relu, const MutableMatrix<MemorySpace>& y) {
  const int M = static_cast<int>(x1.extent(0) + x2.extent(0));
  const int N = static_cast<int>(w.extent(0));
  const int K = static_cast<int>(w.extent(1));
  detail::check_shapes(
      x1.extent(1) == std::size_t(K) && (x2.extent(0) == 0 || x2.extent(1) == std::size_t(K)) &&
          y.extent(0) == std::size_t(M) && y.extent(1) == std::size_t(N) && bias.extent(0) == std::size_t(N),
      "dense_forward",
      "X " + detail::dims(x1.extent(0), x1.extent(1)) + " + " + detail::dims(x2.extent(0), x2.extent(1)) + ", W " +
          detail::dims(N, K) + ", Y " + detail::dims(y.extent(0), y.extent(1)));
  if (backend == DenseBackend::portable) {
    GemmOperand a = detail::row_major(x1);
    if (x2.extent(0) > 0) {
      if (x2.stride(0) != x1.stride(0))
        throw Error("foxrl::kernels::dense_forward: stacked inputs need equal row strides");
      a.ptr2 = x2.data();
      a.split = static_cast<int>(x1.extent(0));
    }
    GemmEpilogue ep;
    ep.bias = bias.data();
    ep.relu = relu;
    tiled_gemm(space, "foxrl::kernels::dense_forward", a, detail::transposed(w), y.data(),
               static_cast<std::ptrdiff_t>(y.stride(0)), M, N, K, ep);
    return;
  }
  if (x2.extent(0) > 0) throw Error("foxrl::kernels::dense_forward: the blas backend needs one stacked input");
  compat::gemm(space, "N", "T", 1.0f, x1, w, 0.0f, y);
  Kokkos::parallel_for(
      "foxrl::kernels::dense_forward::bias_act",
      Kokkos::MDRangePolicy<ExecSpace, Kokkos::Rank<2>>(space, {0, 0}, {M, N}), KOKKOS_LAMBDA(int m, int n) {
        const float v = y(m, n) + bias(n);
        y(m, n) = relu && !(v > 0.0f) ? 0.0f : v;
      });
}

/// dX[M, K] = (dY[M, N] W[N, K]) * [mask > 0]; `mask` (the ReLU output that
/// was this layer's input, [M, K]) may be empty for no mask.
template <class ExecSpace, class MemorySpace>
void dense_backward_input(const ExecSpace& space, DenseBackend backend, const ConstMatrix<MemorySpace>& dy,
                          const ConstMatrix<MemorySpace>& w, const ConstMatrix<MemorySpace>& mask,
                          const MutableMatrix<MemorySpace>& dx) {
  const int M = static_cast<int>(dy.extent(0));
  const int N = static_cast<int>(w.extent(0));
  const int K = static_cast<int>(w.extent(1));
  const bool masked = mask.extent(0) > 0;
  detail::check_shapes(
      dy.extent(1) == std::size_t(N) && dx.extent(0) == std::size_t(M) && dx.extent(1) == std::size_t(K) &&
          (!masked || (mask.extent(0) >= std::size_t(M) && mask.extent(1) == std::size_t(K))),
      "dense_backward_input",
      "dY " + detail::dims(dy.extent(0), dy.extent(1)) + ", W " + detail::dims(N, K) + ", dX " +
          detail::dims(dx.extent(0), dx.extent(1)));
  if (backend == DenseBackend::portable) {
    GemmEpilogue ep;
    if (masked) {
      ep.mask = mask.data();
      ep.mask_ld = static_cast<std::ptrdiff_t>(mask.stride(0));
    }
    tiled_gemm(space, "foxrl::kernels::dense_backward_input", detail::row_major(dy), detail::row_major(w),
               dx.data(), static_cast<std::ptrdiff_t>(dx.stride(0)), M, K, N, ep);
    return;
  }
  compat::gemm(space, "N", "N", 1.0f, dy, w, 0.0f, dx);
  if (!masked) return;
  Kokkos::parallel_for(
      "foxrl::kernels::dense_backward_input::relu_mask",
      Kokkos::MDRangePolicy<ExecSpace, Kokkos::Rank<2>>(space, {0, 0}, {M, K}), KOKKOS_LAMBDA(int m, int k) {
        if (!(mask(m, k) > 0.0f)) dx(m, k) = 0.0f;
      });
}

/// dW[N, K] = dY[M, N]^T X[M, K], db[N] = sum_m dY[m, n] (overwritten, not
/// accumulated).
template <class ExecSpace, class MemorySpace>
void dense_backward_weights(const ExecSpace& space, DenseBackend backend, const ConstMatrix<MemorySpace>& dy,
                            const ConstMatrix<MemorySpace>& x, const MutableMatrix<MemorySpace>& dw,
                            const MutableVector<MemorySpace>& db) {
  const int M = static_cast<int>(dy.extent(0));
  const int N = static_cast<int>(dy.extent(1));
  const int K = static_cast<int>(x.extent(1));
  detail::check_shapes(
      x.extent(0) == std::size_t(M) && dw.extent(0) == std::size_t(N) && dw.extent(1) == std::size_t(K) &&
          db.extent(0) == std::size_t(N) && M > 0,
      "dense_backward_weights",
      "dY " + detail::dims(dy.extent(0), dy.extent(1)) + ", X " + detail::dims(x.extent(0), x.extent(1)) + ", dW " +
          detail::dims(dw.extent(0), dw.extent(1)));
  if (backend == DenseBackend::portable) {
    GemmEpilogue ep;
    ep.a_rowsum = db.data();
    tiled_gemm(space, "foxrl::kernels::dense_backward_weights", detail::transposed(dy), detail::row_major(x),
               dw.data(), static_cast<std::ptrdiff_t>(dw.stride(0)), N, K, M, ep);
    return;
  }
  compat::gemm(space, "T", "N", 1.0f, dy, x, 0.0f, dw);
  Kokkos::parallel_for(
      "foxrl::kernels::dense_backward_weights::bias_grad", Kokkos::RangePolicy<ExecSpace>(space, 0, N),
      KOKKOS_LAMBDA(int n) {
        float s = 0.0f;
        for (int m = 0; m < M; ++m) s += dy(m, n);
        db(n) = s;
      });
}

}  // namespace kernels
}  // namespace foxrl
