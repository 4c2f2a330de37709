#pragma once
// The head kernel: Y = X W^T + b for a layer with few outputs (a dueling or
// value head), one row per thread (a warp per row on GPUs), optionally with
// the previous hidden layer's bias + ReLU fused on the input and the
// dueling greedy action fused on the output. Replaces a split-K gemm, its
// reduction and an epilogue launch.

#include "core/compat.hpp"
#include "core/error.hpp"
#include "kernels/nn/dueling.hpp"
#include "views/nn/matrix.hpp"

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

namespace foxrl {
namespace kernels {

/// Most outputs one pass of the head kernel forms (more take several
/// launches); also the widest head whose greedy action can be fused.
inline constexpr int small_dense_max_outputs = 8;

/// Nothing after a row (the head kernel's default).
struct NothingAfterRow {
  KOKKOS_INLINE_FUNCTION void operator()(int) const {}
};

/// Whether an after-row functor (SmallDenseRows) also has work for its
/// whole team once the team's rows are done: `after_rows(team)`, called by
/// every thread of every team (e.g. a reduction over the rows' results
/// whose last team finishes it).
template <class F, class Member, class = void>
struct has_after_rows : std::false_type {};
template <class F, class Member>
struct has_after_rows<F, Member,
                      std::void_t<decltype(std::declval<const F&>().after_rows(std::declval<const Member&>()))>>
    : std::true_type {};

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
  int rows = 0;              ///< M
  int cols = 0;              ///< K
  int outputs = 0;           ///< N
  const float* x = nullptr;  ///< [M, K]
  std::ptrdiff_t x_ld = 0;
  /// Optional input epilogue: X holds a hidden layer's pre-activation Z and
  /// the kernel uses H = max(Z + hidden_bias, 0) (NaN -> 0, as
  /// bias_activation), storing H back into the first `x_out_rows` rows of
  /// `x_out` when it is set (the rows a backward will read; the others
  /// keep Z, which saves their write).
  const float* hidden_bias = nullptr;
  float* x_out = nullptr;
  int x_out_rows = 0;
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
/// (a vector of `vector` lanes on GPUs). Each lane holds `chunk` of its
/// columns in registers at a time and issues every load of the chunk (X,
/// the hidden bias) before its first store, so every chunk * vector
/// columns (256 on GPUs) of a row cost one memory latency for X and one
/// for W: the stores of H may alias X (in place), so a load placed after a
/// store cannot move above it, and with 4 columns per step a 512-wide row
/// waited for 4 such round trips. Each lane adds its columns in increasing
/// order, whatever the chunk.
/// `after_row(m)` then runs on the thread that stored row m's outputs (and
/// its greedy action, when asked), which it may read back: e.g. the
/// collector's env step, which reads the action, or the DQN loss of the
/// row (kernels/agents/dqn/loss_in_head.hpp): one launch fewer on the
/// iteration's chain than a launch of its own. An after-row functor with
/// `after_rows(team)` (has_after_rows) has it called by every thread of
/// every team after the team's rows.
template <class ExecSpace, int NOUT, class AfterRow = NothingAfterRow>
struct SmallDenseRows {
  static constexpr int chunk = 8;
  /// GPUs: teams of 8 rows x 32 lanes, at most 64 registers a thread, so 4
  /// teams share an SM and 4,096 rows (the collector's forward) run in one
  /// wave on 132 SMs. Left alone the compiler hoists the chunk's W loads
  /// and takes 66-88 registers (3 teams per SM, two waves); with 16
  /// columns per chunk, ~150 (four waves).
  using policy_type = Kokkos::TeamPolicy<ExecSpace, Kokkos::LaunchBounds<256, 4>>;
  using member_type = typename policy_type::member_type;
  SmallDenseArgs a;
  int n0 = 0;
  int vector = 1;
  bool epilogue = false;  ///< apply hidden_bias + ReLU to X (first pass only)
  AfterRow after_row = {};

  KOKKOS_INLINE_FUNCTION void operator()(const member_type& team) const {
    const int m = team.league_rank() * team.team_size() + team.team_rank();
    if (m < a.rows) row(team, m);
    if constexpr (has_after_rows<AfterRow, member_type>::value) after_row.after_rows(team);
  }

