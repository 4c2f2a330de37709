#pragma once
// What `foxrl collect` does with its arguments: the env's config from a
// file, or the run's own config when a trained policy acts, `--set` on top,
// then the dataset recorded on Kokkos::DefaultExecutionSpace in a context of
// its own (evaluate/collect_dataset.hpp).

#include "evaluate/collect_dataset.hpp"

#include <string>
#include <vector>

namespace foxrl {

struct CollectRequest {
  std::string config_file;             ///< a JSON config of the env (empty: see run_config)
  std::vector<std::string> overrides;  ///< "key=value", applied on top
  /// The policy, run, steps, split and output; options.config is set here.
  CollectOptions options;
};

/// Records the dataset `request` asks for; returns what was written and the
/// line `foxrl collect` prints.
CollectSummary collect(CollectRequest request, std::string* line = nullptr);

}  // namespace foxrl
