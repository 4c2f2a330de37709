// The dense products (both backends) against float64 host loops, on shapes
// that are not multiples of any tile size.
#include "core/execution_context.hpp"
#include "kernels/nn/adam.hpp"
#include "kernels/nn/relu_backward.hpp"
#include "kernels/nn/small_dense.hpp"
#include "nn/dense_ops.hpp"
#include "nn/row_major_gemm.hpp"
#include "support/random_values.hpp"
#include "support/reference_dqn.hpp"
#include "support/test_spaces.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <utility>
#include <vector>

namespace {

using foxrl::test::random_values;

// float32 products of length K against float64: rounding grows ~sqrt(K) eps.
constexpr double tolerance = 2e-5;

}  // namespace

TEMPLATE_TEST_CASE("dense kernels match float64 host products", "[dense]", FOXRL_TEST_SPACES) {
  using Exec = TestType;
  using Mem = typename Exec::memory_space;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  const int M1 = 37, M2 = 29, K = 71, N = 45;
  const int M = M1 + M2;
  const auto x1 = random_values(std::size_t(M1) * K, 1);
  const auto x2 = random_values(std::size_t(M2) * K, 2);
  const auto w = random_values(std::size_t(N) * K, 3);
  const auto b = random_values(N, 4);
  const auto dy = random_values(std::size_t(M) * N, 5);
  const auto mask = random_values(std::size_t(M) * K, 6, true);
  std::vector<float> x(x1);
  x.insert(x.end(), x2.begin(), x2.end());

  auto X1 = foxrl::test::to_device(space, x1, M1, K);
  auto X2 = foxrl::test::to_device(space, x2, M2, K);
  auto X = foxrl::test::to_device(space, x, M, K);
  auto W = foxrl::test::to_device(space, w, N, K);
  auto Bv = foxrl::test::to_device(space, b);
  auto DY = foxrl::test::to_device(space, dy, M, N);
  auto MASK = foxrl::test::to_device(space, mask, M, K);

  for (const auto backend : {foxrl::DenseBackend::portable, foxrl::DenseBackend::blas}) {
    DYNAMIC_SECTION("backend " << foxrl::to_string(backend)) {
      Kokkos::View<float**, Kokkos::LayoutRight, Mem> Y("foxrl::test::Y", M, N), DX("foxrl::test::DX", M, K),
          DW("foxrl::test::DW", N, K);
      Kokkos::View<float*, Mem> DB("foxrl::test::DB", N);
      // The products production runs: the tiled kernel, or RowMajorGemm
      // (cuBLAS on CUDA) + epilogue kernels; the stacked input [X1; X2] on both.
      foxrl::DenseOps<Exec> ops(space, backend);
      for (const bool relu : {false, true}) {
        ops.forward(space, foxrl::ConstMatrix<Mem>(X1), foxrl::ConstMatrix<Mem>(X2), foxrl::ConstMatrix<Mem>(W),
                    foxrl::ConstVector<Mem>(Bv), relu, foxrl::MutableMatrix<Mem>(Y));
        const auto y = foxrl::test::to_host(space, Y);
        double worst = 0.0;
        for (int m = 0; m < M; ++m)
          for (int n = 0; n < N; ++n) {
            double ref = b[n];
            for (int k = 0; k < K; ++k) ref += double(x[std::size_t(m) * K + k]) * w[std::size_t(n) * K + k];
            if (relu) ref = std::max(ref, 0.0);
            worst = std::max(worst, std::abs(ref - y(m, n)));
          }
        INFO("relu " << relu);
        CHECK(worst < tolerance);
      }

      ops.backward_input(space, foxrl::ConstMatrix<Mem>(DY), foxrl::ConstMatrix<Mem>(W), foxrl::ConstMatrix<Mem>(MASK),
                         foxrl::MutableMatrix<Mem>(DX));
      ops.backward_weights(space, foxrl::ConstMatrix<Mem>(DY), foxrl::ConstMatrix<Mem>(X),
                           foxrl::MutableMatrix<Mem>(DW), foxrl::MutableVector<Mem>(DB));
      const auto dx = foxrl::test::to_host(space, DX);
      const auto dw = foxrl::test::to_host(space, DW);
      const auto db = foxrl::test::to_host(space, DB);
      double worst_dx = 0.0, worst_dw = 0.0, worst_db = 0.0;
      for (int m = 0; m < M; ++m)
        for (int k = 0; k < K; ++k) {
          double ref = 0.0;
          for (int n = 0; n < N; ++n) ref += double(dy[std::size_t(m) * N + n]) * w[std::size_t(n) * K + k];
          if (!(mask[std::size_t(m) * K + k] > 0.0f)) ref = 0.0;
          worst_dx = std::max(worst_dx, std::abs(ref - dx(m, k)));
        }
      for (int n = 0; n < N; ++n) {
        double ref_b = 0.0;
        for (int m = 0; m < M; ++m) ref_b += dy[std::size_t(m) * N + n];
        worst_db = std::max(worst_db, std::abs(ref_b - db(n)));
        for (int k = 0; k < K; ++k) {
          double ref = 0.0;
          for (int m = 0; m < M; ++m) ref += double(dy[std::size_t(m) * N + n]) * x[std::size_t(m) * K + k];
          worst_dw = std::max(worst_dw, std::abs(ref - dw(n, k)));
        }
      }
      CHECK(worst_dx < tolerance);
      CHECK(worst_dw < tolerance);
      CHECK(worst_db < tolerance);
    }
  }
}

