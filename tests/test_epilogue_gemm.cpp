// EpilogueGemm (cuBLASLt with the dense layer's element-wise work in the
// gemm's epilogue, nn/epilogue_gemm.hpp) against float64 host products, on
// ragged shapes (batch 1000 with hidden 120 and 84 and observation 65, one
// env's row, sizes that are multiples of no tile): the forward with bias,
// with bias + ReLU and with the ReLU's bitmask, and the backward's masked
// dX with the bias gradient. The portable twin of each is the launch
// sequence DenseOps runs without fused epilogues (test_dense.cpp and
// test_mlp.cpp hold it to the same float64 products).
//
// Tolerances are the textbook bound of a float32 sum of n terms in any
// order, n * 2^-24 * (sum of the terms' magnitudes), computed per entry
// from the float64 terms: split-K or not, every algorithm cuBLASLt may
// choose stays within it. A bit of the ReLU mask is checked where the
// reference's sign is outside that bound.
// CUDA builds only (the library exists only there).
#include <Kokkos_Core.hpp>

#ifdef KOKKOS_ENABLE_CUDA

#include "core/execution_context.hpp"
#include "nn/dense_ops.hpp"
#include "nn/epilogue_gemm.hpp"
#include "support/device_copy.hpp"
#include "support/random_values.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace {

using Exec = Kokkos::Cuda;
using Mem = Exec::memory_space;
using foxrl::test::random_values;

constexpr double unit_roundoff = 1.0 / 16777216.0;  // 2^-24

struct Shape {
  int rows, in, out;
};

const std::vector<Shape>& shapes() {
  static const std::vector<Shape> s = {{1000, 65, 120}, {1000, 120, 84}, {1, 65, 120}, {37, 71, 45}, {128, 4, 120}};
  return s;
}

std::string describe(const Shape& s) {
  return std::to_string(s.rows) + " rows, " + std::to_string(s.in) + " -> " + std::to_string(s.out);
}

/// Bit f of row r of a cuBLASLt ReLU bitmask copied to the host.
bool mask_bit(const std::vector<std::uint8_t>& bits, std::int64_t ld_bits, int r, int f) {
  return ((bits[std::size_t(r) * std::size_t(ld_bits / 8) + std::size_t(f / 8)] >> (f % 8)) & 1) != 0;
}

/// A ReLU bitmask of `rows` rows of `features` outputs in `bits` (sized
/// ReluBitmask::bytes(rows, features) or more).
foxrl::ReluBitmask bitmask_in(const Kokkos::View<std::uint8_t*, Mem>& bits, int rows, int features) {
  foxrl::ReluBitmask mask;
  mask.bits = bits.data();
  mask.ld_bits = foxrl::ReluBitmask::row_bits(features);
  mask.rows = rows;
  return mask;
}

std::vector<std::uint8_t> bits_to_host(const Exec& space, const Kokkos::View<std::uint8_t*, Mem>& v) {
  const auto h = foxrl::test::to_host(space, v);
  return std::vector<std::uint8_t>(h.data(), h.data() + h.extent(0));
}

}  // namespace

