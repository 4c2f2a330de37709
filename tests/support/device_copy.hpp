#pragma once
// Copies between device Views and the host for tests, on the test's
// instance. Each fences that instance (tests only: never inside a run).

#include "core/compat.hpp"

#include <Kokkos_Core.hpp>

#include <string>
#include <vector>

namespace foxrl::test {

/// A host copy of `v` (a copy also on host backends, so later device writes
/// do not show through it).
template <class ExecSpace, class V>
auto to_host(const ExecSpace& space, const V& v) {
  auto h = Kokkos::create_mirror(v);
  Kokkos::deep_copy(space, h, v);
  compat::fence(space, "foxrl::test::to_host");
  return h;
}

/// A device View holding `values`.
template <class ExecSpace, class T>
Kokkos::View<T*, typename ExecSpace::memory_space> to_device(const ExecSpace& space, const std::vector<T>& values,
                                                             const std::string& label = "foxrl::test::vector") {
  Kokkos::View<T*, typename ExecSpace::memory_space> d(Kokkos::view_alloc(space, Kokkos::WithoutInitializing, label),
                                                       values.size());
  Kokkos::deep_copy(
      space, d,
      Kokkos::View<const T*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(values.data(), values.size()));
  compat::fence(space, "foxrl::test::to_device");
  return d;
}

/// A device View [rows, cols] (LayoutRight) holding `values` row by row.
template <class ExecSpace>
Kokkos::View<float**, Kokkos::LayoutRight, typename ExecSpace::memory_space> to_device(
    const ExecSpace& space, const std::vector<float>& values, int rows, int cols,
    const std::string& label = "foxrl::test::matrix") {
  Kokkos::View<float**, Kokkos::LayoutRight, typename ExecSpace::memory_space> d(
      Kokkos::view_alloc(space, Kokkos::WithoutInitializing, label), rows, cols);
  Kokkos::View<const float**, Kokkos::LayoutRight, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> h(
      values.data(), rows, cols);
  Kokkos::deep_copy(space, d, h);
  compat::fence(space, "foxrl::test::to_device");
  return d;
}

}  // namespace foxrl::test
