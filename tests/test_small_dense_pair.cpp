// Both networks' head kernels in one launch (kernels/nn/small_dense_pair.hpp)
// against their twin, bias_relu_small_dense_forward on each head: the same
// outputs and stored activations bit for bit, the target rows' after-row
// work seeing the online rows other threads of its team stored, and the
// values against float64 host loops. Ragged shapes: a batch of 1,000 (no
// multiple of the teams' rows), hidden widths 120 and 84, 65 columns, one
// row, heads of 1 to 8 outputs.
#include "core/execution_context.hpp"
#include "kernels/nn/small_dense.hpp"
#include "kernels/nn/small_dense_pair.hpp"
#include "support/device_copy.hpp"
#include "support/random_values.hpp"
#include "support/test_spaces.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace {

using foxrl::test::random_values;

template <class Mem>
using Matrix = Kokkos::View<float**, Kokkos::LayoutRight, Mem>;

/// After-row work of the target head: copies the online rows i and B + i
/// and the target row i (stored by other threads of the team) and counts
/// the rows; the last team to finish records the count it sees.
template <class Mem>
struct CopyRowsAfter {
  Matrix<Mem> online_y, target_y;
  Matrix<Mem> seen;                  ///< [B, 3 N]: online row i, online row B + i, target row i
  Kokkos::View<int*, Mem> counters;  ///< rows done, teams done, rows the last team saw
  int batch = 0;

  KOKKOS_INLINE_FUNCTION void operator()(int i) const {
    const int n = static_cast<int>(online_y.extent(1));
    for (int j = 0; j < n; ++j) {
      seen(i, j) = online_y(i, j);
      seen(i, n + j) = online_y(batch + i, j);
      seen(i, 2 * n + j) = target_y(i, j);
    }
    Kokkos::atomic_add(&counters(0), 1);
  }

  template <class Member>
  KOKKOS_INLINE_FUNCTION void after_rows(const Member& team) const {
    Kokkos::memory_fence();
    team.team_barrier();
    Kokkos::single(Kokkos::PerTeam(team), [&]() {
      if (Kokkos::atomic_fetch_add(&counters(1), 1) + 1 == team.league_size()) {
        Kokkos::memory_fence();
        counters(2) = Kokkos::atomic_fetch_add(&counters(0), 0);
      }
    });
  }
};

template <class Mem>
struct Head {
  std::vector<float> z, hidden_bias, w, b;
  Matrix<Mem> Z, Y;
  Kokkos::View<float*, Mem> HB, Bias;
  Matrix<Mem> W;
  int store_rows = -1;

  template <class Exec>
  Head(const Exec& space, int rows, int cols, int outputs, std::uint32_t seed, int store)
      : z(random_values(std::size_t(rows) * cols, seed)),
        hidden_bias(random_values(cols, seed + 1)),
        w(random_values(std::size_t(outputs) * cols, seed + 2)),
        b(random_values(outputs, seed + 3)),
        Y("foxrl::test::Y", rows, outputs),
        store_rows(store) {
    Z = foxrl::test::to_device(space, z, rows, cols);
    HB = foxrl::test::to_device(space, hidden_bias);
    W = foxrl::test::to_device(space, w, outputs, cols);
    Bias = foxrl::test::to_device(space, b);
  }

  foxrl::kernels::BiasReluHead<Mem> args() const {
    return {foxrl::MutableMatrix<Mem>(Z),  foxrl::ConstVector<Mem>(HB),  foxrl::ConstMatrix<Mem>(W),
            foxrl::ConstVector<Mem>(Bias), foxrl::MutableMatrix<Mem>(Y), store_rows};
  }

  /// A fresh copy of the inputs (the kernel stores H in place of Z).
  template <class Exec>
  Head copy(const Exec& space) const {
    Head h = *this;
    h.Z = foxrl::test::to_device(space, z, int(Z.extent(0)), int(Z.extent(1)));
    h.Y = Matrix<Mem>("foxrl::test::Y", Y.extent(0), Y.extent(1));
    return h;
  }
};