TEST_CASE("cuBLASLt forward epilogues match float64 products and ReLU signs", "[dense][epilogue]") {
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  foxrl::CublasHandle cublas(space);  // its workspace serves the cuBLASLt calls too
  foxrl::EpilogueGemm<Exec> lt(space, foxrl::MatmulPrecision::fp32, cublas.workspace());
  for (const Shape& s : shapes()) {
    const int M = s.rows, K = s.in, N = s.out;
    const auto x = random_values(std::size_t(M) * K, 11);
    const auto w = random_values(std::size_t(N) * K, 12);
    const auto b = random_values(std::size_t(N), 13);
    const auto X = foxrl::test::to_device(space, x, M, K);
    const auto W = foxrl::test::to_device(space, w, N, K);
    const auto Bv = foxrl::test::to_device(space, b);
    Kokkos::View<float**, Kokkos::LayoutRight, Mem> Y("foxrl::test::Y", M, N);
    const std::int64_t ld_bits = foxrl::ReluBitmask::row_bits(N);
    Kokkos::View<std::uint8_t*, Mem> bits("foxrl::test::bits", foxrl::ReluBitmask::bytes(M, N));

    // Reference values and their error bounds.
    std::vector<double> ref(std::size_t(M) * N), bound(std::size_t(M) * N);
    for (int m = 0; m < M; ++m)
      for (int n = 0; n < N; ++n) {
        double acc = b[n], mag = std::abs(double(b[n]));
        for (int k = 0; k < K; ++k) {
          const double t = double(x[std::size_t(m) * K + k]) * w[std::size_t(n) * K + k];
          acc += t;
          mag += std::abs(t);
        }
        ref[std::size_t(m) * N + n] = acc;
        bound[std::size_t(m) * N + n] = (K + 1) * unit_roundoff * mag;
      }

    for (const int variant : {0, 1, 2}) {  // bias, bias + ReLU, bias + ReLU + bitmask
      const bool relu = variant > 0;
      const foxrl::ReluBitmask mask = variant == 2 ? bitmask_in(bits, M, N) : foxrl::ReluBitmask();
      DYNAMIC_SECTION(describe(s) << ", " << (variant == 0 ? "bias" : variant == 1 ? "bias + ReLU" : "ReLU bitmask")) {
        Kokkos::deep_copy(space, Y, std::nanf(""));
        const bool ran = lt.forward(space, X, W, Bv, relu, Y, mask);
        // fp32 bias and bias + ReLU epilogues exist on every architecture
        // cuBLASLt supports; the bitmask epilogue is what the fused backward
        // needs, so its absence must show.
        INFO("cuBLASLt offered no fp32 algorithm for this epilogue");
        REQUIRE(ran);
        const auto y = foxrl::test::to_host(space, Y);
        double worst = 0.0;  // error relative to the entry's bound (< 1 passes)
        for (int m = 0; m < M; ++m)
          for (int n = 0; n < N; ++n) {
            const double r = relu ? std::max(ref[std::size_t(m) * N + n], 0.0) : ref[std::size_t(m) * N + n];
            worst = std::max(worst, std::abs(r - y(m, n)) / (bound[std::size_t(m) * N + n] + 1e-30));
          }
        CHECK(worst < 1.0);
        if (variant == 2) {
          const auto h = bits_to_host(space, bits);
          int wrong = 0, checked = 0;
          for (int m = 0; m < M; ++m)
            for (int n = 0; n < N; ++n) {
              const double r = ref[std::size_t(m) * N + n];
              if (std::abs(r) <= bound[std::size_t(m) * N + n]) continue;
              ++checked;
              wrong += mask_bit(h, ld_bits, m, n) != (r > 0.0) ? 1 : 0;
            }
          CHECK(checked > M * N / 2);
          CHECK(wrong == 0);
        }
      }
    }
  }
}

TEST_CASE("cuBLASLt plans are looked up once per shape and reused", "[dense][epilogue]") {
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  foxrl::CublasHandle cublas(space);  // its workspace serves the cuBLASLt calls too
  foxrl::EpilogueGemm<Exec> lt(space, foxrl::MatmulPrecision::fp32, cublas.workspace());
  const Shape& s = shapes().front();
  const auto X = foxrl::test::to_device(space, random_values(std::size_t(s.rows) * s.in, 1), s.rows, s.in);
  const auto W = foxrl::test::to_device(space, random_values(std::size_t(s.out) * s.in, 2), s.out, s.in);
  const auto Bv = foxrl::test::to_device(space, random_values(std::size_t(s.out), 3));
  Kokkos::View<float**, Kokkos::LayoutRight, Mem> Y("foxrl::test::Y", s.rows, s.out),
      Z("foxrl::test::Z", s.rows, s.out);
  CHECK(lt.plans() == 0);
  CHECK(lt.forward(space, X, W, Bv, true, Y, foxrl::ReluBitmask()));
  CHECK(lt.plans() == 1);
  // The same shape into another output buffer of the same alignment: the
  // plan is reused; another epilogue is another plan.
  CHECK(lt.forward(space, X, W, Bv, true, Z, foxrl::ReluBitmask()));
  CHECK(lt.plans() == 1);
  CHECK(lt.forward(space, X, W, Bv, false, Z, foxrl::ReluBitmask()));
  CHECK(lt.plans() == 2);
  CHECK(lt.unsupported_plans() == 0);
  CHECK_THROWS_AS(foxrl::EpilogueGemm<Exec>(space, foxrl::MatmulPrecision::fp32, nullptr), foxrl::LogicError);
}

