# `mpirun -np 2 foxrl train` end to end (CartPole, seconds): rank 0 alone
# logs and writes the run directory, each rank checkpoints its trainer
# state, the manifest records 2 ranks; a one-rank resume is refused naming
# the count; a 2-rank resume gives the uninterrupted 2-rank run's bytes;
# rank 0 failing while rank 1 trains ends both with rank 0's exit code; one
# rank under mpirun is the plain single-process run, byte for byte.
include(${CMAKE_CURRENT_LIST_DIR}/mpirun.cmake)
set(common ${CLI} train --set env=cartpole --set num_envs=4 --set hidden=16 --set batch_size=16
    --set buffer_capacity=256 --set learning_starts=32 --set iterations_per_epoch=30 --set seed=5)
file(REMOVE_RECURSE ${OUT}/whole ${OUT}/split ${OUT}/plain ${OUT}/one)
set(ENV{FOXRL_RUN_ID} check-mpi-train)  # in every checkpoint file: the same for both runs

mpi_run(2 success "2 ranks \\(MPI\\).*Epoch 3 complete" 120 ${common} --set epochs=3 --set out_dir=${OUT}/whole)
string(REGEX MATCHALL "Epoch 3 complete" said "${MPI_RUN_OUTPUT}")
list(LENGTH said times)
if(NOT times EQUAL 1)
  message(FATAL_ERROR "the epoch line was printed ${times} times, expected once (rank 0)")
endif()
set(g ${OUT}/whole/checkpoints/epoch-00000003)
foreach(f checkpoint.safetensors checkpoint.json trainer_state.safetensors trainer_state.rank-1.safetensors)
  if(NOT EXISTS ${g}/${f})
    message(FATAL_ERROR "${g}/${f} is missing")
  endif()
endforeach()
file(READ ${g}/checkpoint.json manifest)
if(NOT manifest MATCHES "\"ranks\": 2")
  message(FATAL_ERROR "${g}/checkpoint.json does not record 2 ranks:\n${manifest}")
endif()

mpi_run(2 success "Epoch 2 complete" 120 ${common} --set epochs=2 --set out_dir=${OUT}/split)
# One process cannot continue a 2-rank run: exit 2, naming both counts.
execute_process(COMMAND ${CLI} train --resume --set out_dir=${OUT}/split --set epochs=3
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 60)
if(NOT rc EQUAL 2 OR NOT err MATCHES "written by a run of 2 ranks, this run has 1.*mpirun -np 2")
  message(FATAL_ERROR "one-rank resume of a 2-rank run: exit ${rc}: ${out}${err}")
endif()
mpi_run(2 success "resumed from the checkpoint of epoch 2.*Epoch 3 complete" 120
  ${CLI} train --resume --set out_dir=${OUT}/split --set epochs=3)
set(g checkpoints/epoch-00000003)
expect_same_files(${OUT}/whole ${OUT}/split "the uninterrupted and the resumed 2-rank run"
  ${g}/checkpoint.safetensors ${g}/trainer_state.safetensors ${g}/trainer_state.rank-1.safetensors)
# Rank 0 refuses the directory (it holds a run) while rank 1 goes on to its
# first all-reduce: both must end, with the usage error's code 2.
mpi_run(2 failure "rank 0 of 2: out_dir '[^']*whole' already holds a run" 60
  ${common} --set epochs=3 --set out_dir=${OUT}/whole)
if(NOT MPI_RUN_RC EQUAL 2)
  message(FATAL_ERROR "exit ${MPI_RUN_RC}, expected 2 (rank 0's usage error)")
endif()

# One rank: no gradient hook, no collectives: the single-process bytes.
execute_process(COMMAND ${common} --set epochs=2 --set out_dir=${OUT}/plain RESULT_VARIABLE rc OUTPUT_QUIET
  ERROR_VARIABLE err TIMEOUT 60)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "single-process run: exit ${rc}: ${err}")
endif()
mpi_run(1 success "Epoch 2 complete" 60 ${common} --set epochs=2 --set out_dir=${OUT}/one)
set(g checkpoints/epoch-00000002)
expect_same_files(${OUT}/plain ${OUT}/one "the single-process run and mpirun -np 1"
  ${g}/checkpoint.safetensors ${g}/trainer_state.safetensors)

message("mpirun -np 2 foxrl train: rank 0 writes, resume bit-exact, rank count checked")
