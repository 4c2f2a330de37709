#pragma once
// DatasetStatistics: what `foxrl dataset info` reports about a dataset:
// sizes, flag counts, the action histogram and the returns of the behaviour
// policy's episodes. Episodes are followed through the rows in the order
// `foxrl collect` records them (row t * num_envs + i is env i's step t; an
// episode ends at a terminated or truncated row, the env's next row starts
// the next one). The order is verified, not assumed: each row that does not
// end an episode must have as next observation the observation of the same
// env's next row, bit for bit. A dataset whose metadata states no such
// order, or whose rows break it, gets no return statistics and a reason.

#include "offline/dataset_file.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace foxrl {

/// count, mean, population standard deviation, min and max of values.
struct SummaryStatistics {
  std::int64_t count = 0;
  double mean = 0, std = 0, min = 0, max = 0;
};

/// The summary of one dataset.
struct DatasetStatistics {
  std::int64_t transitions = 0;
  int obs_dim = 0;
  int num_actions = 0;
  int num_envs = 0;
  std::int64_t terminated = 0;              ///< rows with terminated = 1
  std::int64_t truncated = 0;               ///< rows with truncated = 1
  std::vector<std::int64_t> action_counts;  ///< [num_actions]: rows taking each action
  /// Whether episodes could be followed through the rows; if not, `why`.
  bool episodes_exact = false;
  std::string why;
  /// Complete episodes' undiscounted returns (sum of rewards, float64) and
  /// lengths; only when episodes_exact.
  SummaryStatistics returns;
  SummaryStatistics lengths;
  /// Episodes the recording cut off (one per env at most): not counted.
  std::int64_t unfinished = 0;
};

/// Statistics of `values` (float64, two passes); all zero when empty.
SummaryStatistics summarize(const std::vector<double>& values);

/// The statistics of a validated dataset.
DatasetStatistics dataset_statistics(const DatasetFile& dataset);

}  // namespace foxrl