TEMPLATE_TEST_CASE("RowMajorGemm matches float64 products for every transpose combination", "[dense][gemm]",
                   FOXRL_TEST_SPACES) {
  using Exec = TestType;
  using Mem = typename Exec::memory_space;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  foxrl::RowMajorGemm<Exec> gemm(space);
  const int M = 37, N = 45, K = 71;
  for (const bool ta : {false, true}) {
    for (const bool tb : {false, true}) {
      // A stored [M, K] or (transposed) [K, M]; B stored [K, N] or [N, K].
      const int ar = ta ? K : M, ac = ta ? M : K, br = tb ? N : K, bc = tb ? K : N;
      const auto a = random_values(std::size_t(ar) * ac, 11);
      const auto b = random_values(std::size_t(br) * bc, 12);
      auto A = foxrl::test::to_device(space, a, ar, ac);
      auto B = foxrl::test::to_device(space, b, br, bc);
      Kokkos::View<float**, Kokkos::LayoutRight, Mem> C("foxrl::test::C", M, N);
      gemm(space, ta, tb, foxrl::ConstMatrix<Mem>(A), foxrl::ConstMatrix<Mem>(B), foxrl::MutableMatrix<Mem>(C));
      const auto c = foxrl::test::to_host(space, C);
      double worst = 0.0;
      for (int m = 0; m < M; ++m)
        for (int n = 0; n < N; ++n) {
          double ref = 0.0;
          for (int k = 0; k < K; ++k) {
            const double av = ta ? a[std::size_t(k) * ac + m] : a[std::size_t(m) * ac + k];
            const double bv = tb ? b[std::size_t(n) * bc + k] : b[std::size_t(k) * bc + n];
            ref += av * bv;
          }
          worst = std::max(worst, std::abs(ref - c(m, n)));
        }
      INFO("op(A) " << (ta ? "T" : "N") << ", op(B) " << (tb ? "T" : "N"));
      CHECK(worst < tolerance);
    }
  }
  Kokkos::View<float**, Kokkos::LayoutRight, Mem> A("foxrl::test::A", 3, 4), B("foxrl::test::B", 5, 6),
      C("foxrl::test::C", 3, 6);
  CHECK_THROWS_AS(
      gemm(space, false, false, foxrl::ConstMatrix<Mem>(A), foxrl::ConstMatrix<Mem>(B), foxrl::MutableMatrix<Mem>(C)),
      foxrl::Error);
}

