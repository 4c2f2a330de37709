#pragma once
// How data-parallel ranks average their gradients: NCCL on the GPU or the
// host Communicator (MPI), and the two facts that choose between them:
// what the user asked for (FOXRL_ALL_REDUCE) and whether ranks share a GPU
// (NCCL needs one GPU per rank; a node started with more ranks than GPUs,
// e.g. for a correctness run on one GPU, averages through MPI instead).

#include "dist/communicator.hpp"

#include <string>

namespace foxrl {

/// Which all-reduce make_gradient_reducer builds.
enum class ReductionTransport {
  automatic,  ///< NCCL where built in, the Views are on the GPU and no two ranks share one; else host
  host,       ///< the Communicator on host buffers (MPI)
  nccl,       ///< NCCL; UsageError where it is not built in
};

/// The transport the environment variable FOXRL_ALL_REDUCE names: unset or
/// "auto": automatic, "mpi": host, "nccl"; UsageError naming the variable
/// and its value otherwise.
ReductionTransport reduction_transport_from_environment();

namespace dist {

/// True if two ranks of `comm` run on the same GPU: the same `device` on
/// the same host (by host name). A collective: every rank calls it.
bool ranks_share_a_device(Communicator& comm, int device);

}  // namespace dist
}  // namespace foxrl
