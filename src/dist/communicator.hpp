#pragma once
// Communicator: the processes of a data-parallel run (ranks) and the few
// collectives training needs, on host buffers: sums of floats and doubles,
// the maximum of doubles, broadcasts of words and text, a gather of one
// word per rank, a barrier, and an abort that ends every rank. world() is
// the process's communicator: MPI's world when foxrl was built with MPI and
// started by an MPI launcher (mpirun, srun), otherwise one rank, so code
// above this layer never asks whether MPI exists. Every collective must be
// called by every rank in the same order.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace foxrl::dist {

/// The ranks of a run and their collectives; see the file comment. Errors
/// of the transport end the whole job (MPI's default error handler), so a
/// collective returns only with a result.
class Communicator {
 public:
  virtual ~Communicator() = default;
  /// This process's rank in [0, size()).
  virtual int rank() const = 0;
  /// Ranks of the run.
  virtual int size() const = 0;
  /// Rank among the ranks on this node (selects the GPU of a rank).
  virtual int local_rank() const = 0;
  /// "MPI" or "single process", for logs.
  virtual std::string transport() const = 0;

  /// data[i] = sum over ranks of data[i], on every rank.
  virtual void sum(float* data, std::size_t n) = 0;
  virtual void sum(double* data, std::size_t n) = 0;
  /// data[i] = maximum over ranks of data[i], on every rank.
  virtual void max(double* data, std::size_t n) = 0;
  /// Every rank gets `root`'s data[0, n).
  virtual void broadcast(std::uint64_t* data, std::size_t n, int root) = 0;
  /// Every rank gets `root`'s text.
  virtual void broadcast(std::string& text, int root) = 0;
  /// Every rank's `value`, indexed by rank, on every rank.
  virtual std::vector<std::uint64_t> all_gather(std::uint64_t value) = 0;
  /// Returns once every rank has called it.
  virtual void barrier() = 0;
  /// Ends every rank of the run with `exit_code` (a rank that fails must
  /// call it: the others would wait in their next collective for ever).
  [[noreturn]] virtual void abort(int exit_code) = 0;
};

/// The process's communicator (created on first use; MPI is initialised
/// then and finalised at exit). One rank unless foxrl was built with MPI
/// (FOXRL_ENABLE_MPI) and started by an MPI launcher, recognised by the
/// variables mpirun and srun set (OMPI_COMM_WORLD_SIZE, PMIX_RANK,
/// PMI_RANK, PMI_SIZE, MV2_COMM_WORLD_SIZE).
std::shared_ptr<Communicator> world();

/// A one-rank communicator: every collective returns its input.
std::shared_ptr<Communicator> single_process();

/// True if foxrl was built with MPI.
bool built_with_mpi();

/// The error path of a program: if world() exists and has more than one
/// rank, ends every rank with `exit_code` (Communicator::abort); otherwise
/// returns, and the caller exits as usual.
void abort_if_distributed(int exit_code);

/// "rank R of N: " once world() exists with more than one rank, else ""
/// (for messages a rank prints on its own).
std::string rank_label();

/// The GPU of a rank: its rank on the node modulo the node's `devices`
/// (mpirun and srun number a node's ranks 0, 1, ...; one rank per GPU is
/// the layout NCCL needs). UsageError when `devices` < 1.
int device_for_local_rank(int local_rank, int devices);

/// Seed of rank `rank`'s randomness (envs, exploration, replay sampling):
/// `seed` itself on rank 0, so a one-rank run is the single-process run,
/// and a mixed stream per further rank.
std::uint64_t rank_seed(std::uint64_t seed, int rank);

}  // namespace foxrl::dist