TEMPLATE_TEST_CASE("relu_backward and small_dense_forward match float64 over several row chunks", "[dense][fused]",
                   FOXRL_TEST_SPACES) {
  using Exec = TestType;
  using Mem = typename Exec::memory_space;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  // More rows than one chunk on every backend, columns not a multiple of
  // any column tile; a 4-output "head" and an 11-output one (more head
  // gradients than the kernel keeps in registers per row).
  const int M = 301, K = 45;
  const int NS = GENERATE(4, 11);
  INFO(NS << " head outputs");
  const auto src = random_values(std::size_t(M) * K, 21);
  const auto act = random_values(std::size_t(M) * K, 22, true);
  const auto dys = random_values(std::size_t(M) * NS, 23);
  const auto ws = random_values(std::size_t(NS) * K, 24);
  const auto bs = random_values(NS, 25);
  auto SRC = foxrl::test::to_device(space, src, M, K);
  auto ACT = foxrl::test::to_device(space, act, M, K);
  auto DYS = foxrl::test::to_device(space, dys, M, NS);
  auto WS = foxrl::test::to_device(space, ws, NS, K);
  auto BS = foxrl::test::to_device(space, bs);
  Kokkos::View<float**, Kokkos::LayoutRight, Mem> DZ("foxrl::test::DZ", M, K), DW("foxrl::test::DW", NS, K),
      Y("foxrl::test::Y", M, NS);
  Kokkos::View<float*, Mem> DB("foxrl::test::DB", K);
  const auto need = foxrl::kernels::relu_backward_scratch<Exec>(M, K, 1 + NS);
  const foxrl::kernels::ReduceScratch<Mem> scratch(space, "foxrl::test::reduce", need.floats, need.tickets);

  for (const bool small : {false, true}) {
    DYNAMIC_SECTION((small ? "dX from the small product" : "dX given")) {
      foxrl::kernels::ReluBackwardArgs a;
      a.rows = M;
      a.cols = K;
      if (small) {
        a.dy_small = DYS.data();
        a.dy_ld = NS;
        a.w_small = WS.data();
        a.w_ld = K;
        a.n_small = NS;
        a.dw_small = DW.data();
        a.dw_ld = K;
      } else {
        a.src = SRC.data();
        a.src_ld = K;
      }
      a.act = ACT.data();
      a.act_ld = K;
      a.dz = DZ.data();
      a.dz_ld = K;
      a.db = DB.data();
      // Twice: the second launch relies on the first leaving its tickets at zero.
      for (int rep = 0; rep < 2; ++rep) {
        Kokkos::deep_copy(space, DB, 0.0f);
        foxrl::kernels::relu_backward(space, a, scratch);
        const auto dz = foxrl::test::to_host(space, DZ);
        const auto db = foxrl::test::to_host(space, DB);
        const auto dw = foxrl::test::to_host(space, DW);
        double worst_dz = 0.0, worst_db = 0.0, worst_dw = 0.0;
        std::vector<double> ref_db(K, 0.0), ref_dw(std::size_t(NS) * K, 0.0);
        for (int m = 0; m < M; ++m)
          for (int k = 0; k < K; ++k) {
            double v = 0.0;
            if (small)
              for (int n = 0; n < NS; ++n) v += double(dys[std::size_t(m) * NS + n]) * ws[std::size_t(n) * K + k];
            else
              v = src[std::size_t(m) * K + k];
            const double h = act[std::size_t(m) * K + k];
            if (!(h > 0.0)) v = 0.0;
            worst_dz = std::max(worst_dz, std::abs(v - dz(m, k)));
            ref_db[k] += v;
            for (int n = 0; n < NS; ++n) ref_dw[std::size_t(n) * K + k] += double(dys[std::size_t(m) * NS + n]) * h;
          }
        for (int k = 0; k < K; ++k) {
          worst_db = std::max(worst_db, std::abs(ref_db[k] - db(k)));
          if (small)
            for (int n = 0; n < NS; ++n)
              worst_dw = std::max(worst_dw, std::abs(ref_dw[std::size_t(n) * K + k] - dw(n, k)));
        }
        INFO("launch " << rep);
        CHECK(worst_dz < tolerance);
        // float32 sums of 301 terms of size <= 1 (worst-case rounding ~n eps max partial sum).
        CHECK(worst_db < tolerance * 10);
        CHECK(worst_dw < tolerance * 10);
        const auto tickets = foxrl::test::to_host(space, scratch.tickets);
        for (std::size_t t = 0; t < tickets.extent(0); ++t) CHECK(tickets(t) == 0u);
      }
    }
  }

  foxrl::kernels::small_dense_forward(space, foxrl::ConstMatrix<Mem>(SRC), foxrl::ConstMatrix<Mem>(WS),
                                      foxrl::ConstVector<Mem>(BS), foxrl::MutableMatrix<Mem>(Y));
  const auto y = foxrl::test::to_host(space, Y);
  double worst = 0.0;
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < NS; ++n) {
      double ref = bs[n];
      for (int k = 0; k < K; ++k) ref += double(src[std::size_t(m) * K + k]) * ws[std::size_t(n) * K + k];
      worst = std::max(worst, std::abs(ref - y(m, n)));
    }
  CHECK(worst < tolerance);
}

