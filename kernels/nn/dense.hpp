#pragma once
// Dense-layer products of the Q-network, instance first:
//   forward           Y  = act(X W^T + b)          (bias + ReLU fused)
//   backward_input    dX = (dY W) * [H > 0]         (ReLU mask of the input fused)
//   backward_weights  dW = dY^T X,  db = colsum dY  (bias gradient fused)
// Two backends: a portable tiled team kernel (scratch tiles; Serial, OpenMP,
// Cuda alike) and a library gemm plus bandwidth-bound epilogue kernels
// (bias_activation, relu_backward, small_dense_forward below), which the
// learner's blas path also uses directly.
// All matrices are row-major (LayoutRight), like PyTorch's tensors.

#include "core/compat.hpp"
#include "core/compat_blas.hpp"
#include "kernels/nn/dueling.hpp"
#include "core/error.hpp"
#include "kernels/core/reduce_scratch.hpp"
#include "views/nn/weights.hpp"

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

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

/// y = act(y + bias) over a row-major [M, N] matrix: one flat launch, one
/// thread per element (the gemm epilogue of the blas backend). 32-bit
/// indices: a 64-bit modulo per element costs more than the memory traffic.
template <class ExecSpace, class MemorySpace>
void bias_activation(const ExecSpace& space, const MutableMatrix<MemorySpace>& y, const ConstVector<MemorySpace>& bias,
                     bool relu) {
  const std::size_t cols = y.extent(1);
  const std::size_t total = y.extent(0) * cols;
  if (total == 0) return;
  if (y.stride(0) != cols || bias.extent(0) != cols)
    throw Error("foxrl::kernels::bias_activation: y must be contiguous [M, N] and bias [N]");
  if (total > std::size_t(2147483647))
    throw Error("foxrl::kernels::bias_activation: more than 2^31 - 1 elements");
  float* out = y.data();
  const float* b = bias.data();
  const int N = static_cast<int>(cols);
  Kokkos::parallel_for(
      "foxrl::kernels::bias_activation",
      Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<int>>(space, 0, static_cast<int>(total)),
      KOKKOS_LAMBDA(int i) {
        const float v = out[i] + b[i % N];
        out[i] = relu && !(v > 0.0f) ? 0.0f : v;
      });
}

/// Operands of relu_backward. Pointers into row-major matrices with their
/// row strides; optional ones stay null.
struct ReluBackwardArgs {
  int rows = 0;  ///< M
  int cols = 0;  ///< K: width of the layer input
  /// dX [M, K] from a gemm (dY W); may alias dz. Null: the kernel computes
  /// dX = dy_small W_small itself (a head with few outputs).
  const float* src = nullptr;
  std::ptrdiff_t src_ld = 0;
  const float* dy_small = nullptr;  ///< [M, n_small]
  std::ptrdiff_t dy_ld = 0;
  const float* w_small = nullptr;   ///< [n_small, K]
  std::ptrdiff_t w_ld = 0;
  int n_small = 0;
  /// The layer input H [M, K] (a ReLU output): dZ = dX * [H > 0]; null: no
  /// mask. Also the X of dw_small.
  const float* act = nullptr;
  std::ptrdiff_t act_ld = 0;
  float* dz = nullptr;        ///< out [M, K] (null: not stored)
  std::ptrdiff_t dz_ld = 0;
  float* db = nullptr;        ///< out [K]: column sums of dZ (the previous layer's bias gradient)
  float* dw_small = nullptr;  ///< out [n_small, K]: dy_small^T H (the small layer's weight gradient)
  std::ptrdiff_t dw_ld = 0;
};

/// Team shape of relu_backward: a team owns TC * CW columns of one chunk of
/// rows; its TC x LANES threads walk the rows. GPUs: a warp reads 32
/// consecutive columns of a row (one 128-byte line), 8 warps share the
/// chunk's rows. Host backends: one thread walks 16 adjacent columns row by
/// row (one cache line per row).
template <class ExecSpace,
          bool host = Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename ExecSpace::memory_space>::accessible>
