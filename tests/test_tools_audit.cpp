// The audit must catch what the one-stream rule forbids; these are its
// negative tests (a default-instance launch, a global fence, an unlabelled
// allocation) and one positive test.
#include "core/compat.hpp"
#include "core/execution_context.hpp"
#include "core/kokkos_tools_audit.hpp"
#include "support/test_spaces.hpp"

#include <catch2/catch.hpp>

namespace {

template <class Exec>
bool default_instance_is_distinguishable(const foxrl::ExecutionContext<Exec>& context) {
  return foxrl::tools_device_id(context.space()) != foxrl::tools_device_id(Exec());
}

}  // namespace

TEMPLATE_TEST_CASE("audit flags a launch on the default instance", "[audit]", FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context;
  if (!default_instance_is_distinguishable(context)) {
    WARN("Kokkos " << KOKKOS_VERSION << " gives every " << Exec::name()
                   << " instance the same id: default-instance launches cannot be told apart here");
    return;
  }
  Kokkos::View<int*, typename Exec::memory_space> values(Kokkos::view_alloc(context.space(), "foxrl::test::values"),
                                                         16);
  context.fence("test::setup");
  const auto record = foxrl::audit([&] {
    // Deliberately on the default instance.
    Kokkos::parallel_for(
        "foxrl::test::on_default_instance", Kokkos::RangePolicy<Exec>(0, 16), KOKKOS_LAMBDA(int i) { values(i) = i; });
    Exec().fence();
  });
  const auto off = record.launches_off(foxrl::tools_device_id(context.space()));
  REQUIRE(off.size() == 1);
  CHECK_THAT(off.front(), Catch::Contains("foxrl::test::on_default_instance"));
}

TEMPLATE_TEST_CASE("audit flags a global fence", "[audit]", FOXRL_TEST_SPACES) {
  using Exec = TestType;
  if (!foxrl::compat::fences_are_observable) {
    WARN("Kokkos " << KOKKOS_VERSION << " does not report fences to Kokkos Tools");
    return;
  }
  foxrl::ExecutionContext<Exec> context;
  const auto record = foxrl::audit([&] { Kokkos::fence(); });
  const auto off = record.fences_off(foxrl::tools_device_id(context.space()));
  CHECK(!off.empty());
}

TEMPLATE_TEST_CASE("audit accepts labelled fences of the run's instance", "[audit]", FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context;
  const auto record = foxrl::audit([&] { context.fence("test::instance_fence"); });
  CHECK(record.fences_off(foxrl::tools_device_id(context.space())).empty());
  if (foxrl::compat::fences_are_observable) {
    REQUIRE(record.fences.size() == 1);
    CHECK(record.fences.front().name == "foxrl::test::instance_fence");
  }
}

TEMPLATE_TEST_CASE("audit flags unprefixed allocations and kernel labels", "[audit]", FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context;
  const auto record = foxrl::audit([&] {
    Kokkos::View<float*, typename Exec::memory_space> good(Kokkos::view_alloc(context.space(), "foxrl::test::good"), 8);
    Kokkos::View<float*, typename Exec::memory_space> bad(Kokkos::view_alloc(context.space(), "unlabelled"), 8);
    Kokkos::parallel_for(
        "no_prefix", Kokkos::RangePolicy<Exec>(context.space(), 0, 8), KOKKOS_LAMBDA(int i) { good(i) = bad(i); });
    context.fence("test::done");
  });
  const auto allocations = record.allocations_without_prefix("foxrl::");
  REQUIRE(allocations.size() == 1);
  CHECK_THAT(allocations.front(), Catch::Contains("unlabelled"));
  const auto launches = record.launches_without_prefix("foxrl::");
  // "no_prefix" and the initialisation of the View labelled "unlabelled".
  REQUIRE(launches.size() == 2);
  CHECK_THAT(launches.front() + launches.back(), Catch::Contains("no_prefix"));
}

TEMPLATE_TEST_CASE("audit records a deep copy with its Views' labels and bytes", "[audit]", FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context;
  using Mem = typename Exec::memory_space;
  Kokkos::View<float**, Kokkos::LayoutRight, Mem> from(Kokkos::view_alloc(context.space(), "foxrl::test::from"), 8, 3);
  Kokkos::View<float**, Kokkos::LayoutRight, Mem> to(Kokkos::view_alloc(context.space(), "foxrl::test::to"), 8, 3);
  context.fence("test::setup");
  const auto record = foxrl::audit([&] { Kokkos::deep_copy(context.space(), to, from); });
  REQUIRE(record.copies.size() == 1);
  CHECK(record.copies.front().dst_label == "foxrl::test::to");
  CHECK(record.copies.front().src_label == "foxrl::test::from");
  CHECK(record.copies.front().bytes == 8 * 3 * sizeof(float));
  CHECK(record.launches.empty());
}

TEST_CASE("only one audit can be active", "[audit]") {
  foxrl::KokkosToolsAudit first;
  CHECK_THROWS_AS(foxrl::KokkosToolsAudit(), foxrl::Error);
}