template <class V>
bool same_bits(const V& a, const V& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEMPLATE_TEST_CASE("both heads in one launch give each head kernel's bits", "[dense][fused]", FOXRL_TEST_SPACES) {
  using Exec = TestType;
  using Mem = typename Exec::memory_space;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  struct Shape {
    int batch, cols, outputs;
  };
  // CartPole's and the market's last hidden widths, an odd input width, a
  // single row; dueling heads of 2 and 3 actions, one output, eight.
  for (const Shape shape : {Shape{1000, 84, 3}, Shape{1000, 120, 4}, Shape{37, 65, 1}, Shape{1, 5, 8}}) {
    const int B = shape.batch, K = shape.cols, N = shape.outputs;
    DYNAMIC_SECTION("batch " << B << ", " << K << " columns, " << N << " outputs") {
      // H kept for a backward in part of the rows (the learner's
      // max_backward_rows), the rest keep Z.
      Head<Mem> online(space, 2 * B, K, N, 11, B + B / 3);
      Head<Mem> target(space, B, K, N, 21, std::max(1, B / 2));
      auto pair_online = online.copy(space), pair_target = target.copy(space);

      CopyRowsAfter<Mem> after;
      after.online_y = pair_online.Y;
      after.target_y = pair_target.Y;
      after.seen = Matrix<Mem>("foxrl::test::seen", B, 3 * N);
      after.counters = Kokkos::View<int*, Mem>("foxrl::test::counters", 3);
      after.batch = B;
      foxrl::kernels::bias_relu_small_dense_pair_forward(space, pair_online.args(), pair_target.args(), after);
      for (auto* h : {&online, &target}) {
        const auto a = h->args();
        foxrl::kernels::bias_relu_small_dense_forward(space, a.z, a.hidden_bias, a.w, a.bias, a.y, nullptr,
                                                      a.store_rows);
      }

      // The twin's bits: outputs and the activations (H where stored, Z past).
      CHECK(same_bits(foxrl::test::to_host(space, pair_online.Y), foxrl::test::to_host(space, online.Y)));
      CHECK(same_bits(foxrl::test::to_host(space, pair_target.Y), foxrl::test::to_host(space, target.Y)));
      CHECK(same_bits(foxrl::test::to_host(space, pair_online.Z), foxrl::test::to_host(space, online.Z)));
      CHECK(same_bits(foxrl::test::to_host(space, pair_target.Z), foxrl::test::to_host(space, target.Z)));

      // The after-row work saw its rows' final outputs, once per row, and
      // the last team saw every row's.
      const auto seen = foxrl::test::to_host(space, after.seen);
      const auto y_online = foxrl::test::to_host(space, pair_online.Y);
      const auto y_target = foxrl::test::to_host(space, pair_target.Y);
      int stale = 0;
      for (int i = 0; i < B; ++i)
        for (int j = 0; j < N; ++j)
          stale += seen(i, j) != y_online(i, j) || seen(i, N + j) != y_online(B + i, j) ||
                           seen(i, 2 * N + j) != y_target(i, j)
                       ? 1
                       : 0;
      CHECK(stale == 0);
      const auto counters = foxrl::test::to_host(space, after.counters);
      CHECK(counters(0) == B);
      CHECK(counters(2) == B);

      // The values against float64: H = max(Z + hb, 0), Y = H W^T + b.
      double worst = 0.0;
      for (const auto* h : {&online, &target}) {
        const auto y = foxrl::test::to_host(space, h == &online ? pair_online.Y : pair_target.Y);
        const int rows = static_cast<int>(h->Z.extent(0));
        for (int m = 0; m < rows; ++m)
          for (int n = 0; n < N; ++n) {
            double ref = h->b[n], scale = std::abs(h->b[n]);
            for (int k = 0; k < K; ++k) {
              const float v = h->z[std::size_t(m) * K + k] + h->hidden_bias[k];
              const double hk = v > 0.0f ? v : 0.0;
              ref += hk * h->w[std::size_t(n) * K + k];
              scale += std::abs(hk * h->w[std::size_t(n) * K + k]);
            }
            worst = std::max(worst, std::abs(ref - y(m, n)) / scale);
          }
      }
      // A float32 sum of K + 1 products: at most about (K + 2) units of
      // rounding (2^-24) of the terms' magnitudes.
      CHECK(worst < (K + 2) * 0x1p-24);
    }
  }
}

TEMPLATE_TEST_CASE("both heads in one launch refuse unlike heads", "[dense][fused]", FOXRL_TEST_SPACES) {
  using Exec = TestType;
  using Mem = typename Exec::memory_space;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  const auto fails = [&](const Head<Mem>& online, const Head<Mem>& target) {
    CHECK_THROWS_WITH(foxrl::kernels::bias_relu_small_dense_pair_forward(space, online.args(), target.args()),
                      Catch::Contains("bias_relu_small_dense_pair_forward"));
  };
  const Head<Mem> target(space, 10, 16, 3, 1, -1);
  fails(Head<Mem>(space, 19, 16, 3, 2, -1), target);  // not twice the target's rows
  fails(Head<Mem>(space, 20, 17, 3, 2, -1), target);  // other widths
  fails(Head<Mem>(space, 20, 16, 4, 2, -1), target);  // other outputs
  // More outputs than one pass of the head kernel.
  fails(Head<Mem>(space, 20, 16, 9, 2, -1), Head<Mem>(space, 10, 16, 9, 1, -1));
  CHECK_FALSE(foxrl::kernels::small_dense_pair_fits(9));
  CHECK(foxrl::kernels::small_dense_pair_fits(8));
}
