#include "core/device_memory.hpp"

#include <Kokkos_Core.hpp>

#if defined(KOKKOS_ENABLE_CUDA)
#include <cuda_runtime.h>
#endif
#include <unistd.h>
#include <algorithm>
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

namespace {

/// Linux's estimate of the memory new allocations can get without swapping
/// (MemAvailable in /proc/meminfo: free pages plus reclaimable caches), or
/// 0 where it is not reported.
std::uint64_t linux_available_bytes() {
  std::FILE* f = std::fopen("/proc/meminfo", "r");
  if (f == nullptr) return 0;
  char line[256];
  unsigned long long kib = 0;
  while (std::fgets(line, sizeof line, f) != nullptr) {
    if (std::sscanf(line, "MemAvailable: %llu kB", &kib) == 1) break;
  }
  std::fclose(f);
  return std::uint64_t(kib) * 1024;
}

}  // namespace

MemoryInfo host_memory_info() {
  MemoryInfo info;
  const long page = ::sysconf(_SC_PAGESIZE), available = ::sysconf(_SC_AVPHYS_PAGES),
             physical = ::sysconf(_SC_PHYS_PAGES);
  if (page > 0 && available >= 0 && physical > 0) {
    // Free pages alone leave out the page cache, which the kernel gives up
    // on demand: after reading a large file most memory can be cache.
    const std::uint64_t free_pages = std::uint64_t(available) * std::uint64_t(page);
    info = {true, std::max(free_pages, linux_available_bytes()), std::uint64_t(physical) * std::uint64_t(page), "host"};
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
