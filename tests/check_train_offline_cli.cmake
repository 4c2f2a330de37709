# `foxrl train-offline` from the command line: a run on a collected
# CartPole dataset writes its directory and resumes; a run on a market
# dataset ends with the evaluation table and files of `foxrl train`, and
# `foxrl eval --run` reproduces its evaluation.json; --help-config lists
# the keys; a missing dataset, an unknown key and a bad algo exit 2 with a
# message naming them. -DCLI, -DWORK (scratch).
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
  execute_process(COMMAND ${CLI} ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL code)
    message(FATAL_ERROR "foxrl ${ARGN}: exit ${rc}, expected ${code}: ${out}${err}")
  endif()
  expect_match("${err}" "${pattern}" "foxrl ${ARGN}")
endfunction()

set(data ${WORK}/cartpole.safetensors)
run_ok(collected collect --set env=cartpole --set num_envs=4 --set seed=3 --steps 800 --out ${data})
set(small --set hidden=16,8 --set batch_size=32 --set updates_per_epoch=10 --set eval_episodes=3)
run_ok(out train-offline --dataset ${data} --algo iql ${small} --set epochs=1 --set out_dir=${WORK}/run)
expect_match("${out}" "train-offline: iql on [^\n]*800 transitions of cartpole" "first line")
expect_match("${out}" "Epoch 1 complete in [0-9.]+ s: 10 updates" "epoch line")
expect_match("${out}" "greedy evaluation: return [0-9.]+ \\+- [0-9.]+ \\(min [0-9]+, max [0-9]+\\) over 3 episodes"
             "evaluation line")
foreach(f train.log metrics.jsonl config.json evaluation_episodes.json learning_curve_return.svg
          checkpoints/epoch-00000001/learner.safetensors checkpoints/epoch-00000001/offline_checkpoint.json)
  if(NOT EXISTS ${WORK}/run/${f})
    message(FATAL_ERROR "train-offline did not write ${f}")
  endif()
endforeach()
# Resume with only --set (the saved config, epochs grown).
run_ok(out train-offline --resume --set out_dir=${WORK}/run --set epochs=2)
expect_match("${out}" "resumed from the checkpoint of epoch 1 \\(10 updates\\)" "resume line")
expect_match("${out}" "Epoch 2 complete in [0-9.]+ s: 20 updates" "resumed epoch line")

# eval --run on an offline CartPole run: greedy episodes, like a DQN run's.
run_ok(out eval --run ${WORK}/run --episodes 3)
expect_match("${out}" "greedy policy, 3 episodes: return" "offline eval (cartpole)")
if(NOT EXISTS ${WORK}/run/evaluation_episodes_epoch-2.json)
  message(FATAL_ERROR "eval --run (offline cartpole) did not write evaluation_episodes_epoch-2.json")
endif()
expect_error(2 "--data: the run .* trained on cartpole" eval --run ${WORK}/run --data ${WORK}/absent.csv)

# A market dataset: the run ends with the test split's table and files.
set(market ${WORK}/market.safetensors)
run_ok(collected collect --set env=market --set synthetic_bars=2000 --set window=16 --set episode_length=30
       --set num_envs=4 --set seed=3 --steps 800 --out ${market})
run_ok(out train-offline --dataset ${market} --algo bc ${small} --set epochs=1 --set out_dir=${WORK}/market-run)
expect_match("${out}" "Evaluation on [^\n]* bars, cost 5 bp" "market table")
foreach(row "agent \\(greedy BC\\)" "buy and hold" "always flat" "random, same trades" "MA crossover 20/100")
  expect_match("${out}" "\n${row} +-?[0-9]" "market table row")
endforeach()
foreach(f evaluation.json evaluation_backtest.csv equity.svg)
  if(NOT EXISTS ${WORK}/market-run/${f})
    message(FATAL_ERROR "train-offline (market) did not write ${f}")
  endif()
endforeach()
# eval --run: the same policy on the same split, the same record.
run_ok(out eval --run ${WORK}/market-run)
expect_match("${out}" "agent \\(greedy BC\\)" "offline eval (market)")
file(READ ${WORK}/market-run/evaluation.json trained)
file(READ ${WORK}/market-run/evaluation_test_epoch-1.json evaluated)
if(NOT trained STREQUAL evaluated)
  message(FATAL_ERROR "eval --run of the offline market run differs from its evaluation.json")
endif()

run_ok(help train-offline --help-config)
expect_match("${help}" "expectile = 0.7" "--help-config")
expect_match("${help}" "cql_alpha = 1" "--help-config")
expect_error(2 "'dataset'.*--dataset" train-offline --set out_dir=${WORK}/none)
expect_error(2 "absent.safetensors" train-offline --dataset ${WORK}/absent.safetensors --set out_dir=${WORK}/none2)
expect_error(2 "'expectil'.*unknown key" train-offline --dataset ${data} --set expectil=0.9)
expect_error(2 "already holds a run" train-offline --dataset ${data} ${small} --set out_dir=${WORK}/run)
expect_error(2 "algo 'dqn': not a registered offline algorithm" train-offline --dataset ${data} --algo dqn)
message(STATUS "train-offline cli: ok")
