#pragma once
// foxrl's portable dense product: a tiled Kokkos team kernel (scratch-staged
// K slabs, register blocks, fused epilogues: bias, ReLU, ReLU mask, row
// sums) that runs alike on Serial, OpenMP and Cuda. The "portable" dense
// backend (src/nn/dense_ops.hpp) is built on it.
// All matrices are row-major (LayoutRight), like PyTorch's tensors.

#include <Kokkos_Core.hpp>

#include <climits>
#include <cstddef>

namespace foxrl {
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
  float* a_rowsum = nullptr;  ///< a_rowsum[m] = sum_k A(m, k) (bias gradient)
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
        if (a.col_stride == 1) {
          mm = e / TK;
          kk = e % TK;
        } else {
          kk = e / TM;
          mm = e % TM;
        }
        const int m = m0 + mm, k = k0 + kk;
        As[kk * LA + mm] = (m < M && k < K) ? a(m, k) : 0.0f;
      }
      for (int e = rank; e < TN * TK; e += size) {
        int nn, kk;
        if (b.row_stride == 1) {
          nn = e / TK;
          kk = e % TK;
        } else {
          kk = e / TN;
          nn = e % TN;
        }
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

/// Operand reading a row-major matrix view as it is.
template <class View>
GemmOperand row_major_operand(const View& v) {
  GemmOperand op;
  op.ptr = v.data();
  op.ptr2 = v.data();
  op.row_stride = static_cast<std::ptrdiff_t>(v.stride(0));
  op.col_stride = 1;
  return op;
}

/// Operand reading a row-major matrix view transposed.
template <class View>
GemmOperand transposed_operand(const View& v) {
  GemmOperand op = row_major_operand(v);
  op.row_stride = 1;
  op.col_stride = static_cast<std::ptrdiff_t>(v.stride(0));
  return op;
}

}  // namespace kernels
}  // namespace foxrl
