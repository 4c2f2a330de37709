#pragma once
// relu_backward: the bandwidth-bound pass of a layer's backward between two
// products: ReLU mask of dX, the previous layer's bias gradient (column
// sums) and, for a layer with few outputs (a head), dX and dW formed in the
// same pass instead of two skinny gemms. One launch, deterministic
// single-launch column sums (kernels/core/reduce_scratch.hpp). With a
// narrow input X (at most 8 columns, CartPole's observations) below the
// layer, that layer's weight gradient dZ^T X is formed in the same pass too.

#include "core/error.hpp"
#include "kernels/core/reduce_scratch.hpp"

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <string>

namespace foxrl {
namespace kernels {

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
  const float* w_small = nullptr;  ///< [n_small, K]
  std::ptrdiff_t w_ld = 0;
  int n_small = 0;
  /// The layer input H [M, K] (a ReLU output): dZ = dX * [H > 0]; null: no
  /// mask. Also the X of dw_small.
  const float* act = nullptr;
  std::ptrdiff_t act_ld = 0;
  float* dz = nullptr;  ///< out [M, K] (null: not stored)
  std::ptrdiff_t dz_ld = 0;
  float* db = nullptr;        ///< out [K]: column sums of dZ (the previous layer's bias gradient)
  float* dw_small = nullptr;  ///< out [n_small, K]: dy_small^T H (the small layer's weight gradient)
  std::ptrdiff_t dw_ld = 0;
  /// With src: a narrow input X [M, n_x] (n_x <= 8) of the layer whose
  /// output gradient dZ is, and out its weight gradient dw_x[c, k] =
  /// sum_m dZ[m, c] X[m, k] ([K, n_x] row-major), saving a skinny gemm.
  const float* x_narrow = nullptr;
  std::ptrdiff_t x_ld = 0;
  int n_x = 0;
  float* dw_x = nullptr;
  std::ptrdiff_t dwx_ld = 0;
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
  int values = 0;  ///< reduced values per column: (db ? 1 : 0) + (dw_small ? n_small : 0) + (dw_x ? n_x : 0)
  int col_tiles = 1;
  int row_chunks = 1;
  int chunk_rows = 1;
  /// Whether a team stages its chunk's rows of x_narrow in team scratch
  /// (chunk_rows * n_x floats after the sums' scratch): read by every column,
  /// they then cost one coalesced load each instead of one per column's row.
  bool stage_x = false;
  float* partials = nullptr;  ///< [row_chunks, values, cols] when row_chunks > 1
  unsigned* tickets = nullptr;

  KOKKOS_INLINE_FUNCTION static std::size_t scratch_floats(int values) {
    return std::size_t(team_size) * CW * std::size_t(values);
  }
  /// Floats of the staged x rows (stage_x).
  KOKKOS_INLINE_FUNCTION std::size_t staged_x_floats() const { return std::size_t(chunk_rows) * std::size_t(a.n_x); }
  /// The most floats of x rows a team stages (16 KB).
  static constexpr std::size_t max_staged_x_floats = 4096;

