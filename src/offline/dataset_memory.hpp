#pragma once
// Whether a dataset fits the memory it is loaded into: OfflineDataset asks
// before it allocates, so a dataset larger than the device is refused with
// the sizes rather than failing inside an allocation.

#include "core/device_memory.hpp"

#include <cstdint>
#include <string>

namespace foxrl {

/// Device bytes of a dataset of `rows` transitions with `obs_dim` features:
/// two float observation rows, an int32 action, a float reward, two flags.
std::uint64_t dataset_device_bytes(std::int64_t rows, int obs_dim);

/// UsageError naming `path`, the dataset's size and the memory's free and
/// total bytes if `bytes` exceed `memory.free_bytes` (nothing when the
/// memory is unknown: the allocation then decides).
void check_dataset_fits(const std::string& path, std::int64_t rows, int obs_dim, std::uint64_t bytes,
                        const MemoryInfo& memory);

}  // namespace foxrl
