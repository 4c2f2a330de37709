// Fuzzes the offline dataset loader (read_dataset_file, what `foxrl dataset
// info` and offline training read): the input is the dataset file. A file
// the loader accepts goes on through everything that reads it: the
// statistics of `dataset info`, the upload into device Views and a sampled
// batch, whose rows and actions must lie inside the dataset's bounds.
#include "fuzz_support.hpp"
#include "offline/dataset_file.hpp"
#include "offline/dataset_statistics.hpp"
#include "offline/offline_sampler.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <numeric>
#include <string>

namespace {
using Host = Kokkos::DefaultHostExecutionSpace;
}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  foxrl::fuzz::init_kokkos();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string path = foxrl::fuzz::scratch_dir() + "/dataset.safetensors";
  foxrl::fuzz::write_file(path, data, size);
  foxrl::fuzz::expect_clean_rejection([&] {
    const foxrl::DatasetFile file = foxrl::read_dataset_file(path);
    const foxrl::DatasetStatistics stats = foxrl::dataset_statistics(file);
    const std::int64_t counted =
        std::accumulate(stats.action_counts.begin(), stats.action_counts.end(), std::int64_t{0});
    if (stats.transitions != file.rows || counted != file.rows || stats.terminated > file.rows) std::abort();

    const Host space;
    const foxrl::OfflineDataset<Host> dataset(space, file);
    foxrl::OfflineSamplerConfig config;
    config.max_batch = 16;
    foxrl::OfflineSampler<Host> sampler(space, dataset, config);
    const auto batch = sampler.sample(space, 16);
    space.fence();
    for (int k = 0; k < 16; ++k) {
      if (batch.indices(k) < 0 || batch.indices(k) >= dataset.size()) std::abort();
      if (batch.actions(k) < 0 || batch.actions(k) >= dataset.num_actions()) std::abort();
    }
  });
  return 0;
}
