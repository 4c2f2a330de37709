#pragma once
// The error check of the hand-written CUDA launches (kernels/cuda/): Kokkos
// checks its own launches, these are ours.
//
// Only compiled in CUDA builds (kernels/cuda/ is not part of host builds).

#include "core/error.hpp"

#include <cuda_runtime.h>

#include <string>

namespace foxrl {
namespace kernels {
namespace cuda {

/// Throws foxrl::Error naming `what` and CUDA's message unless `status` is
/// cudaSuccess.
inline void check_cuda(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw Error(std::string(what) + ": " + cudaGetErrorString(status));
}

}  // namespace cuda
}  // namespace kernels
}  // namespace foxrl
