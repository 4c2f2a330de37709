// The narrow-input forward (kernels/nn/narrow_dense.hpp) against float64
// host products, and through DenseOps against its twin, the blas backend's
// library product, on ragged shapes: both row blocks, 1 to 8 inputs; and
// the narrow input's weight gradient in relu_backward's mask pass.
#include "core/execution_context.hpp"
#include "kernels/core/reduce_scratch.hpp"
#include "kernels/nn/narrow_dense.hpp"
#include "kernels/nn/relu_backward.hpp"
#include "nn/dense_ops.hpp"
#include "support/device_copy.hpp"
#include "support/random_values.hpp"
#include "support/test_spaces.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace {

using foxrl::test::random_values;

// Each output is a float32 sum of at most 8 products and the bias; against
// float64 the rounding is at most (K + 1) units of 2^-24 of the sum of
// magnitudes (inputs in [-1, 1): at most K + 1).
double bound(int K) { return 2.0 * (K + 1) * (K + 1) * std::ldexp(1.0, -24); }

}  // namespace

TEMPLATE_TEST_CASE("narrow_dense_forward matches float64 over two row blocks", "[dense][narrow]", FOXRL_TEST_SPACES) {
  using Exec = TestType;
  using Mem = typename Exec::memory_space;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  const int M1 = 1000, M2 = 37, N = 120;
  const int M = M1 + M2;
  for (const int K : {1, 4, 5, 8}) {
    for (const bool relu : {true, false}) {
      DYNAMIC_SECTION("inputs " << K << (relu ? ", ReLU" : ", no activation")) {
        auto x1 = random_values(std::size_t(M1) * K, 21);
        const auto x2 = random_values(std::size_t(M2) * K, 22);
        const auto w = random_values(std::size_t(N) * K, 23);
        const auto b = random_values(N, 24);
        // A NaN input: its row is NaN before the activation, 0 after a ReLU.
        x1[std::size_t(7) * K] = std::numeric_limits<float>::quiet_NaN();
        const auto X1 = foxrl::test::to_device(space, x1, M1, K);
        const auto X2 = foxrl::test::to_device(space, x2, M2, K);
        const auto W = foxrl::test::to_device(space, w, N, K);
        const auto B = foxrl::test::to_device(space, b);
        // Y with padded rows: the kernel must honour its row stride.
        Kokkos::View<float**, Kokkos::LayoutRight, Mem> Ypad("foxrl::test::Y", M, N + 3);
        Kokkos::deep_copy(space, Ypad, -7.0f);
        foxrl::kernels::NarrowDenseArgs a;
        a.rows = M;
        a.inputs = K;
        a.outputs = N;
        a.x1 = X1.data();
        a.x2 = X2.data();
        a.split = M1;
        a.x_ld = K;
        a.w = W.data();
        a.w_ld = K;
        a.b = B.data();
        a.y = Ypad.data();
        a.y_ld = N + 3;
        a.relu = relu;
        foxrl::kernels::narrow_dense_forward(space, a);
        const auto y = foxrl::test::to_host(space, Ypad);
        double worst = 0.0;
        int nan_rows_ok = 0, padding_kept = 0;
        for (int m = 0; m < M; ++m) {
          const float* x = m < M1 ? &x1[std::size_t(m) * K] : &x2[std::size_t(m - M1) * K];
          for (int n = 0; n < N; ++n) {
            double ref = b[n];
            for (int k = 0; k < K; ++k) ref += double(x[k]) * w[std::size_t(n) * K + k];
            if (m == 7) {
              nan_rows_ok += relu ? (y(m, n) == 0.0f ? 1 : 0) : (std::isnan(y(m, n)) ? 1 : 0);
              continue;
            }
            if (relu) ref = std::max(ref, 0.0);
            worst = std::max(worst, std::abs(ref - double(y(m, n))));
          }
          for (int n = N; n < N + 3; ++n) padding_kept += y(m, n) == -7.0f ? 1 : 0;
        }
        CHECK(worst <= bound(K));
        CHECK(nan_rows_ok == N);
        CHECK(padding_kept == 3 * M);
      }
    }
  }
  CHECK_THROWS_AS(foxrl::kernels::narrow_dense_forward(space, foxrl::kernels::NarrowDenseArgs{1, 9, 1}),
                  foxrl::LogicError);
}

