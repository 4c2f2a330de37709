# Installs the build tree into a scratch prefix, then configures, builds and
# runs a downstream project against it. Run by CTest as `install_test`.
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message("${out}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "install test: '${ARGN}' failed (${rc}):\n${err}")
  endif()
endfunction()

string(REPLACE "|" ";" cache_args "${CACHE_ARGS}")
set(args)
foreach(a IN LISTS cache_args)
  if(NOT a MATCHES "=$")  # drop empty settings
    list(APPEND args "${a}")
  endif()
endforeach()
file(REMOVE_RECURSE "${FOXRL_PREFIX}" "${DOWNSTREAM_BINARY}")
run(${CMAKE_COMMAND} --install "${FOXRL_BUILD_DIR}" --prefix "${FOXRL_PREFIX}")
# The search path goes through the environment: a list inside one
# command-line argument would be split by execute_process.
string(REPLACE "|" ":" deps_path "${DEPS_PREFIX_PATH}")
set(ENV{CMAKE_PREFIX_PATH} "${FOXRL_PREFIX}:${deps_path}:$ENV{CMAKE_PREFIX_PATH}")
run(${CMAKE_COMMAND} -S "${DOWNSTREAM_SOURCE}" -B "${DOWNSTREAM_BINARY}" -G "${GENERATOR}" ${args})
run(${CMAKE_COMMAND} --build "${DOWNSTREAM_BINARY}")
run("${DOWNSTREAM_BINARY}/foxrl_downstream")