struct ReluBackwardTiling {
  static constexpr int tc = 1, lanes = 1, cw = 16, chunk_rows = 256;
};
template <class ExecSpace>
struct ReluBackwardTiling<ExecSpace, false> {
  static constexpr int tc = 32, lanes = 8, cw = 1, chunk_rows = 64;
};

/// dZ = dX * [H > 0], db = colsum dZ, dW_small = dY_small^T H in one pass
/// over the rows (see ReluBackwardArgs). Column sums of a chunk of rows meet
/// in team scratch; with several row chunks the last team of each column
/// tile adds the chunks' partials in chunk order (deterministic).
template <class ExecSpace>
struct ReluBackwardFunctor {
  using tiling = ReluBackwardTiling<ExecSpace>;
  static constexpr int TC = tiling::tc, LANES = tiling::lanes, CW = tiling::cw;
  static constexpr int team_size = TC * LANES;
  static constexpr int tile_cols = TC * CW;
  using policy_type = Kokkos::TeamPolicy<ExecSpace>;
  using member_type = typename policy_type::member_type;

  ReluBackwardArgs a;
  int values = 0;  ///< reduced values per column: (db ? 1 : 0) + (dw_small ? n_small : 0)
  int col_tiles = 1;
  int row_chunks = 1;
  int chunk_rows = 1;
  float* partials = nullptr;  ///< [row_chunks, values, cols] when row_chunks > 1
  unsigned* tickets = nullptr;

  KOKKOS_INLINE_FUNCTION static std::size_t scratch_floats(int values) {
    return std::size_t(team_size) * CW * std::size_t(values);
  }

  KOKKOS_INLINE_FUNCTION void operator()(const member_type& team) const {
    const int tile = team.league_rank() % col_tiles;
    const int chunk = team.league_rank() / col_tiles;
    const int rank = team.team_rank();
    const int tc = rank % TC;
    const int lane = rank / TC;
    const int c0 = tile * tile_cols;
    float* acc = values > 0 ? static_cast<float*>(team.team_shmem().get_shmem(sizeof(float) * scratch_floats(values)))
                            : nullptr;
    // acc[(j * values + r) * team_size + rank]: value r of column j of this thread.
    for (int e = 0; e < CW * values; ++e) acc[e * team_size + rank] = 0.0f;

    const int r0 = chunk * chunk_rows;
    const int r1 = r0 + chunk_rows < a.rows ? r0 + chunk_rows : a.rows;
    const int db_slot = a.db != nullptr ? 1 : 0;
    for (int m = r0 + lane; m < r1; m += LANES) {
      for (int j = 0; j < CW; ++j) {
        const int c = c0 + j * TC + tc;
        if (c >= a.cols) break;
        const float h = a.act != nullptr ? a.act[m * a.act_ld + c] : 1.0f;
        float v;
        if (a.src != nullptr) {
          v = a.src[m * a.src_ld + c];
        } else {
          v = 0.0f;
          for (int n = 0; n < a.n_small; ++n) v += a.dy_small[m * a.dy_ld + n] * a.w_small[n * a.w_ld + c];
        }
        const float dz = (a.act != nullptr && !(h > 0.0f)) ? 0.0f : v;
        if (a.dz != nullptr) a.dz[m * a.dz_ld + c] = dz;
        if (values == 0) continue;
        float* slot = acc + j * values * team_size + rank;
        if (db_slot) slot[0] += dz;
        if (a.dw_small != nullptr)
          for (int n = 0; n < a.n_small; ++n) slot[(db_slot + n) * team_size] += a.dy_small[m * a.dy_ld + n] * h;
      }
    }
    if (values == 0) return;  // the same in every thread: no barrier is skipped by some only
    team.team_barrier();
    // Lane 0 of each column adds the lanes' sums (fixed order).
    if (lane == 0) {
      for (int e = 0; e < CW * values; ++e) {
        float s = 0.0f;
        for (int l = 0; l < LANES; ++l) s += acc[e * team_size + l * TC + tc];
        acc[e * team_size + tc] = s;
      }
    }
    if (row_chunks == 1) {
      if (lane == 0) store(c0, tc, [&](int e, int) { return acc[e * team_size + tc]; });
      return;
    }
    if (lane == 0) {
      for (int j = 0; j < CW; ++j) {
        const int c = c0 + j * TC + tc;
        if (c >= a.cols) break;
        for (int r = 0; r < values; ++r)
          partials[(std::size_t(chunk) * values + r) * a.cols + c] = acc[(j * values + r) * team_size + tc];
      }
    }
    if (!arrive_last(team, tickets + tile, static_cast<unsigned>(row_chunks))) return;
    if (lane == 0)
      store(c0, tc, [&](int, int idx) {
        return sum_partials(partials, row_chunks, std::size_t(values) * std::size_t(a.cols), std::size_t(idx));
      });
  }