TEMPLATE_TEST_CASE("DenseOps takes a narrow layer's forward by the narrow kernel only where asked", "[dense][narrow]",
                   FOXRL_TEST_SPACES) {
  using Exec = TestType;
  using Mem = typename Exec::memory_space;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  // The collector's and the update's first layer of a CartPole network:
  // s and s' rows of one allocation, 4 observations.
  const int M1 = 300, M = 600, K = 4, N = 84;
  const auto x = random_values(std::size_t(M) * K, 31);
  const auto w = random_values(std::size_t(N) * K, 32);
  const auto b = random_values(N, 33);
  const auto X = foxrl::test::to_device(space, x, M, K);
  const auto W = foxrl::test::to_device(space, w, N, K);
  const auto B = foxrl::test::to_device(space, b);
  const foxrl::ConstMatrix<Mem> s(Kokkos::subview(X, std::make_pair(0, M1), Kokkos::ALL));
  const foxrl::ConstMatrix<Mem> s_next(Kokkos::subview(X, std::make_pair(M1, M), Kokkos::ALL));
  foxrl::DenseOps<Exec> library(space, foxrl::DenseBackend::blas);
  library.set_narrow_forward(false);
  foxrl::DenseOps<Exec> narrow(space, foxrl::DenseBackend::blas);
  narrow.set_narrow_forward(true);
  // The defaults: the narrow weight gradient on GPUs only (host backends
  // keep their BLAS's bits), the narrow forward only where asked.
  foxrl::DenseOps<Exec> by_default(space, foxrl::DenseBackend::blas);
  CHECK(by_default.narrow_inputs() == !Kokkos::SpaceAccessibility<Kokkos::HostSpace, Mem>::accessible);
  CHECK_FALSE(by_default.narrow_forward());

  Kokkos::View<float**, Kokkos::LayoutRight, Mem> Ylib("foxrl::test::Ylib", M, N), Ynar("foxrl::test::Ynar", M, N);
  library.forward(space, s, s_next, foxrl::ConstMatrix<Mem>(W), foxrl::ConstVector<Mem>(B), true,
                  foxrl::MutableMatrix<Mem>(Ylib));
  narrow.forward(space, s, s_next, foxrl::ConstMatrix<Mem>(W), foxrl::ConstVector<Mem>(B), true,
                 foxrl::MutableMatrix<Mem>(Ynar));
  CHECK(library.narrow_products() == 0);
  CHECK(narrow.narrow_products() == 1);
  CHECK(narrow.forward_products() == 1);
  const auto ylib = foxrl::test::to_host(space, Ylib);
  const auto ynar = foxrl::test::to_host(space, Ynar);
  double worst = 0.0;
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) worst = std::max(worst, double(std::abs(ylib(m, n) - ynar(m, n))));
  // Both within bound(K) of the exact value.
  CHECK(worst <= 2.0 * bound(K));

  // A wider layer stays with the library.
  const int wide = foxrl::kernels::narrow_dense_max_inputs + 1;
  const auto Xw = foxrl::test::to_device(space, random_values(std::size_t(M) * wide, 34), M, wide);
  const auto Ww = foxrl::test::to_device(space, random_values(std::size_t(N) * wide, 35), N, wide);
  narrow.forward(space, foxrl::ConstMatrix<Mem>(Xw), foxrl::ConstMatrix<Mem>(), foxrl::ConstMatrix<Mem>(Ww),
                 foxrl::ConstVector<Mem>(B), true, foxrl::MutableMatrix<Mem>(Ylib));
  CHECK(narrow.narrow_products() == 1);
  CHECK(narrow.forward_products() == 2);
}