TEST_CASE("cuBLASLt masked backward matches float64 dX and bias gradients", "[dense][epilogue]") {
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  foxrl::CublasHandle cublas(space);  // its workspace serves the cuBLASLt calls too
  foxrl::EpilogueGemm<Exec> lt(space, foxrl::MatmulPrecision::fp32, cublas.workspace());
  for (const Shape& s : shapes()) {
    // The layer runs in -> out; its backward takes dY [M, out] to
    // dX [M, in] through the mask of its input (the previous layer's ReLU,
    // `in` features, made here by a forward of random pre-activations).
    const int M = s.rows, K = s.in, N = s.out, P = 17;
    DYNAMIC_SECTION(describe(s)) {
      const auto prev_x = foxrl::test::to_device(space, random_values(std::size_t(M) * P, 21), M, P);
      const auto prev_w = foxrl::test::to_device(space, random_values(std::size_t(K) * P, 22), K, P);
      const auto prev_b = foxrl::test::to_device(space, random_values(std::size_t(K), 23));
      Kokkos::View<float**, Kokkos::LayoutRight, Mem> H("foxrl::test::H", M, K);
      Kokkos::View<std::uint8_t*, Mem> bits("foxrl::test::bits", foxrl::ReluBitmask::bytes(M, K));
      const foxrl::ReluBitmask mask = bitmask_in(bits, M, K);
      REQUIRE(lt.forward(space, prev_x, prev_w, prev_b, true, H, mask));
      const auto h = foxrl::test::to_host(space, H);
      const auto hb = bits_to_host(space, bits);

      const auto dy = random_values(std::size_t(M) * N, 24);
      const auto w = random_values(std::size_t(N) * K, 25);
      const auto DY = foxrl::test::to_device(space, dy, M, N);
      const auto W = foxrl::test::to_device(space, w, N, K);
      Kokkos::View<float**, Kokkos::LayoutRight, Mem> DX("foxrl::test::DX", M, K);
      Kokkos::View<float*, Mem> DB("foxrl::test::DB", K);
      Kokkos::deep_copy(space, DB, std::nanf(""));
      const bool ran = lt.backward_input(space, DY, W, mask, DX, DB);
      INFO("cuBLASLt offered no fp32 DRELU_BGRAD algorithm for this shape");
      REQUIRE(ran);
      const auto dx = foxrl::test::to_host(space, DX);
      const auto db = foxrl::test::to_host(space, DB);

      std::vector<double> db_ref(std::size_t(K), 0.0), db_bound(std::size_t(K), 0.0);
      double worst_dx = 0.0;
      int mask_disagrees = 0;
      for (int m = 0; m < M; ++m)
        for (int k = 0; k < K; ++k) {
          // The mask the backward reads is the forward's bitmask; it must
          // say what the forward's output says.
          const bool live = mask_bit(hb, mask.ld_bits, m, k);
          mask_disagrees += live != (h(m, k) > 0.0f) ? 1 : 0;
          double acc = 0.0, mag = 0.0;
          for (int n = 0; n < N; ++n) {
            const double t = double(dy[std::size_t(m) * N + n]) * w[std::size_t(n) * K + k];
            acc += t;
            mag += std::abs(t);
          }
          if (!live) acc = mag = 0.0;
          const double bound = N * unit_roundoff * mag;
          worst_dx = std::max(worst_dx, std::abs(acc - dx(m, k)) / (bound + 1e-30));
          db_ref[std::size_t(k)] += acc;
          // The column sum adds M float32 terms, each within its own bound.
          db_bound[std::size_t(k)] += (M + N) * unit_roundoff * mag;
        }
      CHECK(mask_disagrees == 0);
      CHECK(worst_dx < 1.0);
      double worst_db = 0.0;
      for (int k = 0; k < K; ++k)
        worst_db = std::max(worst_db, std::abs(db_ref[std::size_t(k)] - db(k)) / (db_bound[std::size_t(k)] + 1e-30));
      CHECK(worst_db < 1.0);
    }
  }
}

