// The narrow input's weight gradient (a first layer of at most 8 inputs,
// CartPole's 4) in relu_backward's mask pass, against float64 host
// products on ragged shapes.
#include "core/execution_context.hpp"
#include "kernels/core/reduce_scratch.hpp"
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

}  // namespace

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
