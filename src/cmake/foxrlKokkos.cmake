# Locates Kokkos and Kokkos Kernels and publishes them as one imported target,
# `foxrl_kokkos`, used both by foxrl's own build and by foxrlConfig.cmake in
# downstream projects (so both see the same fallback logic).
#
# Modern Kokkos (4.x) is found the standard way: find_package(Kokkos) with
# Kokkos_ROOT / CMAKE_PREFIX_PATH.
#
# Fallback, Debian 12: Kokkos 3.4.1 ships inside Trilinos. Its installed
# KokkosConfig.cmake points Kokkos::kokkos at the non-existent /usr/lib/include
# and names the kernels library `trilinos_kokkoskernels`. We keep the versions
# and library names it reports but build the interface target ourselves from
# Kokkos_INCLUDE_DIRS (which is right) and the library targets it defines.

include_guard(GLOBAL)

find_package(Kokkos 3.4 REQUIRED CONFIG)
find_package(KokkosKernels REQUIRED CONFIG)

set(FOXRL_KOKKOS_IS_TRILINOS OFF)
if(TARGET Kokkos::kokkos)
  get_target_property(_foxrl_kokkos_inc Kokkos::kokkos INTERFACE_INCLUDE_DIRECTORIES)
  if(_foxrl_kokkos_inc)
    foreach(_dir IN LISTS _foxrl_kokkos_inc)
      if(NOT _dir MATCHES "^\\$<" AND NOT EXISTS "${_dir}")
        set(FOXRL_KOKKOS_IS_TRILINOS ON)
      endif()
    endforeach()
  endif()
endif()
if(TARGET trilinos_kokkoskernels)
  set(FOXRL_KOKKOS_IS_TRILINOS ON)
endif()

if(NOT TARGET foxrl_kokkos)
  add_library(foxrl_kokkos INTERFACE IMPORTED GLOBAL)
  if(FOXRL_KOKKOS_IS_TRILINOS)
    message(STATUS "foxrl: using the Trilinos-bundled Kokkos ${Kokkos_VERSION} "
                   "(Debian fallback: include ${Kokkos_INCLUDE_DIRS})")
    set_target_properties(foxrl_kokkos PROPERTIES
      INTERFACE_INCLUDE_DIRECTORIES "${Kokkos_INCLUDE_DIRS}"
      INTERFACE_LINK_LIBRARIES "trilinos_kokkoskernels;${Kokkos_LIBRARIES};${CMAKE_DL_LIBS}")
  else()
    set_target_properties(foxrl_kokkos PROPERTIES
      INTERFACE_LINK_LIBRARIES "Kokkos::kokkos;Kokkos::kokkoskernels")
  endif()
endif()

# Backends of this Kokkos, from its config header: works for both kinds of
# install (kokkos_check() does not exist in the Trilinos one).
set(FOXRL_KOKKOS_HAS_CUDA OFF)
if(DEFINED Kokkos_DEVICES)
  if("CUDA" IN_LIST Kokkos_DEVICES)
    set(FOXRL_KOKKOS_HAS_CUDA ON)
  endif()
endif()
if(NOT DEFINED Kokkos_COMPILE_LANGUAGE)
  set(Kokkos_COMPILE_LANGUAGE CXX)
endif()

# Sources that include Kokkos headers must be compiled the way Kokkos was:
# as the CMake CUDA language when Kokkos was built that way; otherwise as
# C++ (with nvcc_wrapper as CMAKE_CXX_COMPILER, which Kokkos' own config
# checks for).
function(foxrl_kokkos_sources)
  if(Kokkos_COMPILE_LANGUAGE STREQUAL "CUDA")
    set_source_files_properties(${ARGN} PROPERTIES LANGUAGE CUDA)
  endif()
endfunction()
