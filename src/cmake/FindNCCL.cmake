# FindNCCL: NVIDIA's collective communications library, for the GPU
# all-reduce of data-parallel training (src/dist/nccl_all_reduce.cpp).
#
# NCCL installs no CMake package of its own in most places: system packages
# (libnccl-dev) put nccl.h and libnccl.so under the usual prefixes, cluster
# modules set NCCL_ROOT or NCCL_HOME, and the Python wheel (nvidia-nccl-cu*)
# ships include/nccl.h and lib/libnccl.so.2 without the unversioned link.
# Hints, in this order: NCCL_ROOT (CMake or environment), NCCL_HOME,
# CUDA_HOME, CMAKE_PREFIX_PATH and the system prefixes.
#
# Defines NCCL_FOUND, NCCL_INCLUDE_DIR, NCCL_LIBRARY, NCCL_VERSION and the
# imported target NCCL::NCCL.

set(_foxrl_nccl_hints ${NCCL_ROOT} $ENV{NCCL_ROOT} $ENV{NCCL_HOME} $ENV{CUDA_HOME})
find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${_foxrl_nccl_hints} PATH_SUFFIXES include)
find_library(NCCL_LIBRARY NAMES nccl libnccl.so.2 HINTS ${_foxrl_nccl_hints} PATH_SUFFIXES lib lib64)

if(NCCL_INCLUDE_DIR AND EXISTS "${NCCL_INCLUDE_DIR}/nccl.h")
  file(STRINGS "${NCCL_INCLUDE_DIR}/nccl.h" _foxrl_nccl_defines REGEX "^#define NCCL_(MAJOR|MINOR|PATCH) ")
  foreach(part MAJOR MINOR PATCH)
    string(REGEX MATCH "NCCL_${part} +([0-9]+)" _match "${_foxrl_nccl_defines}")
    set(_foxrl_nccl_${part} "${CMAKE_MATCH_1}")
  endforeach()
  set(NCCL_VERSION "${_foxrl_nccl_MAJOR}.${_foxrl_nccl_MINOR}.${_foxrl_nccl_PATCH}")
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(NCCL REQUIRED_VARS NCCL_LIBRARY NCCL_INCLUDE_DIR VERSION_VAR NCCL_VERSION)

if(NCCL_FOUND AND NOT TARGET NCCL::NCCL)
  add_library(NCCL::NCCL UNKNOWN IMPORTED)
  set_target_properties(NCCL::NCCL PROPERTIES
    IMPORTED_LOCATION "${NCCL_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${NCCL_INCLUDE_DIR}")
endif()
mark_as_advanced(NCCL_INCLUDE_DIR NCCL_LIBRARY)
