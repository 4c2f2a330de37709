# `foxrl infer` on a run whose checkpoint holds a NaN weight refuses with
# exit 2, naming the file and the tensor, instead of printing a trade
# computed from NaN Q-values. Works on a copy of the market run (RUN).
file(REMOVE_RECURSE ${OUT})
file(COPY ${RUN}/ DESTINATION ${OUT})
# The newest checkpoint generation is the one infer reads.
file(GLOB generations ${OUT}/checkpoints/epoch-*)
list(SORT generations)
list(GET generations -1 newest)
execute_process(COMMAND ${SET_ELEMENT} ${newest}/checkpoint.safetensors online.trunk.0.weight 3 nan RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "set_tensor_element: exit ${rc}")
endif()
execute_process(COMMAND ${CLI} infer --run ${OUT} --data ${DATA} RESULT_VARIABLE rc OUTPUT_VARIABLE out
  ERROR_VARIABLE err)
if(NOT rc EQUAL 2)
  message(FATAL_ERROR "foxrl infer on a NaN weight: exit ${rc}, expected 2\nstdout: ${out}\nstderr: ${err}")
endif()
set(expected "${newest}/checkpoint.safetensors': tensor 'online.trunk.0.weight': element [0, 3] is nan: must be finite")
string(FIND "${err}" "${expected}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "foxrl infer on a NaN weight: stderr lacks \"${expected}\":\n${err}")
endif()
if(NOT out STREQUAL "")
  message(FATAL_ERROR "foxrl infer on a NaN weight printed decisions:\n${out}")
endif()
file(REMOVE_RECURSE ${OUT})
message("infer refuses a NaN weight: ok")
