#pragma once
// How much memory the default execution space's memory has, for messages
// when an allocation fails: the GPU's free and total memory in CUDA builds
// (cudaMemGetInfo), the host's available and physical memory otherwise.

#include <cstdint>
#include <string>

namespace foxrl {

struct MemoryInfo {
  bool known = false;
  std::uint64_t free_bytes = 0;
  std::uint64_t total_bytes = 0;
  std::string where;  ///< "GPU 0" or "host"
};

/// The default memory space's free and total bytes now.
MemoryInfo default_memory_info();

/// The host's available and physical memory now (HostSpace Views).
MemoryInfo host_memory_info();

/// Bytes in the unit that reads best ("512 MiB", "3.2 GiB").
std::string format_bytes(double bytes);

}  // namespace foxrl