TEMPLATE_TEST_CASE("the head kernel with the hidden epilogue fused matches float64", "[dense][fused]",
                   FOXRL_TEST_SPACES) {
  using Exec = TestType;
  using Mem = typename Exec::memory_space;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  // K not a multiple of the 4 x 32 columns a GPU lane group covers per
  // step; N = 1 (one output), 4 (a dueling head) and 11 (two passes).
  const int M = 77, K = 173;
  for (const int N : {1, 4, 11}) {
    // H stored in every row, or only in the first rows (a backward's); a
    // head of 11 outputs (two passes) always stores every row.
    for (const int store_rows : {-1, 30}) {
      DYNAMIC_SECTION(N << " outputs, H stored in " << (store_rows < 0 ? "every row" : "the first 30 rows")) {
        const int stored = store_rows < 0 || N > 8 ? M : store_rows;
        auto z = random_values(std::size_t(M) * K, 41);
        z[5] = std::nanf("");  // a NaN pre-activation is cut by the ReLU, as in bias_activation
        const auto hb = random_values(K, 42);
        const auto w = random_values(std::size_t(N) * K, 43);
        const auto b = random_values(N, 44);
        auto Z = foxrl::test::to_device(space, z, M, K);
        auto HB = foxrl::test::to_device(space, hb);
        auto W = foxrl::test::to_device(space, w, N, K);
        auto B = foxrl::test::to_device(space, b);
        Kokkos::View<float**, Kokkos::LayoutRight, Mem> Y("foxrl::test::Y", M, N);
        // The fused greedy action needs 2..8 outputs (a dueling row [V, A...]).
        const bool with_greedy = N >= 2 && N <= 8;
        Kokkos::View<std::int32_t*, Mem> G("foxrl::test::G", M);
        foxrl::kernels::bias_relu_small_dense_forward(
            space, foxrl::MutableMatrix<Mem>(Z), foxrl::ConstVector<Mem>(HB), foxrl::ConstMatrix<Mem>(W),
            foxrl::ConstVector<Mem>(B), foxrl::MutableMatrix<Mem>(Y), with_greedy ? G.data() : nullptr, store_rows);
        const auto h = foxrl::test::to_host(space, Z);
        const auto y = foxrl::test::to_host(space, Y);
        const auto g = foxrl::test::to_host(space, G);
        if (with_greedy) {
          // argmax_j of V + A_j - mean(A) in float64 over the stored outputs;
          // rows whose two best Q-values are within rounding are skipped.
          int wrong = 0, compared = 0;
          for (int m = 0; m < M; ++m) {
            const int A = N - 1;
            double mean_a = 0.0;
            for (int j = 0; j < A; ++j) mean_a += y(m, 1 + j) / double(A);
            int best = 0;
            double best_q = -1e300, second_q = -1e300;
            for (int j = 0; j < A; ++j) {
              const double q = double(y(m, 0)) + y(m, 1 + j) - mean_a;
              if (q > best_q) {
                second_q = best_q;
                best_q = q;
                best = j;
              } else if (q > second_q) {
                second_q = q;
              }
            }
            if (best_q - second_q < 1e-5) continue;
            ++compared;
            if (g(m) != best) ++wrong;
          }
          CHECK(compared > M / 2);
          CHECK(wrong == 0);
        }
        double worst_h = 0.0, worst_y = 0.0;
        int unstored_changed = 0;
        for (int m = 0; m < M; ++m) {
          std::vector<double> ref_h(K);
          for (int k = 0; k < K; ++k) {
            const float v = z[std::size_t(m) * K + k] + hb[k];
            ref_h[k] = v > 0.0f ? v : 0.0;
            // Rows past the stored ones keep Z, bit for bit (NaN included).
            if (m < stored)
              worst_h = std::max(worst_h, std::abs(ref_h[k] - h(m, k)));
            else
              unstored_changed += std::memcmp(&z[std::size_t(m) * K + k], &h(m, k), sizeof(float)) != 0 ? 1 : 0;
          }
          for (int n = 0; n < N; ++n) {
            double ref = b[n];
            for (int k = 0; k < K; ++k) ref += ref_h[k] * w[std::size_t(n) * K + k];
            worst_y = std::max(worst_y, std::abs(ref - y(m, n)));
          }
        }
        CHECK(worst_h == 0.0);  // the same float addition and ReLU as bias_activation
        CHECK(unstored_changed == 0);
        CHECK(worst_y < tolerance * 4);  // K = 173 terms of size <= 2
      }
    }
  }
}

