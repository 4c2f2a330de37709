# Header-only dependencies. Found through their CMake packages where the
# system has them (Debian 12), or as bare headers under CMAKE_PREFIX_PATH
# (machines without a package manager carry the headers along).

include_guard(GLOBAL)

function(foxrl_header_only target package header)
  find_package(${package} QUIET CONFIG)
  add_library(${target} INTERFACE)
  if(${package}_FOUND AND ARGN)
    target_link_libraries(${target} INTERFACE ${ARGN})
    return()
  endif()
  find_path(_foxrl_${target}_dir ${header})
  if(NOT _foxrl_${target}_dir)
    message(FATAL_ERROR "foxrl: ${header} not found: install ${package} "
                        "(Debian: see ci/install-debian-packages.sh) or add its prefix to CMAKE_PREFIX_PATH")
  endif()
  target_include_directories(${target} SYSTEM INTERFACE ${_foxrl_${target}_dir})
endfunction()

foxrl_header_only(foxrl_json nlohmann_json nlohmann/json.hpp nlohmann_json::nlohmann_json)
