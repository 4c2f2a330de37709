#include "offline/dataset_memory.hpp"

#include "core/error.hpp"

#include <cstdint>

namespace foxrl {

std::uint64_t dataset_device_bytes(std::int64_t rows, int obs_dim) {
  const std::uint64_t per_row =
      2 * std::uint64_t(obs_dim) * sizeof(float) + sizeof(std::int32_t) + sizeof(float) + 2 * sizeof(std::uint8_t);
  return std::uint64_t(rows) * per_row;
}

void check_dataset_fits(const std::string& path, std::int64_t rows, int obs_dim, std::uint64_t bytes,
                        const MemoryInfo& memory) {
  if (!memory.known || bytes <= memory.free_bytes) return;
  throw UsageError("dataset '" + path + "': " + std::to_string(rows) + " transitions x " + std::to_string(obs_dim) +
                   " features need " + format_bytes(double(bytes)) + " (" + std::to_string(bytes) +
                   " bytes) of device memory; " + memory.where + " has " + format_bytes(double(memory.free_bytes)) +
                   " free of " + format_bytes(double(memory.total_bytes)) +
                   ": use a smaller dataset (collect --steps) or a larger device");
}

}  // namespace foxrl
