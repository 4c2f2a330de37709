// world(): MPI's world when built with MPI and started by a launcher, else
// one rank. The only place that knows whether MPI was built in.
#include "dist/communicator.hpp"

#include <cstdlib>
#include <mutex>

namespace foxrl::dist {

#if FOXRL_HAS_MPI
namespace detail {
std::shared_ptr<Communicator> make_mpi_world();  // dist/mpi_communicator.cpp
}
#endif

namespace {

std::mutex world_mutex;
std::shared_ptr<Communicator>& world_slot() {
  static std::shared_ptr<Communicator> w;
  return w;
}

/// Started by mpirun/mpiexec (Open MPI, MPICH, MVAPICH) or srun (PMI,
/// PMIx): initialising MPI in a plain process would cost time and may
/// print warnings, for one rank.
bool launched_by_mpi() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE", "MV2_COMM_WORLD_SIZE"}) {
    if (std::getenv(name) != nullptr) return true;
  }
  return false;
}

}  // namespace

bool built_with_mpi() { return FOXRL_HAS_MPI != 0; }

std::shared_ptr<Communicator> world() {
  const std::lock_guard<std::mutex> lock(world_mutex);
  auto& w = world_slot();
  if (!w) {
#if FOXRL_HAS_MPI
    if (launched_by_mpi()) w = detail::make_mpi_world();
#else
    (void)launched_by_mpi;
#endif
    if (!w) w = single_process();
  }
  return w;
}

namespace {
/// world() if it was created (never creates it: an error path must not
/// start MPI).
std::shared_ptr<Communicator> existing_world() {
  const std::lock_guard<std::mutex> lock(world_mutex);
  return world_slot();
}
}  // namespace

void abort_if_distributed(int exit_code) {
  const auto w = existing_world();
  if (w && w->size() > 1) w->abort(exit_code);
}

std::string rank_label() {
  const auto w = existing_world();
  if (!w || w->size() == 1) return {};
  return "rank " + std::to_string(w->rank()) + " of " + std::to_string(w->size()) + ": ";
}

}  // namespace foxrl::dist
