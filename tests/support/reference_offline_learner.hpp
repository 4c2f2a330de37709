#pragma once
// Host pieces the offline learners' tests share: float64 reference networks
// built from a learner's float parameters, the padding test of a flat
// parameter index, plain-head outputs row by row, and a Batch's columns as
// the reference losses take them.

#include "support/reference_dqn.hpp"
#include "support/reference_offline.hpp"

#include <cstddef>
#include <vector>

namespace foxrl::test {

inline RefNet ref_net(const foxrl::NetworkLayout& layout, const std::vector<float>& p) {
  return RefNet{layout, std::vector<double>(p.begin(), p.end())};
}

inline bool is_padding(const foxrl::NetworkLayout& layout, std::size_t i) {
  for (int l = 0; l < layout.num_layers; ++l) {
    const auto& s = layout.layers[l];
    if (i >= s.weight_offset && i < s.weight_offset + s.weight_size()) return false;
    if (i >= s.bias_offset && i < s.bias_offset + std::size_t(s.out)) return false;
  }
  return true;
}

/// The plain-head outputs of `net` for every row of `x` [rows, obs_dim],
/// row-major.
inline std::vector<double> heads(const RefNet& net, const std::vector<float>& x, int rows) {
  const int D = net.layout.obs_dim;
  std::vector<double> out;
  for (int i = 0; i < rows; ++i) {
    const std::vector<double> row(x.begin() + std::size_t(i) * D, x.begin() + std::size_t(i + 1) * D);
    const auto h = net.head(row.data());
    out.insert(out.end(), h.begin(), h.end());
  }
  return out;
}

inline RefOfflineBatch offline_columns(const RefBatch& b, int num_actions) {
  RefOfflineBatch o;
  o.batch = b.size;
  o.num_actions = num_actions;
  o.actions.assign(b.actions.begin(), b.actions.end());
  o.rewards.assign(b.rewards.begin(), b.rewards.end());
  o.discounts.assign(b.discounts.begin(), b.discounts.end());
  return o;
}

}  // namespace foxrl::test
