#pragma once
// OfflineDataset: a `foxrl collect` dataset in the memory space of the
// run's instance, for offline training. The file is read and validated
// whole on the host first (DatasetFile: every tensor, value and metadata
// key), then the memory it needs is compared with the free memory of the
// instance's memory space (a dataset that does not fit is refused with the
// sizes), then the six tensors are allocated and copied on the instance,
// with one labelled fence, since the host bytes are freed afterwards.
// Sampling: OfflineSampler (src/offline/offline_sampler.hpp).

#include "core/compat.hpp"
#include "core/device_memory.hpp"
#include "core/error.hpp"
#include "io/state_archive.hpp"
#include "offline/dataset_file.hpp"
#include "offline/dataset_memory.hpp"
#include "views/offline/offline_storage.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <type_traits>

namespace foxrl {

/// The transitions of one dataset file in device Views, with its metadata.
template <class ExecSpace>
class OfflineDataset {
 public:
  using execution_space = ExecSpace;
  using memory_space = typename ExecSpace::memory_space;

  /// Rows the device sampler can address (32-bit draws).
  static constexpr std::int64_t max_rows = 4294967295LL;

  /// Reads, validates and uploads `path` on `space`. UsageError naming the
  /// file and field for a malformed dataset, or the sizes for one that does
  /// not fit in the memory space's free memory.
  OfflineDataset(const ExecSpace& space, const std::string& path) : OfflineDataset(space, read_dataset_file(path)) {}

  /// Uploads a dataset already read and validated (read_dataset_file).
  OfflineDataset(const ExecSpace& space, const DatasetFile& file)
      : path_(file.path), metadata_(file.metadata), normalizer_(file.normalizer) {
    if (file.rows > max_rows) {
      throw UsageError("dataset '" + path_ + "': " + std::to_string(file.rows) + " transitions; at most " +
                       std::to_string(max_rows) + " can be sampled");
    }
    bytes_ = dataset_device_bytes(file.rows, file.obs_dim);
    check_dataset_fits(path_, file.rows, file.obs_dim, bytes_, memory_info());
    try {
      allocate(space, file.rows, file.obs_dim);
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      // Free memory is not one block, and others may allocate meanwhile:
      // an allocation can still fail after the check.
      throw Error("dataset '" + path_ + "': allocating " + format_bytes(double(bytes_)) +
                  " of device memory failed: " + e.what());
    }
    upload(space, file, "observations", storage_.observations);
    upload(space, file, "next_observations", storage_.next_observations);
    upload(space, file, "actions", storage_.actions);
    upload(space, file, "rewards", storage_.rewards);
    upload(space, file, "terminated", storage_.terminated);
    upload(space, file, "truncated", storage_.truncated);
    compat::fence(space, "foxrl::OfflineDataset::upload (the host bytes are freed next)");
  }

  /// The device Views (one row per transition).
  const OfflineStorage<memory_space>& storage() const { return storage_; }
  /// Transitions T.
  std::int64_t size() const { return storage_.size(); }
  int obs_dim() const { return storage_.obs_dim(); }
  int num_actions() const { return metadata_.num_actions; }
  /// Where the transitions came from: env, its config, behaviour policy.
  const DatasetMetadata& metadata() const { return metadata_; }
  /// The normaliser statistics of the recording policy (market datasets
  /// collected with --run), or none.
  const std::optional<NormalizerState>& normalizer() const { return normalizer_; }
  const std::string& path() const { return path_; }
  /// Device bytes of the six tensors.
  std::uint64_t device_bytes() const { return bytes_; }

 private:
  static MemoryInfo memory_info() {
    if constexpr (std::is_same_v<memory_space, Kokkos::HostSpace>) {
      return host_memory_info();
    } else {
      return default_memory_info();
    }
  }

  void allocate(const ExecSpace& space, std::int64_t rows, int obs_dim) {
    auto alloc = [&](const char* name) {
      return Kokkos::view_alloc(space, Kokkos::WithoutInitializing, std::string("foxrl::OfflineDataset::") + name);
    };
    using matrix = typename OfflineStorage<memory_space>::matrix;
    storage_.observations = matrix(alloc("observations"), rows, obs_dim);
    storage_.next_observations = matrix(alloc("next_observations"), rows, obs_dim);
    storage_.actions = Kokkos::View<std::int32_t*, memory_space>(alloc("actions"), rows);
    storage_.rewards = Kokkos::View<float*, memory_space>(alloc("rewards"), rows);
    storage_.terminated = Kokkos::View<std::uint8_t*, memory_space>(alloc("terminated"), rows);
    storage_.truncated = Kokkos::View<std::uint8_t*, memory_space>(alloc("truncated"), rows);
  }

  /// Queues the copy of tensor `name`'s host bytes into `view` (same
  /// dtype and shape: checked by the reader). The bytes of a tensor are a
  /// vector of their own, aligned for any scalar type.
  template <class View>
  static void upload(const ExecSpace& space, const DatasetFile& file, const std::string& name, const View& view) {
    const auto& t = file.tensor(name);
    if (t.data.size() != view.span() * sizeof(typename View::value_type)) {
      throw LogicError("foxrl::OfflineDataset: tensor '" + name + "' holds " + std::to_string(t.data.size()) +
                       " bytes, the View " + std::to_string(view.span() * sizeof(typename View::value_type)));
    }
    Kokkos::deep_copy(space, view, detail::host_alias(view, const_cast<unsigned char*>(t.data.data())));
  }

  std::string path_;
  DatasetMetadata metadata_;
  std::optional<NormalizerState> normalizer_;
  std::uint64_t bytes_ = 0;
  OfflineStorage<memory_space> storage_;
};

}  // namespace foxrl
