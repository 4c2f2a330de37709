#pragma once
// The execution spaces every portable test runs on: all that this Kokkos
// build enables (Cuda and its host backend in a GPU build; Serial on CI).
// The one list of backends: FOXRL_TEST_SPACES for TEMPLATE_TEST_CASE,
// whose test names then carry the backend ("... - Kokkos::Cuda", which
// CTest shows), and foxrl::test::EnabledSpaces, the same list as a tuple.

#include <Kokkos_Core.hpp>

#include <tuple>

#if defined(KOKKOS_ENABLE_CUDA) && defined(KOKKOS_ENABLE_OPENMP)
#define FOXRL_TEST_SPACES Kokkos::Cuda, Kokkos::OpenMP, Kokkos::Serial
#elif defined(KOKKOS_ENABLE_CUDA) && defined(KOKKOS_ENABLE_SERIAL)
#define FOXRL_TEST_SPACES Kokkos::Cuda, Kokkos::Serial
#elif defined(KOKKOS_ENABLE_CUDA)
#define FOXRL_TEST_SPACES Kokkos::Cuda
#elif defined(KOKKOS_ENABLE_OPENMP) && defined(KOKKOS_ENABLE_SERIAL)
#define FOXRL_TEST_SPACES Kokkos::OpenMP, Kokkos::Serial
#elif defined(KOKKOS_ENABLE_OPENMP)
#define FOXRL_TEST_SPACES Kokkos::OpenMP
#else
#define FOXRL_TEST_SPACES Kokkos::Serial
#endif

namespace foxrl::test {

using EnabledSpaces = std::tuple<FOXRL_TEST_SPACES>;

}  // namespace foxrl::test
