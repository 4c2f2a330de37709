// KernelCheck (FOXRL_CHECK_KERNELS=1) records the label of every kernel as
// it launches, so a device error can name its kernel; it checks after each
// one (a device synchronisation in CUDA builds) and comes off again.
#include "core/compat.hpp"
#include "core/execution_context.hpp"
#include "core/kernel_check.hpp"

#include <catch2/catch.hpp>

#include <Kokkos_Core.hpp>

TEST_CASE("the kernel check names the last kernel launched", "[kernel_check]") {
  foxrl::ExecutionContext<> context(1);
  const auto& space = context.space();
  Kokkos::View<int*, Kokkos::DefaultExecutionSpace::memory_space> v(
      Kokkos::view_alloc(space, "foxrl::test::kernel_check"), 8);
  foxrl::KernelCheck::install();
  CHECK(foxrl::KernelCheck::installed());
  Kokkos::parallel_for(
      "foxrl::test::first", Kokkos::RangePolicy<Kokkos::DefaultExecutionSpace>(space, 0, 8),
      KOKKOS_LAMBDA(const int i) { v(i) = i; });
  CHECK(foxrl::KernelCheck::last_kernel() == "foxrl::test::first");
  int sum = 0;
  Kokkos::parallel_reduce(
      "foxrl::test::second", Kokkos::RangePolicy<Kokkos::DefaultExecutionSpace>(space, 0, 8),
      KOKKOS_LAMBDA(const int i, int& s) { s += v(i); }, sum);
  CHECK(sum == 28);
  CHECK(foxrl::KernelCheck::last_kernel() == "foxrl::test::second");
  foxrl::KernelCheck::uninstall();
  CHECK_FALSE(foxrl::KernelCheck::installed());
  Kokkos::parallel_for(
      "foxrl::test::unchecked", Kokkos::RangePolicy<Kokkos::DefaultExecutionSpace>(space, 0, 8),
      KOKKOS_LAMBDA(const int i) { v(i) = 0; });
  CHECK(foxrl::KernelCheck::last_kernel() == "foxrl::test::second");  // no longer recorded
  foxrl::compat::fence(space, "foxrl::test::kernel_check");
}