  /// Writes the reduced values of this thread's columns; value(e, idx) gives
  /// value e = j * values + r, idx = r * cols + c its place in a chunk's partials.
  template <class Value>
  KOKKOS_INLINE_FUNCTION void store(int c0, int tc, const Value& value) const {
    const int db_slot = a.db != nullptr ? 1 : 0;
    for (int j = 0; j < CW; ++j) {
      const int c = c0 + j * TC + tc;
      if (c >= a.cols) break;
      for (int r = 0; r < values; ++r) {
        const float s = value(j * values + r, r * a.cols + c);
        if (r < db_slot) a.db[c] = s;
        else a.dw_small[(r - db_slot) * a.dw_ld + c] = s;
      }
    }
  }
};

/// Floats and tickets of ReduceScratch that relu_backward needs to split
/// `rows` into chunks for `cols` columns and `values` sums per column.
template <class ExecSpace>
ScratchNeed relu_backward_scratch(int rows, int cols, int values) {
  using F = ReluBackwardFunctor<ExecSpace>;
  const int chunks = (rows + F::tiling::chunk_rows - 1) / F::tiling::chunk_rows;
  const int tiles = (cols + F::tile_cols - 1) / F::tile_cols;
  return {std::size_t(chunks) * std::size_t(values) * std::size_t(cols), std::size_t(tiles)};
}

/// Launches relu_backward on `space`. With sums to form (db or dw_small)
/// the rows are split into chunks only when `scratch` holds
/// relu_backward_scratch(...); otherwise one team per column tile walks all
/// rows (correct, less parallel).
template <class ExecSpace>
void relu_backward(const ExecSpace& space, const ReluBackwardArgs& args,
                   const ReduceScratch<typename ExecSpace::memory_space>& scratch) {
  using F = ReluBackwardFunctor<ExecSpace>;
  if (args.rows <= 0 || args.cols <= 0) return;
  if ((args.src == nullptr) == (args.dy_small == nullptr && args.w_small == nullptr) ||
      (args.dw_small != nullptr && (args.act == nullptr || args.dy_small == nullptr)))
    throw Error("foxrl::kernels::relu_backward: give either src or (dy_small, w_small); dw_small needs act and dy_small");
  F f;
  f.a = args;
  f.values = (args.db != nullptr ? 1 : 0) + (args.dw_small != nullptr ? args.n_small : 0);
  f.col_tiles = (args.cols + F::tile_cols - 1) / F::tile_cols;
  const int chunks = (args.rows + F::tiling::chunk_rows - 1) / F::tiling::chunk_rows;
  const auto need = relu_backward_scratch<ExecSpace>(args.rows, args.cols, f.values);
  if (f.values == 0 || chunks == 1 || !scratch.holds(need)) {
    f.row_chunks = f.values == 0 ? chunks : 1;
  } else {
    f.row_chunks = chunks;
    f.partials = scratch.partials.data();
    f.tickets = scratch.tickets.data();
  }
  f.chunk_rows = f.row_chunks == 1 ? args.rows : F::tiling::chunk_rows;
  typename F::policy_type policy(space, f.col_tiles * f.row_chunks, F::team_size);
  Kokkos::parallel_for("foxrl::kernels::relu_backward",
                       policy.set_scratch_size(0, Kokkos::PerTeam(sizeof(float) * F::scratch_floats(f.values))), f);
}