TEMPLATE_TEST_CASE("relu_backward forms a narrow input's weight gradient in its mask pass", "[dense][narrow]",
                   FOXRL_TEST_SPACES) {
  using Exec = TestType;
  using Mem = typename Exec::memory_space;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  // Several row chunks on every backend; columns not a multiple of any tile.
  const int M = 1000, K = 120;
  const auto src = random_values(std::size_t(M) * K, 41);
  const auto act = random_values(std::size_t(M) * K, 42, true);
  const auto SRC = foxrl::test::to_device(space, src, M, K);
  const auto ACT = foxrl::test::to_device(space, act, M, K);
  for (const int NX : {1, 4, 8}) {
    DYNAMIC_SECTION(NX << " narrow inputs") {
      const auto x = random_values(std::size_t(M) * NX, 43);
      const auto X = foxrl::test::to_device(space, x, M, NX);
      Kokkos::View<float**, Kokkos::LayoutRight, Mem> DZ("foxrl::test::DZ", M, K), DWX("foxrl::test::DWX", K, NX);
      Kokkos::View<float*, Mem> DB("foxrl::test::DB", K);
      const auto need = foxrl::kernels::relu_backward_scratch<Exec>(M, K, 1 + NX);
      const foxrl::kernels::ReduceScratch<Mem> scratch(space, "foxrl::test::reduce", need.floats, need.tickets);
      foxrl::kernels::ReluBackwardArgs a;
      a.rows = M;
      a.cols = K;
      a.src = SRC.data();
      a.src_ld = K;
      a.act = ACT.data();
      a.act_ld = K;
      a.dz = DZ.data();
      a.dz_ld = K;
      a.db = DB.data();
      a.x_narrow = X.data();
      a.x_ld = NX;
      a.n_x = NX;
      a.dw_x = DWX.data();
      a.dwx_ld = NX;
      foxrl::kernels::relu_backward(space, a, scratch);
      const auto dz = foxrl::test::to_host(space, DZ);
      const auto db = foxrl::test::to_host(space, DB);
      const auto dwx = foxrl::test::to_host(space, DWX);
      // float64 references and, per sum, the sum of its terms' magnitudes:
      // a float32 sum of M terms is within M units of 2^-24 of it.
      std::vector<double> ref_db(K, 0.0), abs_db(K, 0.0), ref_dw(std::size_t(K) * NX, 0.0),
          abs_dw(std::size_t(K) * NX, 0.0);
      int dz_wrong = 0;
      for (int m = 0; m < M; ++m)
        for (int c = 0; c < K; ++c) {
          const float v = act[std::size_t(m) * K + c] > 0.0f ? src[std::size_t(m) * K + c] : 0.0f;
          dz_wrong += dz(m, c) == v ? 0 : 1;
          ref_db[c] += v;
          abs_db[c] += std::abs(v);
          for (int k = 0; k < NX; ++k) {
            const double t = double(v) * x[std::size_t(m) * NX + k];
            ref_dw[std::size_t(c) * NX + k] += t;
            abs_dw[std::size_t(c) * NX + k] += std::abs(t);
          }
        }
      CHECK(dz_wrong == 0);
      const double u = std::ldexp(1.0, -24);
      int db_off = 0, dw_off = 0;
      for (int c = 0; c < K; ++c) {
        db_off += std::abs(ref_db[c] - db(c)) <= M * u * abs_db[c] ? 0 : 1;
        for (int k = 0; k < NX; ++k)
          dw_off +=
              std::abs(ref_dw[std::size_t(c) * NX + k] - dwx(c, k)) <= (M + 1) * u * abs_dw[std::size_t(c) * NX + k]
                  ? 0
                  : 1;
      }
      CHECK(db_off == 0);
      CHECK(dw_off == 0);
      // A narrow input needs the dX path and at most 8 columns.
      a.n_x = 9;
      CHECK_THROWS_AS(foxrl::kernels::relu_backward(space, a, scratch), foxrl::LogicError);
    }
  }
}
