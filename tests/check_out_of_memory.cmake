# A run whose replay buffer cannot be allocated stops with exit 1 and a
# message that says what the config asks for and what the memory has,
# instead of Kokkos' bare allocation error. The buffer asked for (2^30
# transitions of 65 floats, 260 GiB) must fail to allocate: skipped where
# the kernel grants any allocation (overcommit_memory 1) or the machine
# could hold it.
file(READ /proc/sys/vm/overcommit_memory overcommit)
file(STRINGS /proc/meminfo memtotal REGEX "^MemTotal:")
string(REGEX MATCH "[0-9]+" kib "${memtotal}")
if(overcommit MATCHES "1" OR kib GREATER 200000000)
  message("out-of-memory message: skipped (overcommit_memory ${overcommit}, MemTotal ${kib} kB)")
  return()
endif()
file(REMOVE_RECURSE ${OUT})
execute_process(COMMAND ${CLI} train --set buffer_capacity=1073741824 --set out_dir=${OUT}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 1)
  message(FATAL_ERROR "a replay buffer too large to allocate: exit ${rc}, expected 1\n${out}${err}")
endif()
foreach(expected "setting up the run failed" "foxrl::Replay" "needs at least 260 GiB"
                 "buffer_capacity 1073741824 x 65 features" "free of" "lower buffer_capacity")
  string(FIND "${err}" "${expected}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "the out-of-memory message lacks \"${expected}\":\n${err}")
  endif()
endforeach()
if(err MATCHES "Traceback")
  message(FATAL_ERROR "the out-of-memory message carries Kokkos' traceback note:\n${err}")
endif()
file(REMOVE_RECURSE ${OUT})
message("out-of-memory message: ok")