namespace detail {
/// Per-lane partial dot products of N outputs: the value type of the head
/// kernel's vector reduction, so that one pass over a row of X feeds every
/// output (X is read once, not once per output). N is a compile-time
/// constant so the sums live in registers.
template <int N>
struct SmallDot {
  float v[N];
  KOKKOS_INLINE_FUNCTION SmallDot() {
    for (int i = 0; i < N; ++i) v[i] = 0.0f;
  }
  KOKKOS_INLINE_FUNCTION SmallDot& operator+=(const SmallDot& o) {
    for (int i = 0; i < N; ++i) v[i] += o.v[i];
    return *this;
  }
};
/// Most outputs one pass of the head kernel forms.
inline constexpr int small_dense_max_outputs = 8;
}  // namespace detail
}  // namespace kernels
}  // namespace foxrl

namespace Kokkos {
template <int N>
struct reduction_identity<foxrl::kernels::detail::SmallDot<N>> {
  KOKKOS_FORCEINLINE_FUNCTION static foxrl::kernels::detail::SmallDot<N> sum() {
    return foxrl::kernels::detail::SmallDot<N>();
  }
};
}  // namespace Kokkos

namespace foxrl {
namespace kernels {

/// Operands of the head kernel (row-major, leading dimensions in floats).
struct SmallDenseArgs {
  int rows = 0;   ///< M
  int cols = 0;   ///< K
  int outputs = 0;  ///< N
  const float* x = nullptr;  ///< [M, K]
  std::ptrdiff_t x_ld = 0;
  /// Optional input epilogue: X holds a hidden layer's pre-activation Z and
  /// the kernel uses H = max(Z + hidden_bias, 0) (NaN -> 0, as
  /// bias_activation), storing H back into X's rows when `x_out` is set.
  const float* hidden_bias = nullptr;
  float* x_out = nullptr;
  const float* w = nullptr;  ///< [N, K]
  std::ptrdiff_t w_ld = 0;
  const float* b = nullptr;  ///< [N]
  float* y = nullptr;        ///< [M, N]
  std::ptrdiff_t y_ld = 0;
  /// Optional: the dueling greedy action of each row of Y ([V, A...],
  /// kernels/nn/dueling.hpp), formed from the values just stored. Needs
  /// 2 <= N <= 8 (one pass).
  std::int32_t* greedy = nullptr;
};

namespace detail {
/// A row of head outputs held in registers, readable as head(0, j) by the
/// dueling helpers.
struct RegisterRow {
  const float* v;
  KOKKOS_INLINE_FUNCTION float operator()(int, int j) const { return v[j]; }
};
}  // namespace detail

/// Rows of Y = X W^T + b for outputs [n0, n0 + NOUT): one row per thread
/// (a vector of `vector` lanes on GPUs, each lane striding through the row
/// UNROLL loads at a time so that the loads of a lane are independent: one
/// memory latency per UNROLL * vector columns, not one per column).
template <class ExecSpace, int NOUT>
struct SmallDenseRows {
  static constexpr int unroll = 4;
  using policy_type = Kokkos::TeamPolicy<ExecSpace>;
  using member_type = typename policy_type::member_type;
  SmallDenseArgs a;
  int n0 = 0;
  int vector = 1;
  bool epilogue = false;  ///< apply hidden_bias + ReLU to X (first pass only)

