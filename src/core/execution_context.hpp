#pragma once
// ExecutionContext: the one stream and the one Kokkos execution-space
// instance of a run. Every component receives its instance from here; see
// docs/design.md ("The one-stream rule").

#include "core/compat.hpp"
#include "core/error.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <string>

#ifdef KOKKOS_ENABLE_CUDA
#include <cuda_runtime.h>
#endif

namespace foxrl {

namespace detail {

#ifdef KOKKOS_ENABLE_CUDA
inline void check_cuda(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    throw Error(std::string(what) + " failed: " + cudaGetErrorString(status));
  }
}

/// A non-blocking stream (it does not synchronise with the legacy default
/// stream), wrapped by a Kokkos::Cuda instance that owns it from then on.
inline Kokkos::Cuda make_cuda_instance_on_new_stream() {
  cudaStream_t stream = nullptr;
  check_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
#if KOKKOS_VERSION >= 40200
  return Kokkos::Cuda(stream, Kokkos::Impl::ManageStream::yes);
#else
#error "foxrl's CUDA backend needs Kokkos 4.2 or newer (Kokkos::Cuda owning its stream)"
#endif
}
#endif

template <class ExecSpace>
ExecSpace make_run_instance() {
#ifdef KOKKOS_ENABLE_CUDA
  if constexpr (std::is_same_v<ExecSpace, Kokkos::Cuda>) {
    return make_cuda_instance_on_new_stream();
  } else
#endif
  {
    return compat::make_host_instance<ExecSpace>();
  }
}

}  // namespace detail

/// Owns the execution-space instance of one run (on CUDA: wrapping a
/// non-blocking stream it creates). Create it after Kokkos::initialize and
/// destroy it, and every component holding its instance, before
/// Kokkos::finalize.
template <class ExecSpace = Kokkos::DefaultExecutionSpace>
class ExecutionContext {
 public:
  using execution_space = ExecSpace;
  using memory_space = typename ExecSpace::memory_space;

  explicit ExecutionContext(std::uint64_t seed = 0) : space_(detail::make_run_instance<ExecSpace>()), seed_(seed) {}

  ExecutionContext(const ExecutionContext&) = delete;
  ExecutionContext& operator=(const ExecutionContext&) = delete;

  /// Waits for the run's work so nothing is in flight on a stream that is
  /// about to be released.
  ~ExecutionContext() { compat::fence(space_, "foxrl::ExecutionContext::~ExecutionContext"); }

  /// The run's instance: the only one components may launch work on.
  const ExecSpace& space() const noexcept { return space_; }

  /// Labelled fence of the run's instance (never a global fence).
  void fence(const std::string& why) const { compat::fence(space_, "foxrl::" + why); }

  /// Root seed of the run; components derive their own streams from it.
  std::uint64_t seed() const noexcept { return seed_; }

  /// Name of the backend, as used in logs ("Cuda", "Serial", "OpenMP").
  static std::string backend_name() { return ExecSpace::name(); }

#ifdef KOKKOS_ENABLE_CUDA
  /// The CUDA stream under the instance (for vendor libraries bound to it).
  template <class E = ExecSpace, class = std::enable_if_t<std::is_same_v<E, Kokkos::Cuda>>>
  cudaStream_t stream() const noexcept {
    return space_.cuda_stream();
  }
#endif

 private:
  ExecSpace space_;
  std::uint64_t seed_;
};

}  // namespace foxrl
