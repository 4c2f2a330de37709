# foxrl train --resume end to end: a 2-epoch CartPole run against 1 epoch,
# then --resume to 2 epochs, in another directory. The learner checkpoint
# and the trainer state must be the same bytes, and metrics.jsonl the same
# records but for the wall-clock fields.
set(common train --set env=cartpole --set num_envs=4 --set hidden=32 --set batch_size=32
    --set buffer_capacity=256 --set learning_starts=64 --set iterations_per_epoch=40 --set seed=3)
file(REMOVE_RECURSE ${OUT}/whole ${OUT}/split)
# One run id for both runs: it is in every checkpoint file.
set(ENV{FOXRL_RUN_ID} check-resume)

function(run)
  execute_process(COMMAND ${CLI} ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "foxrl ${ARGN}: exit ${rc}: ${out}${err}")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
endfunction()

run(${common} --set epochs=2 --set out_dir=${OUT}/whole)
run(${common} --set epochs=1 --set out_dir=${OUT}/split)
# The saved config is the base: only epochs is given again.
run(train --resume --set out_dir=${OUT}/split --set epochs=2)
if(NOT last_output MATCHES "resumed from the checkpoint of epoch 1")
  message(FATAL_ERROR "no resume line in: ${last_output}")
endif()

foreach(f checkpoint.safetensors trainer_state.safetensors)
  set(g checkpoints/epoch-00000002/${f})
  execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${OUT}/whole/${g} ${OUT}/split/${g} RESULT_VARIABLE differ)
  if(differ)
    message(FATAL_ERROR "${f} differs between the uninterrupted and the resumed run")
  endif()
endforeach()

function(records dir var)
  file(READ ${dir}/metrics.jsonl text)
  string(REGEX REPLACE "\"(seconds|env_steps_per_s|updates_per_s)\":[^,}]*,?" "" text "${text}")
  set(${var} "${text}" PARENT_SCOPE)
endfunction()
records(${OUT}/whole whole)
records(${OUT}/split split)
if(NOT whole STREQUAL split)
  message(FATAL_ERROR "metrics differ:\n${whole}\nvs\n${split}")
endif()

# A changed key is refused with its name (exit 2).
execute_process(COMMAND ${CLI} train --resume --set out_dir=${OUT}/split --set gamma=0.9
  RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
if(NOT rc EQUAL 2 OR NOT err MATCHES "'gamma'")
  message(FATAL_ERROR "resume with another gamma: exit ${rc}: ${err}")
endif()
message("resume: bit-exact")
