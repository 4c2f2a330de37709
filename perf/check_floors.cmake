# perf/floors.py against closed forms worked out by hand, and its errors.
# market-throughput, 65-512-512 trunk and a dueling head of 1 + 3 outputs:
# W = 65*512 + 512*512 + 512*4 = 297,472 multiply-adds per row;
# collector 2 * 4096 * W = 2,436.9 MFLOP; update 4 passes of 2 * 1024 * W
# (online at s and s', target at s', dW) plus dX without the first layer,
# 2 * 1024 * (W - 65*512): 2,978.0 MFLOP; at 67 TFLOP/s 80.82 us.
# cartpole-learn, 4-120-84 and 1 + 2 outputs: W = 480 + 10,080 + 252 =
# 10,812; update 4 * 2 * 128 * W + 2 * 128 * 10,332 = 13.7 MFLOP.
#   cmake -DPYTHON=python3 -DFLOORS=perf/floors.py -DOUT=dir -P check_floors.cmake
file(REMOVE_RECURSE ${OUT})
file(MAKE_DIRECTORY ${OUT})
execute_process(COMMAND ${PYTHON} ${FLOORS} --markdown RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "floors.py --markdown: exit ${rc}\n${out}${err}")
endif()
foreach(expected "| market-throughput | 65-512-512-dueling(3) | 4096 | 1024 | 2436.9 | 2978.0 |"
                 "| cartpole-learn | 4-120-84-dueling(2) | 8 | 128 | 0.2 | 13.7 |" "| market-throughput | 5.14 | 80.82 |")
  string(FIND "${out}" "${expected}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "floors.py --markdown lacks \"${expected}\":\n${out}")
  endif()
endforeach()
# Errors name the file and the key.
file(WRITE ${OUT}/bad_hidden.json "{\"env\": \"cartpole\", \"hidden\": [64, \"wide\"]}\n")
file(WRITE ${OUT}/bad_json.json "{\"env\": \"cartpole\",\n \"hidden\": [64,]}\n")
foreach(case "bad_hidden.json: \"hidden\" must be a list of positive integers"
             "bad_json.json:2:")
  string(REGEX MATCH "^[a-z_]+\\.json" file "${case}")
  execute_process(COMMAND ${PYTHON} ${FLOORS} ${OUT}/${file} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  string(FIND "${err}" "${OUT}/${case}" at)
  if(NOT rc EQUAL 2 OR at EQUAL -1)
    message(FATAL_ERROR "floors.py ${file}: exit ${rc} (expected 2), message lacks \"${OUT}/${case}\":\n${out}${err}")
  endif()
endforeach()
message("floors.py: ok")
