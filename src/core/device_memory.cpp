#include "core/device_memory.hpp"

#include <Kokkos_Core.hpp>

#if defined(KOKKOS_ENABLE_CUDA)
#include <cuda_runtime.h>
#endif
#include <unistd.h>
#include <cstdio>
#include <type_traits>

namespace foxrl {

MemoryInfo default_memory_info() {
#if defined(KOKKOS_ENABLE_CUDA)
  if (std::is_same_v<Kokkos::DefaultExecutionSpace, Kokkos::Cuda>) {
    MemoryInfo info;
    std::size_t free_bytes = 0, total_bytes = 0;
    int device = 0;
    if (cudaGetDevice(&device) == cudaSuccess && cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess) {
      info = {true, free_bytes, total_bytes, "GPU " + std::to_string(device)};
    }
    return info;
  }
#endif
  return host_memory_info();
}

MemoryInfo host_memory_info() {
  MemoryInfo info;
  const long page = ::sysconf(_SC_PAGESIZE), available = ::sysconf(_SC_AVPHYS_PAGES),
             physical = ::sysconf(_SC_PHYS_PAGES);
  if (page > 0 && available >= 0 && physical > 0) {
    info = {true, std::uint64_t(available) * std::uint64_t(page), std::uint64_t(physical) * std::uint64_t(page),
            "host"};
  }
  return info;
}

std::string format_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024.0 && u < 4) {
    bytes /= 1024.0;
    ++u;
  }
  char text[32];
  std::snprintf(text, sizeof text, u == 0 || bytes >= 100 ? "%.0f %s" : "%.1f %s", bytes, units[u]);
  return text;
}

}  // namespace foxrl
