# mpi_run(<np> <expect> <regex> <timeout> <command...>): runs the command
# under MPIEXEC (-D) with <np> ranks and fails the test unless it ends
# within <timeout> seconds (a hang is a failure, never a wait), with exit
# code 0 (<expect> "success") or another (<expect> "failure"), and its
# output matches <regex>. Open MPI's mpirun refuses root without
# --allow-run-as-root (CI containers run as root); --oversubscribe lets 2
# ranks start on a 1-core runner. Sets MPI_RUN_OUTPUT in the caller.
function(mpi_run np expect regex timeout)
  set(flags ${MPIEXEC_NUMPROC_FLAG} ${np})
  execute_process(COMMAND ${MPIEXEC} --version OUTPUT_VARIABLE version ERROR_QUIET)
  if(version MATCHES "Open MPI|OpenRTE")
    list(APPEND flags --oversubscribe --bind-to none)
    execute_process(COMMAND id -u OUTPUT_VARIABLE uid OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(uid STREQUAL "0")
      list(APPEND flags --allow-run-as-root)
    endif()
  endif()
  execute_process(COMMAND ${MPIEXEC} ${flags} ${ARGN}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT ${timeout})
  set(all "${out}${err}")
  string(REPLACE ";" " " shown "${ARGN}")
  if(NOT rc MATCHES "^-?[0-9]+$")
    message(FATAL_ERROR "mpirun -np ${np} ${shown}: did not end within ${timeout} s (${rc})\n${all}")
  endif()
  if(expect STREQUAL "success" AND NOT rc EQUAL 0)
    message(FATAL_ERROR "mpirun -np ${np} ${shown}: exit ${rc}, expected 0\n${all}")
  endif()
  if(expect STREQUAL "failure" AND rc EQUAL 0)
    message(FATAL_ERROR "mpirun -np ${np} ${shown}: exit 0, expected an error\n${all}")
  endif()
  if(NOT all MATCHES "${regex}")
    message(FATAL_ERROR "mpirun -np ${np} ${shown}: output does not match '${regex}'\n${all}")
  endif()
  message(STATUS "mpirun -np ${np} ${shown}: exit ${rc} as expected\n${all}")
  set(MPI_RUN_OUTPUT "${all}" PARENT_SCOPE)
  set(MPI_RUN_RC "${rc}" PARENT_SCOPE)
endfunction()

# expect_same_files(<dir a> <dir b> <what> <relative paths...>): fails the
# test naming <what> unless each path holds the same bytes under both.
function(expect_same_files a b what)
  foreach(h ${ARGN})
    execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${a}/${h} ${b}/${h} RESULT_VARIABLE differ)
    if(differ)
      message(FATAL_ERROR "${h} differs between ${what}")
    endif()
  endforeach()
endfunction()
