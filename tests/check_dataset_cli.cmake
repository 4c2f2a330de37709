# `foxrl dataset info` on a dataset of `foxrl collect`: the table and the
# JSON report its sizes, env, flag counts, episode returns and actions; a
# dataset with one bad value, a missing file or no subcommand exit 2 with a
# message naming the file and field. -DCLI, -DSET_ELEMENT (the
# set_tensor_element tool), -DWORK (scratch), optionally -DMARKET_RUN (a run
# directory of the market env: its epsilon-greedy dataset's episodes must
# be followed through the rows too).
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})

function(run_ok out_var)
  execute_process(COMMAND ${CLI} ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "foxrl ${ARGN}: exit ${rc}\n${out}${err}")
  endif()
  set(${out_var} "${out}" PARENT_SCOPE)
endfunction()

function(expect_match text pattern what)
  if(NOT text MATCHES "${pattern}")
    message(FATAL_ERROR "${what}: no match for '${pattern}' in:\n${text}")
  endif()
endfunction()

function(expect_error code pattern)
  execute_process(COMMAND ${CLI} ${ARGN} RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
  if(NOT rc EQUAL code)
    message(FATAL_ERROR "foxrl ${ARGN}: exit ${rc}, expected ${code}: ${err}")
  endif()
  expect_match("${err}" "${pattern}" "foxrl ${ARGN}")
endfunction()

# CartPole, 4 envs x 250 steps: random episodes last about 22 steps, so
# each env completes several.
set(data ${WORK}/cartpole.safetensors)
run_ok(collected collect --set env=cartpole --set num_envs=4 --set seed=3 --steps 1000 --out ${data})
run_ok(table dataset info ${data})
foreach(line "dataset: +[^\n]*cartpole.safetensors \\(checksums verified\\)\n"
             "env: +cartpole, 4 envs side by side\n" "policy: +random, seed 3\n" "transitions: +1000\n"
             "observation dim: +4\n" "actions: +2\n" "terminated: +[1-9][0-9]* \\([0-9.]+%\\)\n"
             "truncated: +0 \\(0.0%\\)\n" "episodes: +[1-9][0-9]* complete, [0-4] unfinished"
             "episode return: +mean [0-9.]+, std [0-9.]+, min [0-9]+, max [0-9]+\n"
             "action histogram:\n  0: [0-9]+ \\([0-9.]+%\\) #+\n  1: [0-9]+ \\([0-9.]+%\\) #+\n$")
  expect_match("${table}" "${line}" "dataset info")
endforeach()
run_ok(json dataset info --json ${data})
expect_match("${json}" "\"transitions\": 1000,.*\"num_envs\": 4,.*\"exact\": true,.*\"action_counts\": \\[" "--json")

# One NaN reward: refused naming the file, the tensor and the element.
file(COPY_FILE ${data} ${WORK}/nan.safetensors)
execute_process(COMMAND ${SET_ELEMENT} ${WORK}/nan.safetensors rewards 5 nan RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "set_tensor_element failed: ${rc}")
endif()
expect_error(2 "^foxrl: dataset '[^']*/nan.safetensors': tensor 'rewards': element \\[5\\] is nan: rewards must be finite\n$"
             dataset info ${WORK}/nan.safetensors)
expect_error(2 "^foxrl: safetensors file '[^']*/absent.safetensors': cannot open" dataset info ${WORK}/absent.safetensors)
expect_error(2 "info" dataset)

if(MARKET_RUN)
  set(market ${WORK}/market.safetensors)
  run_ok(collected collect --run ${MARKET_RUN} --policy epsilon-greedy --epsilon 0.2 --steps 2000 --out ${market})
  run_ok(table dataset info ${market})
  foreach(line "env: +market, split train" "policy: +epsilon-greedy, epsilon 0.2" "normaliser statistics included"
               "episode return: +mean -?[0-9.e-]+, std" "  0 short: " "  1 flat: " "  2 long: ")
    expect_match("${table}" "${line}" "dataset info (market)")
  endforeach()
endif()
message("dataset cli: ok")
