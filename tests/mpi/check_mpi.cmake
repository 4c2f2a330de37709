# One mpirun of foxrl_mpi_checks (-DCHECKS, -DMODE, -DEXPECT, -DREGEX,
# -DMPIEXEC, -DMPIEXEC_NUMPROC_FLAG); see mpirun.cmake.
include(${CMAKE_CURRENT_LIST_DIR}/mpirun.cmake)
mpi_run(2 "${EXPECT}" "${REGEX}" 60 ${CHECKS} ${MODE})
