#include "offline/dataset_statistics.hpp"

#include "io/state_archive.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace foxrl {

SummaryStatistics summarize(const std::vector<double>& values) {
  SummaryStatistics s;
  s.count = static_cast<std::int64_t>(values.size());
  if (values.empty()) return s;
  double sum = 0;
  for (const double v : values) sum += v;
  s.mean = sum / double(s.count);
  double squares = 0;
  for (const double v : values) squares += (v - s.mean) * (v - s.mean);
  s.std = std::sqrt(squares / double(s.count));
  s.min = *std::min_element(values.begin(), values.end());
  s.max = *std::max_element(values.begin(), values.end());
  return s;
}

DatasetStatistics dataset_statistics(const DatasetFile& dataset) {
  const DatasetMetadata& m = dataset.metadata;
  DatasetStatistics s;
  s.transitions = dataset.rows;
  s.obs_dim = dataset.obs_dim;
  s.num_actions = m.num_actions;
  s.num_envs = m.num_envs;

  const TensorValues<std::int32_t> actions(dataset.tensor("actions"));
  const TensorValues<float> rewards(dataset.tensor("rewards"));
  const TensorValues<std::uint8_t> terminated(dataset.tensor("terminated"));
  const TensorValues<std::uint8_t> truncated(dataset.tensor("truncated"));
  const std::int64_t T = dataset.rows;
  s.action_counts.assign(static_cast<std::size_t>(m.num_actions), 0);
  for (std::int64_t r = 0; r < T; ++r) {
    s.action_counts[static_cast<std::size_t>(actions[r])] += 1;  // in range: validated
    s.terminated += terminated[r];
    s.truncated += truncated[r];
  }

  if (!m.row_order_known) {
    s.why = "the metadata states no row order ('row_order'), so rows cannot be assigned to episodes";
    return s;
  }
  // Bytes of one observation row: the continuity check compares them as
  // bits (a copy of the same float, NaN-free after validation).
  const std::size_t row_bytes = std::size_t(dataset.obs_dim) * sizeof(float);
  const unsigned char* obs = dataset.tensor("observations").data.data();
  const unsigned char* next = dataset.tensor("next_observations").data.data();
  const std::int64_t N = m.num_envs;
  std::vector<double> returns, lengths;
  for (std::int64_t env = 0; env < N && env < T; ++env) {
    double episode_return = 0;
    std::int64_t length = 0;
    for (std::int64_t r = env; r < T; r += N) {
      episode_return += double(rewards[r]);
      ++length;
      if (terminated[r] != 0 || truncated[r] != 0) {
        returns.push_back(episode_return);
        lengths.push_back(double(length));
        episode_return = 0;
        length = 0;
      } else if (r + N < T &&
                 std::memcmp(next + std::size_t(r) * row_bytes, obs + std::size_t(r + N) * row_bytes, row_bytes) != 0) {
        s.why = "row " + std::to_string(r + N) + "'s observation is not row " + std::to_string(r) +
                "'s next observation although the episode goes on: the rows are not in the stated order (" +
                dataset_row_order + ", num_envs " + std::to_string(N) + ")";
        return s;
      }
    }
    if (length > 0) ++s.unfinished;
  }
  s.episodes_exact = true;
  s.returns = summarize(returns);
  s.lengths = summarize(lengths);
  return s;
}

}  // namespace foxrl