  /// Row m of Y (and its greedy action), then after_row(m).
  KOKKOS_INLINE_FUNCTION void row(const member_type& team, int m) const {
    const float* xr = a.x + m * a.x_ld;
    float* xo = epilogue && a.x_out != nullptr && m < a.x_out_rows ? a.x_out + m * a.x_ld : nullptr;
    const float* wr = a.w + n0 * a.w_ld;
    const int K = a.cols;
    const int V = vector;
    detail::SmallDot<NOUT> dot;
    Kokkos::parallel_reduce(
        Kokkos::ThreadVectorRange(team, V),
        [&](int lane, detail::SmallDot<NOUT>& acc) {
          for (int k0 = lane; k0 < K; k0 += chunk * V) {
            float xv[chunk];
            for (int u = 0; u < chunk; ++u) {
              const int k = k0 + u * V;
              xv[u] = k < K ? xr[k] : 0.0f;
            }
            if (epilogue) {
              float hb[chunk];
              for (int u = 0; u < chunk; ++u) {
                const int k = k0 + u * V;
                hb[u] = k < K ? a.hidden_bias[k] : 0.0f;
              }
              for (int u = 0; u < chunk; ++u) {
                const float v = xv[u] + hb[u];
                xv[u] = v > 0.0f ? v : 0.0f;
              }
              if (xo != nullptr)
                for (int u = 0; u < chunk; ++u) {
                  const int k = k0 + u * V;
                  if (k < K) xo[k] = xv[u];
                }
            }
            // Past K both factors are 0: acc + 0 * 0 leaves every sum as it is.
            for (int j = 0; j < NOUT; ++j) {
              float wv[chunk];
              for (int u = 0; u < chunk; ++u) {
                const int k = k0 + u * V;
                wv[u] = k < K ? wr[j * a.w_ld + k] : 0.0f;
              }
              for (int u = 0; u < chunk; ++u) acc.v[j] += xv[u] * wv[u];
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
        const detail::RegisterRow values{out};
        a.greedy[m] = greedy_action(values, 0, NOUT - 1, advantage_mean(values, 0, NOUT - 1));
      }
      after_row(m);
    });
  }
};

namespace detail {
template <class ExecSpace, int NOUT, class AfterRow>
void launch_small_dense_rows(const ExecSpace& space, const SmallDenseArgs& a, int n0, bool epilogue,
                             const AfterRow& after_row) {
  constexpr bool host = Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename ExecSpace::memory_space>::accessible;
  // GPUs: 8 rows (warps) per team of 256 threads; host backends: one row
  // per single-thread team.
  const int rows_per_team = host ? 1 : 8;
  using F = SmallDenseRows<ExecSpace, NOUT, AfterRow>;
  F f;
  f.a = a;
  f.n0 = n0;
  f.vector = host ? 1 : 32;
  f.epilogue = epilogue;
  f.after_row = after_row;
  typename F::policy_type policy(space, (a.rows + rows_per_team - 1) / rows_per_team, rows_per_team, f.vector);
  Kokkos::parallel_for("foxrl::kernels::small_dense_forward", compat::light(policy), f);
}

template <class ExecSpace, int NOUT = 1, class AfterRow = NothingAfterRow>
void dispatch_small_dense_rows(const ExecSpace& space, const SmallDenseArgs& a, int n0, int outputs, bool epilogue,
                               const AfterRow& after_row = AfterRow()) {
  if constexpr (NOUT < small_dense_max_outputs) {
    if (outputs != NOUT) {
      dispatch_small_dense_rows<ExecSpace, NOUT + 1>(space, a, n0, outputs, epilogue, after_row);
      return;
    }
  }
  launch_small_dense_rows<ExecSpace, NOUT>(space, a, n0, epilogue, after_row);
}
}  // namespace detail

/// Runs the head kernel (SmallDenseArgs): one launch per 8 outputs; with an
/// input epilogue, the first launch applies it (and stores H when x_out is
/// set) and later ones read the stored H. `after_row(m)` runs once per row
/// after its outputs and greedy action (needs one pass: at most 8 outputs;
/// see SmallDenseRows).
template <class ExecSpace, class AfterRow = NothingAfterRow>
void small_dense(const ExecSpace& space, const SmallDenseArgs& args, const AfterRow& after_row = AfterRow()) {
  if (args.rows <= 0 || args.outputs <= 0) return;
  if (args.hidden_bias != nullptr && args.outputs > small_dense_max_outputs &&
      (args.x_out != args.x || args.x_out_rows < args.rows))
    throw LogicError(
        "foxrl::kernels::small_dense: more than 8 outputs with a hidden epilogue need x_out == x over every row");
  if (args.greedy != nullptr && (args.outputs < 2 || args.outputs > small_dense_max_outputs))
    throw LogicError("foxrl::kernels::small_dense: a fused greedy action needs 2 to 8 head outputs, got " +
                     std::to_string(args.outputs));
  if (!std::is_same_v<AfterRow, NothingAfterRow> && args.outputs > small_dense_max_outputs)
    throw LogicError("foxrl::kernels::small_dense: work after each row needs at most " +
                     std::to_string(small_dense_max_outputs) + " outputs (one pass), got " +
                     std::to_string(args.outputs));
  for (int n0 = 0; n0 < args.outputs; n0 += small_dense_max_outputs) {
    const int n = std::min(args.outputs - n0, small_dense_max_outputs);
    const bool epilogue = args.hidden_bias != nullptr && n0 == 0;
    detail::dispatch_small_dense_rows(space, args, n0, n, epilogue, after_row);
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
  foxrl::detail::check_shapes(x.extent(1) == std::size_t(K) && y.extent(0) == std::size_t(M) &&
                                  y.extent(1) == std::size_t(N) && bias.extent(0) == std::size_t(N),
                              std::string("foxrl::kernels::") + what,
                              "X " + foxrl::detail::dims(x.extent(0), x.extent(1)) + ", W " +
                                  foxrl::detail::dims(N, K) + ", Y " + foxrl::detail::dims(y.extent(0), y.extent(1)));
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

/// SmallDenseArgs of H = max(Z + hidden_bias, 0), Y = H W^T + b with H
/// stored in place of Z in the first `store_rows` rows (negative: all; a
/// head of more than 8 outputs stores all, its later passes read H).
template <class MemorySpace>
SmallDenseArgs bias_relu_small_dense_args(const char* what, const MutableMatrix<MemorySpace>& z,
                                          const ConstVector<MemorySpace>& hidden_bias,
                                          const ConstMatrix<MemorySpace>& w, const ConstVector<MemorySpace>& bias,
                                          const MutableMatrix<MemorySpace>& y, int store_rows) {
  SmallDenseArgs a = small_dense_args(what, z, w, bias, y);
  if (hidden_bias.extent(0) != z.extent(1))
    throw LogicError(std::string("foxrl::kernels::") + what + ": hidden bias has " +
                     std::to_string(hidden_bias.extent(0)) + " entries for " + std::to_string(z.extent(1)) +
                     " columns");
  a.hidden_bias = hidden_bias.data();
  a.x_out = z.data();
  a.x_out_rows = store_rows < 0 || a.outputs > small_dense_max_outputs ? a.rows : std::min(store_rows, a.rows);
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
/// H = max(Z + hidden_bias, 0), Y = H W^T + b, and (when `greedy` is given)
/// each row's dueling greedy action. One pass over Z instead of
/// bias_activation, small_dense_forward and dueling_q_values. H is stored
/// in place of Z in the first `store_rows` rows (negative: all; a head of
/// more than 8 outputs stores all, its later passes read H).
/// `after_row(m)`: see small_dense.
template <class ExecSpace, class MemorySpace, class AfterRow = NothingAfterRow>
void bias_relu_small_dense_forward(const ExecSpace& space, const MutableMatrix<MemorySpace>& z,
                                   const ConstVector<MemorySpace>& hidden_bias, const ConstMatrix<MemorySpace>& w,
                                   const ConstVector<MemorySpace>& bias, const MutableMatrix<MemorySpace>& y,
                                   std::int32_t* greedy = nullptr, int store_rows = -1,
                                   const AfterRow& after_row = AfterRow()) {
  SmallDenseArgs a =
      detail::bias_relu_small_dense_args("bias_relu_small_dense_forward", z, hidden_bias, w, bias, y, store_rows);
  a.greedy = greedy;
  small_dense(space, a, after_row);
}

}  // namespace kernels
}  // namespace foxrl
