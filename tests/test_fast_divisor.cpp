// kernels::FastDivisor (kernels/core/fast_divisor.hpp) against the
// language's own integer division: exhaustively for small divisors and
// dividends, at and near max_exact() for divisors up to 2^20, and on every
// backend (on CUDA the device path is a high multiply, not the host's
// 64-bit product).
#include "kernels/core/fast_divisor.hpp"
#include "support/test_spaces.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <random>
#include <vector>

using foxrl::kernels::FastDivisor;

TEST_CASE("FastDivisor divides exactly: every dividend below 2^17 by every divisor up to 512", "[core][divisor]") {
  std::uint64_t wrong = 0;
  for (std::uint32_t d = 1; d <= 512; ++d) {
    const FastDivisor div(d);
    REQUIRE(div.divisor() == d);
    for (std::uint32_t n = 0; n < (1u << 17); ++n) wrong += div.divide(n) != n / d ? 1 : 0;
  }
  REQUIRE(wrong == 0);
}

TEST_CASE("FastDivisor divides exactly up to max_exact, which covers every 16-bit case", "[core][divisor]") {
  std::mt19937 rng(20261205);
  std::vector<std::uint32_t> divisors;
  for (std::uint32_t d = 1; d <= 4096; ++d) divisors.push_back(d);
  std::uniform_int_distribution<std::uint32_t> large(4097, 1u << 20);
  for (int i = 0; i < 2000; ++i) divisors.push_back(large(rng));
  for (std::uint32_t k = 1; k <= 20; ++k) {  // powers of two and their neighbours
    divisors.push_back((1u << k) - 1);
    divisors.push_back(1u << k);
    divisors.push_back((1u << k) + 1);
  }
  std::uint64_t wrong = 0;
  for (const std::uint32_t d : divisors) {
    const FastDivisor div(d);
    const std::uint32_t top = div.max_exact();
    // Any divisor up to 2^16 is exact for every dividend up to 2^16: the
    // fused kernels' shapes (a network that fits one block's shared memory)
    // stay far inside that.
    if (d <= (1u << 16)) REQUIRE(top >= (1u << 16));
    std::uniform_int_distribution<std::uint32_t> any(0, top);
    for (int i = 0; i < 2000; ++i) {
      const std::uint32_t n = any(rng);
      wrong += div.divide(n) != n / d ? 1 : 0;
    }
    for (std::uint32_t k = 0; k < 2000 && k <= top; ++k) {
      const std::uint32_t n = top - k;
      wrong += div.divide(n) != n / d ? 1 : 0;
    }
    // Multiples of d and their neighbours, where floor changes.
    for (std::uint64_t q = top / d; q > 0 && q + 64 > top / d; --q) {
      const std::uint64_t base = q * d;
      for (const std::uint64_t n : {base - 1, base, base + 1})
        if (n <= top) wrong += div.divide(static_cast<std::uint32_t>(n)) != n / d ? 1 : 0;
    }
  }
  REQUIRE(wrong == 0);
}

TEMPLATE_TEST_CASE("FastDivisor divides exactly inside kernels", "[core][divisor]", FOXRL_TEST_SPACES) {
  using Exec = TestType;
  const Exec space;
  for (const std::uint32_t d : {1u, 2u, 3u, 4u, 7u, 65u, 84u, 120u, 255u, 512u, 1000u, 4097u, 65535u}) {
    const FastDivisor div(d);
    const std::uint32_t top = div.max_exact();
    const std::uint32_t count = top < (1u << 20) ? top + 1 : (1u << 20);
    std::uint64_t wrong = 0;
    Kokkos::parallel_reduce(
        "foxrl::test::fast_divisor", Kokkos::RangePolicy<Exec>(space, 0, count),
        KOKKOS_LAMBDA(std::uint32_t n, std::uint64_t & sum) {
          // The high end too: the largest exact dividends, counted down.
          const std::uint32_t m = top - n;
          sum += (div.divide(n) != n / div.divisor() ? 1 : 0) + (div.divide(m) != m / div.divisor() ? 1 : 0);
        },
        wrong);
    INFO("divisor " << d);
    REQUIRE(wrong == 0);
  }
}
