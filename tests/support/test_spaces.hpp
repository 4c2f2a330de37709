#pragma once
// The execution spaces every portable test runs on: all that this Kokkos
// build enables (Cuda and its host backend in a GPU build; Serial on CI).

#include <Kokkos_Core.hpp>

#include <tuple>

namespace foxrl::test {

using EnabledSpaces = decltype(std::tuple_cat(
#ifdef KOKKOS_ENABLE_CUDA
    std::tuple<Kokkos::Cuda>{},
#endif
#ifdef KOKKOS_ENABLE_OPENMP
    std::tuple<Kokkos::OpenMP>{},
#endif
#ifdef KOKKOS_ENABLE_SERIAL
    std::tuple<Kokkos::Serial>{},
#endif
    std::tuple<>{}));

static_assert(std::tuple_size_v<EnabledSpaces> > 0, "no execution space enabled");

}  // namespace foxrl::test

// The same list as a macro for TEMPLATE_TEST_CASE, whose test names then
// carry the backend ("... - Kokkos::Cuda"), which CTest shows.
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
