#pragma once
// CublasHandle: a cuBLAS handle owned by one component and bound once to
// the stream of the run's Kokkos::Cuda instance, with a workspace allocated
// through Kokkos on that instance, so no gemm allocates or switches streams.
// Only compiled when Kokkos has CUDA.

#include <Kokkos_Core.hpp>

#ifdef KOKKOS_ENABLE_CUDA

#include "core/error.hpp"

#include <cublas_v2.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace foxrl {

namespace detail {
inline void check_cublas(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw Error(std::string("foxrl::CublasHandle: ") + what + " failed: " + cublasGetStatusString(status));
}
}  // namespace detail

/// RAII cuBLAS handle on the stream of a Kokkos::Cuda instance.
///
/// Math mode CUBLAS_DEFAULT_MATH with fp32 routines: FP32 FFMA kernels, no
/// TF32 (which needs CUBLAS_TF32_TENSOR_OP_MATH or a FAST_TF32 compute
/// type) and no BF16x9 emulation (an opt-in math mode); atomics are not
/// allowed, so results do not depend on scheduling.
class CublasHandle {
 public:
  /// Hopper's recommended workspace (cuBLAS's own default is smaller).
  static constexpr std::size_t workspace_bytes = std::size_t(32) << 20;

  explicit CublasHandle(const Kokkos::Cuda& space) {
    workspace_ = Kokkos::View<unsigned char*, Kokkos::CudaSpace>(
        Kokkos::view_alloc(space, Kokkos::WithoutInitializing, "foxrl::CublasHandle::workspace"),
        workspace_bytes + 256);
    detail::check_cublas(cublasCreate(&handle_), "cublasCreate");
    try {
      detail::check_cublas(cublasSetMathMode(handle_, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
      detail::check_cublas(cublasSetAtomicsMode(handle_, CUBLAS_ATOMICS_NOT_ALLOWED), "cublasSetAtomicsMode");
      detail::check_cublas(cublasSetPointerMode(handle_, CUBLAS_POINTER_MODE_HOST), "cublasSetPointerMode");
      bind(space.cuda_stream());
    } catch (...) {
      cublasDestroy(handle_);
      throw;
    }
  }

  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;

  ~CublasHandle() {
    if (handle_ != nullptr) cublasDestroy(handle_);
  }

  /// The handle, bound to `space`'s stream (re-bound only if the instance
  /// differs from the last call's: normally never).
  cublasHandle_t get(const Kokkos::Cuda& space) {
    if (space.cuda_stream() != stream_) bind(space.cuda_stream());
    return handle_;
  }

  /// The workspace_bytes of device memory the handle's calls use, 256-byte
  /// aligned. Work on the same stream (cuBLASLt calls of the same layers)
  /// may use it too: calls in stream order never overlap.
  void* workspace() const {
    // cuBLAS needs 256-byte alignment; Kokkos puts a header before the data.
    const auto base = reinterpret_cast<std::uintptr_t>(workspace_.data());
    return reinterpret_cast<void*>((base + 255) / 256 * 256);
  }

 private:
  void bind(cudaStream_t stream) {
    detail::check_cublas(cublasSetStream(handle_, stream), "cublasSetStream");
    // cublasSetStream resets the workspace to cuBLAS's default pool.
    detail::check_cublas(cublasSetWorkspace(handle_, workspace(), workspace_bytes), "cublasSetWorkspace");
    stream_ = stream;
  }

  Kokkos::View<unsigned char*, Kokkos::CudaSpace> workspace_;
  cublasHandle_t handle_ = nullptr;
  cudaStream_t stream_ = nullptr;
};

}  // namespace foxrl

#endif  // KOKKOS_ENABLE_CUDA
