#include "evaluate/collect_request.hpp"

#include "core/execution_context.hpp"
#include "io/output_dir.hpp"
#include "train/checkpoint_store.hpp"
#include "train/run_manifest.hpp"

namespace foxrl {

CollectSummary collect(CollectRequest request, std::string* line) {
  CollectOptions& o = request.options;
  // The env of a network policy is its run's (same observations), unless
  // a config file names another; the overrides apply on top either way.
  if (!request.config_file.empty()) {
    o.config = TrainConfig::from_json_file(request.config_file);
  } else if (!o.run_dir.empty()) {
    o.config = RunManifest::read(CheckpointStore::resolve(o.run_dir)).config;
  }
  o.config.apply_overrides(request.overrides);
  prepare_output_file_directory(o.out_path, "--out");
  // The run's one stream, as in train and rollout.
  ExecutionContext<> context(o.config.seed);
  const CollectSummary summary = collect_dataset(context.space(), o);
  if (line != nullptr) {
    *line = "foxrl collect: " + std::to_string(summary.transitions) + " transitions of " + o.config.env + " (" +
            std::to_string(o.config.num_envs) + " envs x " + std::to_string(summary.iterations) + " steps, " +
            std::to_string(summary.obs_dim) + " features, policy " + o.policy + ") written to " + o.out_path;
  }
  return summary;
}

}  // namespace foxrl
