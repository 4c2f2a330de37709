#include "core/execution_context.hpp"
#include "core/kokkos_tools_audit.hpp"
#include "support/test_spaces.hpp"

#include <catch2/catch.hpp>

#include <string>

TEMPLATE_TEST_CASE("ExecutionContext runs labelled kernels on its own instance", "[context]", FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context(42);
  CHECK(context.seed() == 42);
  CHECK(context.backend_name() == std::string(Exec::name()));

  long sum = 0;
  // Declared outside the audited region: Kokkos 4 fences globally when it
  // frees host memory, which a run never does inside an iteration.
  Kokkos::View<long*, typename Exec::memory_space> values;
  const auto record = foxrl::audit([&] {
    values = Kokkos::View<long*, typename Exec::memory_space>(
        Kokkos::view_alloc(context.space(), Kokkos::WithoutInitializing, "foxrl::test::values"), 1000);
    Kokkos::parallel_for(
        "foxrl::test::fill", Kokkos::RangePolicy<Exec>(context.space(), 0, 1000),
        KOKKOS_LAMBDA(int i) { values(i) = i; });
    Kokkos::parallel_reduce(
        "foxrl::test::sum", Kokkos::RangePolicy<Exec>(context.space(), 0, 1000),
        KOKKOS_LAMBDA(int i, long& acc) { acc += values(i); }, sum);
    context.fence("test::done");
  });
  CHECK(sum == 999L * 1000L / 2);
  const auto violations = record.violations(foxrl::tools_device_id(context.space()));
  INFO("violations: " << violations.size() << (violations.empty() ? "" : ", first: " + violations.front()));
  CHECK(violations.empty());
  CHECK(record.launches.size() >= 2);
}

#ifdef KOKKOS_ENABLE_CUDA
TEST_CASE("ExecutionContext on CUDA wraps a stream of its own", "[context][cuda]") {
  foxrl::ExecutionContext<Kokkos::Cuda> context;
  const cudaStream_t stream = context.stream();
  CHECK(stream != nullptr);  // not the legacy default stream
  unsigned int flags = 0;
  REQUIRE(cudaStreamGetFlags(stream, &flags) == cudaSuccess);
  CHECK((flags & cudaStreamNonBlocking) != 0);
  CHECK(foxrl::tools_device_id(context.space()) != foxrl::tools_device_id(Kokkos::Cuda()));
}
#endif
