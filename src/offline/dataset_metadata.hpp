#pragma once
// DatasetMetadata: what the metadata of a `foxrl collect` dataset says about
// where its transitions came from (the env and its config, the sizes, the
// behaviour policy), parsed and checked against itself: the config must
// describe the same env, observation size and number of actions as the
// sizes the metadata states, so an offline trainer can rebuild the env for
// evaluation from it.

#include "config/train_config.hpp"

#include <cstdint>
#include <map>
#include <string>

namespace foxrl {

/// The metadata a dataset file must carry (format "foxrl.dataset",
/// format_version "1"), parsed.
struct DatasetMetadata {
  std::string env = "cartpole";
  int obs_dim = 0;
  int num_actions = 0;
  int num_envs = 0;              ///< envs stepped side by side while recording
  std::int64_t transitions = 0;  ///< rows the file holds
  TrainConfig config;            ///< the config of the recorded env (validated)
  /// Whether row t * num_envs + i is env i's step t (the "row_order" key);
  /// only then can episodes be followed through the rows.
  bool row_order_known = false;
  std::string policy;   ///< behaviour policy ("random", "greedy", ...; "" if absent)
  std::string epsilon;  ///< its exploration rate as recorded ("" if absent)
  std::string seed;     ///< the collection's seed as recorded ("" if absent)
  std::string split;    ///< market: the time split the envs replayed ("" otherwise)
  std::string run;      ///< run directory of a network policy ("" otherwise)
};

/// The row order `foxrl collect` records (metadata key "row_order").
inline constexpr const char* dataset_row_order = "row = iteration * num_envs + env";

/// Parses the metadata of the dataset `path`; UsageError naming the file
/// and the key for a missing or malformed entry.
DatasetMetadata parse_dataset_metadata(const std::string& path, const std::map<std::string, std::string>& metadata);

}  // namespace foxrl
