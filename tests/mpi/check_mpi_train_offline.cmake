# `mpirun -np 2 foxrl train-offline` end to end (IQL on a small CartPole
# dataset, seconds): rank 0 alone logs and writes the run directory, the
# manifest records 2 ranks, the log names the gradient transport; a one-rank
# resume is refused naming the count; a 2-rank resume gives the
# uninterrupted 2-rank run's bytes; one rank under mpirun is the plain
# single-process run, byte for byte.
include(${CMAKE_CURRENT_LIST_DIR}/mpirun.cmake)
file(REMOVE_RECURSE ${OUT})
file(MAKE_DIRECTORY ${OUT})
set(ENV{FOXRL_RUN_ID} check-mpi-train-offline)  # in every checkpoint file: the same for the runs compared
set(dataset ${OUT}/cartpole.safetensors)
execute_process(COMMAND ${CLI} collect --set env=cartpole --set num_envs=4 --set seed=3 --steps 2000 --out ${dataset}
  RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err TIMEOUT 60)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "collect: exit ${rc}: ${err}")
endif()
set(common ${CLI} train-offline --set algo=iql --set dataset=${dataset} --set hidden=16,16 --set batch_size=32
    --set updates_per_epoch=40 --set eval_episodes=4 --set seed=5)

mpi_run(2 success "2 ranks \\(MPI\\).*gradient mean over the ranks: MPI on host buffers.*Epoch 3 complete" 120
  ${common} --set epochs=3 --set out_dir=${OUT}/whole)
string(REGEX MATCHALL "Epoch 3 complete" said "${MPI_RUN_OUTPUT}")
list(LENGTH said times)
if(NOT times EQUAL 1)
  message(FATAL_ERROR "the epoch line was printed ${times} times, expected once (rank 0)")
endif()
set(g ${OUT}/whole/checkpoints/epoch-00000003)
file(READ ${g}/offline_checkpoint.json manifest)
if(NOT manifest MATCHES "\"ranks\": 2")
  message(FATAL_ERROR "${g}/offline_checkpoint.json does not record 2 ranks:\n${manifest}")
endif()

mpi_run(2 success "Epoch 2 complete" 120 ${common} --set epochs=2 --set out_dir=${OUT}/split)
execute_process(COMMAND ${CLI} train-offline --resume --set out_dir=${OUT}/split --set epochs=3
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 60)
if(NOT rc EQUAL 2 OR NOT err MATCHES "written by a run of 2 ranks, this run has 1.*mpirun -np 2")
  message(FATAL_ERROR "one-rank resume of a 2-rank run: exit ${rc}: ${out}${err}")
endif()
mpi_run(2 success "resumed from the checkpoint of epoch 2.*Epoch 3 complete" 120
  ${CLI} train-offline --resume --set out_dir=${OUT}/split --set epochs=3)
set(g checkpoints/epoch-00000003)
expect_same_files(${OUT}/whole ${OUT}/split "the uninterrupted and the resumed 2-rank run"
  ${g}/learner.safetensors ${g}/guard.safetensors)

# One rank: no gradient hook, no collectives: the single-process bytes.
execute_process(COMMAND ${common} --set epochs=2 --set out_dir=${OUT}/plain RESULT_VARIABLE rc OUTPUT_QUIET
  ERROR_VARIABLE err TIMEOUT 60)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "single-process run: exit ${rc}: ${err}")
endif()
mpi_run(1 success "Epoch 2 complete" 60 ${common} --set epochs=2 --set out_dir=${OUT}/one)
# (offline_checkpoint.json names out_dir, which differs between the two.)
set(g checkpoints/epoch-00000002)
expect_same_files(${OUT}/plain ${OUT}/one "the single-process run and mpirun -np 1"
  ${g}/learner.safetensors ${g}/guard.safetensors)

message("mpirun -np 2 foxrl train-offline: rank 0 writes, resume bit-exact, rank count checked")