  KOKKOS_INLINE_FUNCTION void operator()(const member_type& team) const {
    const int tile = team.league_rank() % col_tiles;
    const int chunk = team.league_rank() / col_tiles;
    const int rank = team.team_rank();
    const int tc = rank % TC;
    const int lane = rank / TC;
    const int c0 = tile * tile_cols;
    float* acc =
        values > 0 ? static_cast<float*>(team.team_shmem().get_shmem(sizeof(float) * scratch_floats(values))) : nullptr;
    // acc[(j * values + r) * team_size + rank]: value r of column j of this thread.
    for (int e = 0; e < CW * values; ++e) acc[e * team_size + rank] = 0.0f;

    const int r0 = chunk * chunk_rows;
    const int r1 = r0 + chunk_rows < a.rows ? r0 + chunk_rows : a.rows;
    const float* xs = nullptr;  // the chunk's rows of x_narrow, [r1 - r0, n_x]
    if (stage_x) {
      float* staged = static_cast<float*>(team.team_shmem().get_shmem(sizeof(float) * staged_x_floats()));
      for (int e = rank; e < (r1 - r0) * a.n_x; e += team_size)
        staged[e] = a.x_narrow[(r0 + e / a.n_x) * a.x_ld + e % a.n_x];
      team.team_barrier();
      xs = staged;
    }
    if (a.src != nullptr || a.n_small <= max_small)
      walk_rows_in_blocks(r0, r1, c0, tc, lane, rank, acc, xs);
    else
      walk_rows(r0, r1, c0, tc, lane, rank, acc);
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

  /// Head outputs whose dY, W and dW sums a thread holds in registers
  /// (wider heads take walk_rows); also the widest narrow input (dw_x).
  static constexpr int max_small = 8;
  /// Rows a thread reads before it writes any (see walk_rows_in_blocks).
  static constexpr int block_rows = 8;

  /// This thread's rows of [r0, r1) (every LANES-th from r0 + lane), block
  /// by block: all loads of a block's rows first (H, dX or dY and W), the
  /// sums in registers, then the block's dZ stores. A store through dz may
  /// alias the inputs as far as the compiler knows, so loads interleaved
  /// with stores would wait for one memory latency per row; here a block
  /// costs one. Every sum adds its rows in increasing order, as walk_rows
  /// does.
  KOKKOS_INLINE_FUNCTION void walk_rows_in_blocks(int r0, int r1, int c0, int tc, int lane, int rank, float* acc,
                                                  const float* xs) const {
    constexpr int R = block_rows;
    const int db_slot = a.db != nullptr ? 1 : 0;
    const int ns = a.src != nullptr ? 0 : a.n_small;
    const bool dw = a.dw_small != nullptr;
    // The x path (src given) keeps its dZ^T X sums where the head path
    // keeps dY^T H: the two never meet in one launch.
    const int nx = a.src != nullptr && a.dw_x != nullptr ? a.n_x : 0;
    const int sums = dw ? ns : nx;
    float db_sum[CW];
    float dw_sum[CW][max_small];
    for (int j = 0; j < CW; ++j) {
      db_sum[j] = 0.0f;
      for (int n = 0; n < max_small; ++n) dw_sum[j][n] = 0.0f;
    }
    for (int mb = r0 + lane; mb < r1; mb += R * LANES) {
      for (int j = 0; j < CW; ++j) {
        const int c = c0 + j * TC + tc;
        if (c >= a.cols) break;
        float h[R], v[R];
        for (int r = 0; r < R; ++r) {
          const int m = mb + r * LANES;
          h[r] = a.act != nullptr && m < r1 ? a.act[m * a.act_ld + c] : 1.0f;
          v[r] = a.src != nullptr && m < r1 ? a.src[m * a.src_ld + c] : 0.0f;
        }
        if (a.src == nullptr) {
          float w[max_small];
          for (int n = 0; n < max_small; ++n) w[n] = n < ns ? a.w_small[n * a.w_ld + c] : 0.0f;
          for (int r = 0; r < R; ++r) {
            const int m = mb + r * LANES;
            if (m >= r1) break;
            // A fixed trip count with a guard (not a break), so the loop
            // unrolls and dw_sum stays in registers.
            for (int n = 0; n < max_small; ++n) {
              if (n < ns) {
                const float d = a.dy_small[m * a.dy_ld + n];
                v[r] += d * w[n];
                if (dw) dw_sum[j][n] += d * h[r];
              }
            }
          }
        }
        for (int r = 0; r < R; ++r) {
          const int m = mb + r * LANES;
          if (m >= r1) break;
          const float dz = (a.act != nullptr && !(h[r] > 0.0f)) ? 0.0f : v[r];
          v[r] = dz;
          if (db_slot) db_sum[j] += dz;
          // Row m of X is the same for every column: one broadcast load per
          // warp and input.
          for (int k = 0; k < max_small; ++k)
            if (k < nx) dw_sum[j][k] += dz * (xs != nullptr ? xs[(m - r0) * nx + k] : a.x_narrow[m * a.x_ld + k]);
        }
        if (a.dz != nullptr)
          for (int r = 0; r < R; ++r) {
            const int m = mb + r * LANES;
            if (m >= r1) break;
            a.dz[m * a.dz_ld + c] = v[r];
          }
      }
    }
    if (values == 0) return;
    for (int j = 0; j < CW; ++j) {
      float* slot = acc + j * values * team_size + rank;
      if (db_slot) slot[0] = db_sum[j];
      for (int n = 0; n < max_small; ++n)
        if (n < sums) slot[(db_slot + n) * team_size] = dw_sum[j][n];
    }
  }

  /// This thread's rows of [r0, r1) one at a time (heads wider than
  /// max_small outputs).
  KOKKOS_INLINE_FUNCTION void walk_rows(int r0, int r1, int c0, int tc, int lane, int rank, float* acc) const {
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
        if (r < db_slot)
          a.db[c] = s;
        else if (a.dw_small != nullptr)
          a.dw_small[(r - db_slot) * a.dw_ld + c] = s;
        else
          a.dw_x[c * a.dwx_ld + (r - db_slot)] = s;
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
    throw LogicError(
        "foxrl::kernels::relu_backward: give either src or (dy_small, w_small); dw_small needs act and dy_small");
  if (args.dw_x != nullptr &&
      (args.src == nullptr || args.x_narrow == nullptr || args.n_x < 1 || args.n_x > F::max_small))
    throw LogicError("foxrl::kernels::relu_backward: dw_x needs src, x_narrow and 1 to " +
                     std::to_string(F::max_small) + " narrow inputs, got " + std::to_string(args.n_x));
  F f;
  f.a = args;
  f.values = (args.db != nullptr ? 1 : 0) + (args.dw_small != nullptr ? args.n_small : 0) +
             (args.dw_x != nullptr ? args.n_x : 0);
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
  f.stage_x = args.dw_x != nullptr && f.staged_x_floats() <= F::max_staged_x_floats;
  typename F::policy_type policy(space, f.col_tiles * f.row_chunks, F::team_size);
  const std::size_t floats = F::scratch_floats(f.values) + (f.stage_x ? f.staged_x_floats() : 0);
  Kokkos::parallel_for("foxrl::kernels::relu_backward",
                       policy.set_scratch_size(0, Kokkos::PerTeam(sizeof(float) * floats)), f);
}

}  // namespace kernels
}  // namespace foxrl
