#include "core/kernel_check.hpp"

#include "core/error.hpp"

#include <Kokkos_Core.hpp>

#if defined(KOKKOS_ENABLE_CUDA)
#include <cuda_runtime.h>
#endif
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace foxrl {
namespace {

std::mutex label_mutex;
std::string last_label;  // guarded by label_mutex
bool is_installed = false;

void on_begin(const char* name, std::uint32_t, std::uint64_t* kernel_id) {
  const std::lock_guard<std::mutex> lock(label_mutex);
  last_label = name != nullptr ? name : "";
  *kernel_id = 0;
}

void on_end(std::uint64_t) {
#if defined(KOKKOS_ENABLE_CUDA)
  cudaError_t status = cudaDeviceSynchronize();
  if (status == cudaSuccess) status = cudaGetLastError();
  if (status != cudaSuccess) {
    throw Error("CUDA error " + std::string(cudaGetErrorName(status)) + " (" + cudaGetErrorString(status) +
                ") in kernel '" + KernelCheck::last_kernel() + "'");
  }
#endif
}

using BeginCallback = void (*)(const char*, std::uint32_t, std::uint64_t*);
using EndCallback = void (*)(std::uint64_t);

/// The begin and end callbacks of all three kernel kinds (null: none).
void set_kernel_callbacks(BeginCallback begin, EndCallback end) {
  namespace KTE = Kokkos::Tools::Experimental;
  KTE::set_begin_parallel_for_callback(begin);
  KTE::set_begin_parallel_reduce_callback(begin);
  KTE::set_begin_parallel_scan_callback(begin);
  KTE::set_end_parallel_for_callback(end);
  KTE::set_end_parallel_reduce_callback(end);
  KTE::set_end_parallel_scan_callback(end);
}

}  // namespace

bool KernelCheck::install_from_environment() {
  const char* value = std::getenv("FOXRL_CHECK_KERNELS");
  if (value == nullptr || *value == '\0' || std::strcmp(value, "0") == 0) return false;
  install();
  return true;
}

void KernelCheck::install() {
  set_kernel_callbacks(on_begin, on_end);
  is_installed = true;
}

void KernelCheck::uninstall() {
  set_kernel_callbacks(nullptr, nullptr);
  is_installed = false;
}

bool KernelCheck::installed() { return is_installed; }

std::string KernelCheck::last_kernel() {
  const std::lock_guard<std::mutex> lock(label_mutex);
  return last_label;
}

}  // namespace foxrl
