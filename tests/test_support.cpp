// The test helpers themselves: allclose must catch and locate a mismatch,
// and the device copies must round-trip on every backend.
#include "core/execution_context.hpp"
#include "support/allclose.hpp"
#include "support/device_copy.hpp"
#include "support/test_spaces.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

using foxrl::test::allclose;

TEST_CASE("allclose reports a planted mismatch with its index", "[support]") {
  std::vector<float> expected(100);
  for (int i = 0; i < 100; ++i) expected[static_cast<std::size_t>(i)] = 0.5f + 0.01f * static_cast<float>(i);
  auto actual = expected;
  const auto ok = allclose(actual, expected, 1e-6, 0.0);
  CHECK(ok);
  CHECK_THAT(ok.message, Catch::Contains("all 100 entries close"));

  actual[37] += 1e-3f;
  const auto bad = allclose(actual, expected, 1e-6, 0.0);
  CHECK_FALSE(bad);
  CHECK_THAT(bad.message, Catch::Contains("1 of 100 entries differ") && Catch::Contains("\n  37: "));
  // Inside the tolerance it passes again: rtol and atol both count.
  CHECK(allclose(actual, expected, 2e-3, 0.0));
  CHECK(allclose(actual, expected, 0.0, 1.1e-3));
  CHECK_FALSE(allclose(actual, expected, 0.0, 0.9e-3));
}

TEST_CASE("allclose names rank-2 indices, limits the list and rejects NaN and shape mismatches", "[support]") {
  Kokkos::View<double**, Kokkos::LayoutRight, Kokkos::HostSpace> a("foxrl::test::a", 3, 4);
  std::vector<double> ref(12, 1.0);
  Kokkos::deep_copy(a, 1.0);
  CHECK(allclose(a, ref, 0.0, 0.0));
  a(2, 1) = 1.5;
  auto r = allclose(a, ref, 1e-9, 1e-9);
  CHECK_FALSE(r);
  CHECK_THAT(r.message, Catch::Contains("(2, 1): 1.5 vs 1"));

  for (int j = 0; j < 4; ++j) a(0, j) = 2.0;
  r = allclose(a, ref, 1e-9, 1e-9, 2);
  CHECK_THAT(r.message, Catch::Contains("5 of 12") && Catch::Contains("(0, 1)") && !Catch::Contains("(0, 2)") &&
                            Catch::Contains("..."));

  std::vector<float> x{1.0f, std::numeric_limits<float>::quiet_NaN()};
  CHECK_FALSE(allclose(x, x, 1.0, 1.0));
  CHECK_FALSE(allclose(x, std::vector<float>{1.0f}, 1.0, 1.0));
  Kokkos::View<double**, Kokkos::LayoutRight, Kokkos::HostSpace> b("foxrl::test::b", 4, 3);
  Kokkos::deep_copy(b, 1.0);
  Kokkos::deep_copy(a, 1.0);
  r = allclose(a, b, 0.0, 0.0);
  CHECK_FALSE(r);
  CHECK_THAT(r.message, Catch::Contains("shape [3, 4] vs expected [4, 3]"));
}

TEMPLATE_TEST_CASE("to_device and to_host round-trip and copy", "[support]", FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  const std::vector<float> values{1.0f, -2.5f, 3.25f, 0.0f, 7.0f, -1.0f};
  const auto v = foxrl::test::to_device(space, values);
  const auto m = foxrl::test::to_device(space, values, 2, 3);
  const auto hv = foxrl::test::to_host(space, v);
  const auto hm = foxrl::test::to_host(space, m);
  CHECK(allclose(hv, values, 0.0, 0.0));
  CHECK(allclose(hm, values, 0.0, 0.0));
  CHECK(hm(1, 0) == 0.0f);
  // A copy, not a view of the device data, also on host backends.
  Kokkos::deep_copy(space, v, 9.0f);
  foxrl::compat::fence(space, "foxrl::test::fill");
  CHECK(hv(0) == 1.0f);
}