  KOKKOS_INLINE_FUNCTION void operator()(const member_type& team) const {
    const int m = team.league_rank() * team.team_size() + team.team_rank();
    if (m >= a.rows) return;
    const float* xr = a.x + m * a.x_ld;
    float* xo = epilogue && a.x_out != nullptr ? a.x_out + m * a.x_ld : nullptr;
    const float* wr = a.w + n0 * a.w_ld;
    const int K = a.cols;
    const int V = vector;
    detail::SmallDot<NOUT> dot;
    Kokkos::parallel_reduce(
        Kokkos::ThreadVectorRange(team, V),
        [&](int lane, detail::SmallDot<NOUT>& acc) {
          for (int k0 = lane; k0 < K; k0 += unroll * V) {
            float xv[unroll];
            for (int u = 0; u < unroll; ++u) {
              const int k = k0 + u * V;
              xv[u] = k < K ? xr[k] : 0.0f;
            }
            if (epilogue) {
              for (int u = 0; u < unroll; ++u) {
                const int k = k0 + u * V;
                if (k >= K) break;
                const float v = xv[u] + a.hidden_bias[k];
                xv[u] = v > 0.0f ? v : 0.0f;
                if (xo != nullptr) xo[k] = xv[u];
              }
            }
            for (int u = 0; u < unroll; ++u) {
              const int k = k0 + u * V;
              if (k >= K) break;
              for (int j = 0; j < NOUT; ++j) acc.v[j] += xv[u] * wr[j * a.w_ld + k];
            }
          }
        },
        dot);
    Kokkos::single(Kokkos::PerThread(team), [&]() {
      float out[NOUT];
      for (int j = 0; j < NOUT; ++j) {
        out[j] = dot.v[j] + a.b[n0 + j];
        a.y[m * a.y_ld + n0 + j] = out[j];
      }
      if (NOUT >= 2 && a.greedy != nullptr) {
        const detail::RegisterRow row{out};
        a.greedy[m] = greedy_action(row, 0, NOUT - 1, advantage_mean(row, 0, NOUT - 1));
      }
    });
  }
};

namespace detail {
template <class ExecSpace, int NOUT>
void launch_small_dense_rows(const ExecSpace& space, const SmallDenseArgs& a, int n0, bool epilogue) {
  constexpr bool host = Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename ExecSpace::memory_space>::accessible;
  // GPUs: 8 rows (warps) per team of 256 threads; host backends: one row
  // per single-thread team.
  const int rows_per_team = host ? 1 : 8;
  using F = SmallDenseRows<ExecSpace, NOUT>;
  F f;
  f.a = a;
  f.n0 = n0;
  f.vector = host ? 1 : 32;
  f.epilogue = epilogue;
  typename F::policy_type policy(space, (a.rows + rows_per_team - 1) / rows_per_team, rows_per_team, f.vector);
  Kokkos::parallel_for("foxrl::kernels::small_dense_forward", compat::light(policy), f);
}

template <class ExecSpace, int NOUT = 1>
void dispatch_small_dense_rows(const ExecSpace& space, const SmallDenseArgs& a, int n0, int outputs, bool epilogue) {
  if constexpr (NOUT < small_dense_max_outputs) {
    if (outputs != NOUT) {
      dispatch_small_dense_rows<ExecSpace, NOUT + 1>(space, a, n0, outputs, epilogue);
      return;
    }
  }
  launch_small_dense_rows<ExecSpace, NOUT>(space, a, n0, epilogue);
}
}  // namespace detail

/// Runs the head kernel (SmallDenseArgs): one launch per 8 outputs; with an
/// input epilogue, the first launch applies it (and stores H when x_out is
/// set) and later ones read the stored H.
template <class ExecSpace>
void small_dense(const ExecSpace& space, const SmallDenseArgs& args) {
  if (args.rows <= 0 || args.outputs <= 0) return;
  if (args.hidden_bias != nullptr && args.outputs > detail::small_dense_max_outputs &&
      args.x_out != args.x)
    throw Error("foxrl::kernels::small_dense: more than 8 outputs with a hidden epilogue need x_out == x");
  if (args.greedy != nullptr && (args.outputs < 2 || args.outputs > detail::small_dense_max_outputs))
    throw Error("foxrl::kernels::small_dense: a fused greedy action needs 2 to 8 head outputs, got " +
                std::to_string(args.outputs));
  for (int n0 = 0; n0 < args.outputs; n0 += detail::small_dense_max_outputs) {
    const int n = std::min(args.outputs - n0, detail::small_dense_max_outputs);
    const bool epilogue = args.hidden_bias != nullptr && n0 == 0;
    detail::dispatch_small_dense_rows(space, args, n0, n, epilogue);
  }
}

namespace detail {
/// SmallDenseArgs of Y = X W^T + b after a shape check.
template <class XView, class MemorySpace>
SmallDenseArgs small_dense_args(const char* what, const XView& x, const ConstMatrix<MemorySpace>& w,
                                const ConstVector<MemorySpace>& bias, const MutableMatrix<MemorySpace>& y) {
  const int M = static_cast<int>(x.extent(0));
  const int N = static_cast<int>(w.extent(0));
  const int K = static_cast<int>(w.extent(1));
  check_shapes(x.extent(1) == std::size_t(K) && y.extent(0) == std::size_t(M) && y.extent(1) == std::size_t(N) &&
                   bias.extent(0) == std::size_t(N),
               what,
               "X " + dims(x.extent(0), x.extent(1)) + ", W " + dims(N, K) + ", Y " + dims(y.extent(0), y.extent(1)));
  SmallDenseArgs a;
  a.rows = M;
  a.cols = K;
  a.outputs = N;
  a.x = x.data();
  a.x_ld = static_cast<std::ptrdiff_t>(x.stride(0));
  a.w = w.data();
  a.w_ld = static_cast<std::ptrdiff_t>(w.stride(0));
  a.b = bias.data();
  a.y = y.data();
  a.y_ld = static_cast<std::ptrdiff_t>(y.stride(0));
  return a;
}
}  // namespace detail

/// Y[M, N] = X[M, K] W[N, K]^T + b for a layer with few outputs (the dueling
/// head): see SmallDenseRows. Replaces a split-K gemm plus its reduction and
/// an epilogue launch.
template <class ExecSpace, class MemorySpace>
void small_dense_forward(const ExecSpace& space, const ConstMatrix<MemorySpace>& x, const ConstMatrix<MemorySpace>& w,
                         const ConstVector<MemorySpace>& bias, const MutableMatrix<MemorySpace>& y) {
  small_dense(space, detail::small_dense_args("small_dense_forward", x, w, bias, y));
}

/// The last hidden layer's epilogue fused with the head:
/// H = max(Z + hidden_bias, 0) stored in place of Z, Y = H W^T + b, and
/// (when `greedy` is given) each row's dueling greedy action. One pass over
/// Z instead of bias_activation, small_dense_forward and dueling_q_values.
template <class ExecSpace, class MemorySpace>
void bias_relu_small_dense_forward(const ExecSpace& space, const MutableMatrix<MemorySpace>& z,
                                   const ConstVector<MemorySpace>& hidden_bias, const ConstMatrix<MemorySpace>& w,
                                   const ConstVector<MemorySpace>& bias, const MutableMatrix<MemorySpace>& y,
                                   std::int32_t* greedy = nullptr) {
  SmallDenseArgs a = detail::small_dense_args("bias_relu_small_dense_forward", z, w, bias, y);
  if (hidden_bias.extent(0) != z.extent(1))
    throw Error("foxrl::kernels::bias_relu_small_dense_forward: hidden bias has " +
                std::to_string(hidden_bias.extent(0)) + " entries for " + std::to_string(z.extent(1)) + " columns");
  a.hidden_bias = hidden_bias.data();
  a.x_out = z.data();
  a.greedy = greedy;
  small_dense(space, a);
}

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
  bias_activation(space, y, bias, relu);
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
  ReluBackwardArgs ra;
  ra.rows = M;
  ra.cols = K;
  ra.src = dx.data();
  ra.src_ld = static_cast<std::ptrdiff_t>(dx.stride(0));
  ra.act = mask.data();
  ra.act_ld = static_cast<std::ptrdiff_t>(mask.stride(0));
  ra.dz = dx.data();
  ra.dz_ld = ra.src_ld;
  relu_backward(space, ra, ReduceScratch<typename ExecSpace::memory_space>());
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
  ReluBackwardArgs ra;
  ra.rows = M;
  ra.cols = N;
  ra.src = dy.data();
  ra.src_ld = static_cast<std::ptrdiff_t>(dy.stride(0));
  ra.db = db.data();
  relu_backward(space, ra, ReduceScratch<typename ExecSpace::memory_space>());
}

}  // namespace kernels
}  // namespace foxrl
