// The tensor-core precisions of the dense products (kernels/nn/matmul_precision.hpp):
// the operand rounding against a float64 reference (nearest, ties to even),
// and RowMajorGemm in fp32, tf32 and bf16 against float64 products of the
// unrounded operands, on ragged shapes: within each precision's error
// bound, and (tf32, bf16) measurably outside fp32's, so a mode that
// silently fell back to fp32 fails.
#include "core/execution_context.hpp"
#include "kernels/nn/matmul_precision.hpp"
#include "nn/dense_ops.hpp"
#include "nn/row_major_gemm.hpp"
#include "support/device_copy.hpp"
#include "support/random_values.hpp"
#include "support/test_spaces.hpp"

#include <catch2/catch.hpp>

#include <cfloat>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace {

/// `x` rounded to `bits` explicit mantissa bits in float64 arithmetic:
/// x = f 2^e with f in [0.5, 1), so the last kept bit is worth
/// 2^(e - 1 - bits); nearbyint rounds to nearest, ties to even.
double reference_round(float x, int bits) {
  if (!std::isfinite(x) || x == 0.0f) return x;
  int e = 0;
  (void)std::frexp(double(x), &e);
  const double ulp = std::ldexp(1.0, e - 1 - bits);
  return std::nearbyint(double(x) / ulp) * ulp;
}

using foxrl::test::random_values;

}  // namespace

TEST_CASE("operands round to tf32 and bf16 to nearest with ties to even", "[precision]") {
  using foxrl::MatmulPrecision;
  for (const auto p : {MatmulPrecision::tf32, MatmulPrecision::bf16}) {
    const int bits = foxrl::mantissa_bits(p);
    INFO(foxrl::to_string(p));
    // Ties: 1 + half an ulp rounds down to the even 1; 1 + 3 half-ulps up to 1 + 2 ulps.
    const float half_ulp = std::ldexp(1.0f, -bits - 1);
    CHECK(foxrl::round_to_precision(1.0f + half_ulp, p) == 1.0f);
    CHECK(foxrl::round_to_precision(1.0f + 3 * half_ulp, p) == 1.0f + 4 * half_ulp);
    // Past the largest finite value of the precision: infinity, as the conversion gives.
    CHECK(std::isinf(foxrl::round_to_precision(FLT_MAX, p)));
    CHECK(std::isinf(foxrl::round_to_precision(-std::numeric_limits<float>::infinity(), p)));
    CHECK(std::isnan(foxrl::round_to_precision(std::numeric_limits<float>::quiet_NaN(), p)));
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> mantissa(1.0f, 2.0f);
    std::uniform_int_distribution<int> exponent(-120, 120);
    int checked = 0;
    for (int i = 0; i < 20000; ++i) {
      const float x = (i % 2 ? -1.0f : 1.0f) * std::ldexp(mantissa(rng), exponent(rng));
      const double want = reference_round(x, bits);
      const float got = foxrl::round_to_precision(x, p);
      if (double(got) != want) FAIL("x = " << x << ": got " << got << ", want " << want);
      ++checked;
    }
    CHECK(checked == 20000);
  }
  CHECK(foxrl::round_to_precision(0.1f, MatmulPrecision::fp32) == 0.1f);
  CHECK(foxrl::parse_matmul_precision("bf16", "test") == MatmulPrecision::bf16);
  CHECK_THROWS_AS(foxrl::parse_matmul_precision("fp16", "test"), foxrl::UsageError);
}

