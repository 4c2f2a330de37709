// The dense products (both backends) against float64 host loops, on shapes
// that are not multiples of any tile size.
#include "dense.hpp"
#include "execution_context.hpp"
#include "reference_dqn.hpp"
#include "test_spaces.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <vector>

namespace {

std::vector<float> random_values(std::size_t n, std::uint32_t seed, bool with_zeros = false) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) {
    x = u(rng);
    if (with_zeros && x < -0.3f) x = 0.0f;  // like a ReLU output
  }
  return v;
}

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
      for (const bool relu : {false, true}) {
        if (backend == foxrl::DenseBackend::portable)
          foxrl::kernels::dense_forward(space, backend, foxrl::ConstMatrix<Mem>(X1), foxrl::ConstMatrix<Mem>(X2),
                                        foxrl::ConstMatrix<Mem>(W), foxrl::ConstVector<Mem>(Bv), relu,
                                        foxrl::MutableMatrix<Mem>(Y));
        else
          foxrl::kernels::dense_forward(space, backend, foxrl::ConstMatrix<Mem>(X), foxrl::ConstMatrix<Mem>(),
                                        foxrl::ConstMatrix<Mem>(W), foxrl::ConstVector<Mem>(Bv), relu,
                                        foxrl::MutableMatrix<Mem>(Y));
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

      foxrl::kernels::dense_backward_input(space, backend, foxrl::ConstMatrix<Mem>(DY), foxrl::ConstMatrix<Mem>(W),
                                           foxrl::ConstMatrix<Mem>(MASK), foxrl::MutableMatrix<Mem>(DX));
      foxrl::kernels::dense_backward_weights(space, backend, foxrl::ConstMatrix<Mem>(DY), foxrl::ConstMatrix<Mem>(X),
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