TEST_CASE("DenseOps with fused epilogues runs the library and matches its launch sequence", "[dense][epilogue]") {
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  const int M1 = 1000, M2 = 24, K = 65, N = 120;
  const auto X1 = foxrl::test::to_device(space, random_values(std::size_t(M1) * K, 31), M1, K);
  const auto X2 = foxrl::test::to_device(space, random_values(std::size_t(M2) * K, 32), M2, K);
  const auto W = foxrl::test::to_device(space, random_values(std::size_t(N) * K, 33), N, K);
  const auto Bv = foxrl::test::to_device(space, random_values(std::size_t(N), 34));
  Kokkos::View<float**, Kokkos::LayoutRight, Mem> fused("foxrl::test::fused", M1 + M2, N),
      sequence("foxrl::test::sequence", M1 + M2, N);
  Kokkos::View<std::uint8_t*, Mem> bits("foxrl::test::bits", foxrl::ReluBitmask::bytes(M1, N));
  const foxrl::ReluBitmask mask = bitmask_in(bits, M1, N);

  foxrl::DenseOps<Exec> ops(space, foxrl::DenseBackend::blas);
  ops.set_fused_epilogues(space, true);
  REQUIRE(ops.fused_epilogues());
  CHECK(ops.forward(space, X1, X2, W, Bv, true, fused, mask));
  ops.set_fused_epilogues(space, false);
  CHECK_FALSE(ops.fused_epilogues());
  CHECK_FALSE(ops.forward(space, X1, X2, W, Bv, true, sequence, mask));
  // The portable backend has no fused epilogues to turn on.
  foxrl::DenseOps<Exec> portable(space, foxrl::DenseBackend::portable);
  portable.set_fused_epilogues(space, true);
  CHECK_FALSE(portable.fused_epilogues());

  // Same products, possibly another summation order: within twice the
  // float32 bound of a 66-term sum of magnitude <= 66.
  const auto a = foxrl::test::to_host(space, fused);
  const auto b = foxrl::test::to_host(space, sequence);
  double worst = 0.0;
  for (int m = 0; m < M1 + M2; ++m)
    for (int n = 0; n < N; ++n) worst = std::max(worst, double(std::abs(a(m, n) - b(m, n))));
  CHECK(worst <= 2.0 * (K + 1) * unit_roundoff * (K + 1));
}

TEST_CASE("DenseOps over stacked rows that follow each other writes one bitmask over both blocks",
          "[dense][epilogue]") {
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  // The replay's layout: s in rows [0, M1), s' in rows [M1, M) of one
  // allocation, as the online network's first layer takes them.
  const int M1 = 1000, M = 2000, K = 65, N = 120;
  const auto X = foxrl::test::to_device(space, random_values(std::size_t(M) * K, 41), M, K);
  const auto W = foxrl::test::to_device(space, random_values(std::size_t(N) * K, 43), N, K);
  const auto Bv = foxrl::test::to_device(space, random_values(std::size_t(N), 44));
  const foxrl::ConstMatrix<Mem> s(Kokkos::subview(X, std::make_pair(0, M1), Kokkos::ALL));
  const foxrl::ConstMatrix<Mem> s_next(Kokkos::subview(X, std::make_pair(M1, M), Kokkos::ALL));
  for (const bool stacked : {true, false}) {
    DYNAMIC_SECTION("stacked rows " << (stacked ? "on" : "off")) {
      Kokkos::View<float**, Kokkos::LayoutRight, Mem> Y("foxrl::test::Y", M, N);
      // Zeroed: a row the library did not write keeps no set bit.
      Kokkos::View<std::uint8_t*, Mem> bits("foxrl::test::bits", foxrl::ReluBitmask::bytes(M, N));
      const foxrl::ReluBitmask mask = bitmask_in(bits, M, N);
      foxrl::DenseOps<Exec> ops(space, foxrl::DenseBackend::blas);
      ops.set_fused_epilogues(space, true);
      ops.set_stacked_rows(stacked);
      REQUIRE(ops.forward(space, s, s_next, W, Bv, true, Y, mask));
      CHECK(ops.forward_products() == (stacked ? 1 : 2));
      // A bit is set exactly where the ReLU passed its value (the mask and
      // Y come from the same float): in every row with one product, in
      // s's rows only with one product per block.
      const auto y = foxrl::test::to_host(space, Y);
      const auto h = bits_to_host(space, bits);
      int wrong_s = 0, wrong_next = 0, set_next = 0;
      for (int m = 0; m < M; ++m)
        for (int n = 0; n < N; ++n) {
          const bool bit = mask_bit(h, mask.ld_bits, m, n);
          if (m < M1)
            wrong_s += bit != (y(m, n) > 0.0f) ? 1 : 0;
          else {
            wrong_next += bit != (y(m, n) > 0.0f) ? 1 : 0;
            set_next += bit ? 1 : 0;
          }
        }
      CHECK(wrong_s == 0);
      if (stacked)
        CHECK(wrong_next == 0);
      else
        CHECK(set_next == 0);
    }
  }
}

#endif  // KOKKOS_ENABLE_CUDA