TEMPLATE_TEST_CASE("RowMajorGemm in each matmul precision stays within its error bound", "[precision][dense][gemm]",
                   FOXRL_TEST_SPACES) {
  using Exec = TestType;
  using Mem = typename Exec::memory_space;
  using foxrl::MatmulPrecision;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  struct Shape {
    int M, K, N;
    bool ta, tb;
  };
  // The products of a training step on ragged sizes: forward X W^T (batch
  // 1000, observation 65, hidden 120 and 84), backward dY W, dY^T X, one row.
  const Shape shapes[] = {{1000, 65, 120, false, true},
                          {1000, 120, 84, false, true},
                          {1000, 84, 120, false, false},
                          {84, 1000, 120, true, false},
                          {1, 84, 3, false, true}};
  for (const auto& s : shapes) {
    const int ar = s.ta ? s.K : s.M, ac = s.ta ? s.M : s.K, br = s.tb ? s.N : s.K, bc = s.tb ? s.K : s.N;
    const auto a = random_values(std::size_t(ar) * ac, 31);
    const auto b = random_values(std::size_t(br) * bc, 32);
    auto A = foxrl::test::to_device(space, a, ar, ac);
    auto B = foxrl::test::to_device(space, b, br, bc);
    // fp32 first: its error is the yardstick the rounded modes must exceed
    // (a plain loop, not sections, so it survives into their turns).
    double worst_fp32 = 0.0, worst_tf32 = 0.0;
    for (const auto p : {MatmulPrecision::fp32, MatmulPrecision::tf32, MatmulPrecision::bf16}) {
      INFO(foxrl::to_string(p) << " M " << s.M << " K " << s.K << " N " << s.N << " op(A) " << (s.ta ? "T" : "N")
                               << " op(B) " << (s.tb ? "T" : "N"));
      foxrl::RowMajorGemm<Exec> gemm(space, p);
      CHECK(gemm.precision() == p);
      Kokkos::View<float**, Kokkos::LayoutRight, Mem> C("foxrl::test::C", s.M, s.N);
      gemm(space, s.ta, s.tb, foxrl::ConstMatrix<Mem>(A), foxrl::ConstMatrix<Mem>(B), foxrl::MutableMatrix<Mem>(C));
      const auto c = foxrl::test::to_host(space, C);
      // Each product of two inputs rounded with relative error <= u (2^-bits
      // covers truncation too, twice the nearest-rounding bound) is off by
      // <= 2u + u^2; fp32 accumulation of K terms adds <= K 2^-24 (first-order
      // bound), both relative to sum_k |a_k b_k|.
      const double u = p == MatmulPrecision::fp32 ? 0.0 : std::ldexp(1.0, -foxrl::mantissa_bits(p));
      const double bound = 2 * u + u * u + s.K * std::ldexp(1.0, -24);
      double worst = 0.0;  // max |C - ref| / sum |a b|
      for (int m = 0; m < s.M; ++m)
        for (int n = 0; n < s.N; ++n) {
          double ref = 0.0, scale = 0.0;
          for (int k = 0; k < s.K; ++k) {
            const double av = s.ta ? a[std::size_t(k) * ac + m] : a[std::size_t(m) * ac + k];
            const double bv = s.tb ? b[std::size_t(n) * bc + k] : b[std::size_t(k) * bc + n];
            ref += av * bv;
            scale += std::abs(av * bv);
          }
          worst = std::max(worst, std::abs(ref - c(m, n)) / scale);
        }
      INFO("worst relative error " << worst << ", bound " << bound << ", fp32's " << worst_fp32);
      CHECK(worst <= bound);
      if (p == MatmulPrecision::fp32) {
        worst_fp32 = worst;
      } else if (s.M * s.N >= 100) {
        // The products really read rounded inputs: an input error of 2^-11
        // (tf32) or 2^-8 (bf16) against fp32's 2^-24 leaves the result over
        // 16x further off than fp32's (one-row products excepted: too few
        // entries to show it reliably).
        CHECK(worst > 16 * worst_fp32);
        // bf16 keeps 3 mantissa bits fewer than tf32: about 8x the error
        // (4x allowed for the spread of a maximum), so a bf16 mode that ran
        // tf32 arithmetic fails here.
        if (p == MatmulPrecision::tf32) worst_tf32 = worst;
        if (p == MatmulPrecision::bf16) CHECK(worst > 4 * worst_tf32);
      }
    }
  }
}

TEMPLATE_TEST_CASE("the portable dense backend refuses a tensor-core precision", "[precision][dense]",
                   FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context;
  CHECK_THROWS_AS(foxrl::DenseOps<Exec>(context.space(), foxrl::DenseBackend::portable, foxrl::MatmulPrecision::tf32),
                  foxrl::UsageError);
  CHECK_NOTHROW(foxrl::DenseOps<Exec>(context.space(), foxrl::DenseBackend::portable, foxrl::MatmulPrecision::fp32));
}
