// kernels::call_once runs a callable exactly once per call, as one launch
// with the caller's label on the caller's instance and no fence; and
// kernels::AddToCounters (the iteration clock's advance) adds first and
// then calls what rides along, which therefore sees the new counts.
#include "core/compat.hpp"
#include "core/execution_context.hpp"
#include "core/kokkos_tools_audit.hpp"
#include "kernels/core/add_to_counters.hpp"
#include "kernels/core/call_once.hpp"
#include "support/test_spaces.hpp"

#include <catch2/catch.hpp>

#include <cstdint>

namespace {

/// Adds `by` to a counter (a plain add, not an atomic one: a second thread
/// calling it would lose or double counts, which the test would see).
template <class MemorySpace>
struct AddTo {
  Kokkos::View<std::int64_t, MemorySpace> counter;
  std::int64_t by = 1;
  KOKKOS_INLINE_FUNCTION void operator()() const { counter() += by; }
};

/// Records the counters as `also` finds them.
template <class MemorySpace>
struct Snapshot {
  Kokkos::View<std::int64_t*, MemorySpace> counters, seen;
  KOKKOS_INLINE_FUNCTION void operator()() const {
    for (int s = 0; s < static_cast<int>(counters.extent(0)); ++s) seen(s) = counters(s);
  }
};

}  // namespace

TEMPLATE_TEST_CASE("call_once calls once per call, one labelled launch on the caller's instance",
                   "[kernels][call_once]", FOXRL_TEST_SPACES) {
  using Exec = TestType;
  using Mem = typename Exec::memory_space;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  Kokkos::View<std::int64_t, Mem> counter(Kokkos::view_alloc(space, "foxrl::test::counter"));
  const AddTo<Mem> add{counter, 5};

  const auto record = foxrl::audit([&] {
    for (int i = 0; i < 3; ++i) foxrl::kernels::call_once(space, "foxrl::test::add_once", add);
  });
  auto host = Kokkos::create_mirror_view(counter);
  Kokkos::deep_copy(space, host, counter);
  foxrl::compat::fence(space, "foxrl::test::call_once");
  CHECK(host() == 15);

  REQUIRE(record.launches.size() == 3);
  for (const auto& launch : record.launches) {
    CHECK(launch.name == "foxrl::test::add_once");
    CHECK(launch.kind == foxrl::AuditRecord::LaunchKind::parallel_for);
  }
  CHECK(record.violations(foxrl::tools_device_id(space)).empty());
  CHECK(record.fences.empty());
}

TEMPLATE_TEST_CASE("AddToCounters adds every amount, then calls what rides along", "[kernels][call_once]",
                   FOXRL_TEST_SPACES) {
  using Exec = TestType;
  using Mem = typename Exec::memory_space;
  constexpr int count = 5;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  Kokkos::View<std::int64_t*, Mem> counters(Kokkos::view_alloc(space, "foxrl::test::counters"), count);
  Kokkos::View<std::int64_t*, Mem> seen(Kokkos::view_alloc(space, "foxrl::test::seen"), count);
  auto start = Kokkos::create_mirror_view(counters);
  const std::int64_t initial[count] = {7, -3, 0, 1LL << 40, 11};
  const std::int64_t add[count] = {1, 4096, 0, 3, -11};
  for (int s = 0; s < count; ++s) start(s) = initial[s];
  Kokkos::deep_copy(space, counters, start);

  foxrl::kernels::AddToCounters<Mem, count, Snapshot<Mem>> advance{counters, {}, Snapshot<Mem>{counters, seen}};
  for (int s = 0; s < count; ++s) advance.add[s] = add[s];
  foxrl::kernels::call_once(space, "foxrl::test::advance", advance);
  foxrl::kernels::call_once(space, "foxrl::test::advance", advance);

  auto after = Kokkos::create_mirror_view(counters);
  auto snapshot = Kokkos::create_mirror_view(seen);
  Kokkos::deep_copy(space, after, counters);
  Kokkos::deep_copy(space, snapshot, seen);
  foxrl::compat::fence(space, "foxrl::test::add_to_counters");
  for (int s = 0; s < count; ++s) {
    INFO("slot " << s);
    CHECK(after(s) == initial[s] + 2 * add[s]);
    CHECK(snapshot(s) == after(s));  // `also` ran after the second add
  }
}
