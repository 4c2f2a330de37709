#pragma once
// NcclAllReduce: the GPU all-reduce of data-parallel training (built only
// with NCCL: FOXRL_HAS_NCCL). One NCCL communicator per process, over the
// ranks of the host Communicator, which bootstraps it: rank 0 makes NCCL's
// unique id and broadcasts it (MPI in a launched run; a one-rank run needs
// no transport at all). The reductions are enqueued on the caller's CUDA
// stream (the run's one stream), so they order with the kernels around
// them without a fence or a host copy.
//
// This header names no NCCL or CUDA type, so the trainers' headers can
// include it in every build; only nccl_all_reduce.cpp includes <nccl.h>.

#include "dist/communicator.hpp"

#include <cstddef>
#include <memory>
#include <string>

namespace foxrl::dist {

/// True if foxrl was built with NCCL (CUDA builds, FOXRL_ENABLE_NCCL).
constexpr bool built_with_nccl() {
#if defined(FOXRL_HAS_NCCL) && FOXRL_HAS_NCCL
  return true;
#else
  return false;
#endif
}

/// The process's NCCL communicator and its in-place mean; see the file
/// comment.
class NcclAllReduce {
 public:
  /// The communicator of `comm`'s ranks on the current CUDA device, made
  /// on the first call (a collective: every rank calls it at the same
  /// point) and shared afterwards. Throws foxrl::Error if NCCL fails.
  static std::shared_ptr<NcclAllReduce> for_ranks(const std::shared_ptr<Communicator>& comm);

  ~NcclAllReduce();
  NcclAllReduce(const NcclAllReduce&) = delete;
  NcclAllReduce& operator=(const NcclAllReduce&) = delete;

  /// a[0, na) and b[0, nb) (device floats) become their means over the
  /// ranks, in one NCCL group on `cuda_stream` (a cudaStream_t); returns
  /// once enqueued. nb may be 0.
  void mean(void* cuda_stream, float* a, std::size_t na, float* b, std::size_t nb);

  int ranks() const;
  /// "NCCL 2.x.y, N ranks", for logs.
  std::string describe() const;

 private:
  struct State;
  explicit NcclAllReduce(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace foxrl::dist