TEMPLATE_TEST_CASE("gradient_sq_norm over several teams matches a float64 sum", "[dense][norm]", FOXRL_TEST_SPACES) {
  using Exec = TestType;
  using Mem = typename Exec::memory_space;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  const std::size_t n = 20011;
  const int teams = foxrl::kernels::gradient_norm_teams<Exec>(n);
  REQUIRE(teams > 1);
  const auto g = random_values(n, 31);
  auto grads = foxrl::test::to_device(space, g);
  Kokkos::View<float*, Mem> metrics("foxrl::test::metrics", foxrl::LearnerMetrics::count);
  const foxrl::kernels::ReduceScratch<Mem> scratch(space, "foxrl::test::reduce", std::size_t(teams), 1);
  double ref = 0.0;
  for (const float x : g) ref += double(x) * x;
  for (int rep = 0; rep < 2; ++rep) {
    Kokkos::deep_copy(space, metrics, 0.0f);
    foxrl::kernels::gradient_sq_norm(space, grads, metrics, scratch);
    const auto mh = foxrl::test::to_host(space, metrics);
    INFO("launch " << rep);
    CHECK(mh(foxrl::LearnerMetrics::grad_sq) == Approx(ref).epsilon(1e-5));
  }
}

TEMPLATE_TEST_CASE("DenseOps takes stacked rows that follow each other in memory as one product", "[dense][stacked]",
                   FOXRL_TEST_SPACES) {
  using Exec = TestType;
  using Mem = typename Exec::memory_space;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  // The replay's layout: s in rows [0, M1) and s' in rows [M1, M) of one
  // allocation (the online network's forward at s and s').
  const int M1 = 37, M = 74, K = 65, N = 45;
  const auto x = random_values(std::size_t(M) * K, 11);
  const auto w = random_values(std::size_t(N) * K, 12);
  const auto b = random_values(N, 13);
  auto X = foxrl::test::to_device(space, x, M, K);
  auto W = foxrl::test::to_device(space, w, N, K);
  auto Bv = foxrl::test::to_device(space, b);
  const foxrl::ConstMatrix<Mem> s(Kokkos::subview(X, std::make_pair(0, M1), Kokkos::ALL));
  const foxrl::ConstMatrix<Mem> s_next(Kokkos::subview(X, std::make_pair(M1, M), Kokkos::ALL));
  // The same rows in two allocations: never one product.
  auto X1 = foxrl::test::to_device(space, std::vector<float>(x.begin(), x.begin() + std::ptrdiff_t(M1) * K), M1, K);
  auto X2 = foxrl::test::to_device(space, std::vector<float>(x.begin() + std::ptrdiff_t(M1) * K, x.end()), M - M1, K);

  for (const auto backend : {foxrl::DenseBackend::portable, foxrl::DenseBackend::blas}) {
    for (const bool stacked : {true, false}) {
      DYNAMIC_SECTION("backend " << foxrl::to_string(backend) << ", stacked rows " << (stacked ? "on" : "off")) {
        foxrl::DenseOps<Exec> ops(space, backend);
        ops.set_stacked_rows(stacked);
        Kokkos::View<float**, Kokkos::LayoutRight, Mem> Y("foxrl::test::Y", M, N), Y2("foxrl::test::Y2", M, N);
        ops.forward(space, s, s_next, foxrl::ConstMatrix<Mem>(W), foxrl::ConstVector<Mem>(Bv), true,
                    foxrl::MutableMatrix<Mem>(Y));
        // One product wherever the rows follow each other and the switch
        // is on (the portable kernel reads both blocks in one launch anyway).
        const bool one = backend == foxrl::DenseBackend::portable || stacked;
        CHECK(ops.forward_products() == (one ? 1 : 2));
        ops.forward(space, foxrl::ConstMatrix<Mem>(X1), foxrl::ConstMatrix<Mem>(X2), foxrl::ConstMatrix<Mem>(W),
                    foxrl::ConstVector<Mem>(Bv), true, foxrl::MutableMatrix<Mem>(Y2));
        CHECK(ops.forward_products() == (one ? 1 : 2) + (backend == foxrl::DenseBackend::portable ? 1 : 2));
        const auto y = foxrl::test::to_host(space, Y);
        const auto y2 = foxrl::test::to_host(space, Y2);
        double worst = 0.0, worst2 = 0.0;
        for (int m = 0; m < M; ++m)
          for (int n = 0; n < N; ++n) {
            double ref = b[n];
            for (int k = 0; k < K; ++k) ref += double(x[std::size_t(m) * K + k]) * w[std::size_t(n) * K + k];
            ref = std::max(ref, 0.0);
            worst = std::max(worst, std::abs(ref - y(m, n)));
            worst2 = std::max(worst2, std::abs(ref - y2(m, n)));
          }
        CHECK(worst < tolerance);
        CHECK(worst2 < tolerance);
      }
    }
  }
}
