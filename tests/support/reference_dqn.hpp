#pragma once
// A float64 host implementation of the dueling MLP Q-network and the
// double-DQN loss, written independently of the kernels, for the tests to
// compare against (and to take finite differences of).

#include "core/compat.hpp"
#include "kernels/agents/dqn/dqn_loss.hpp"
#include "support/device_copy.hpp"
#include "views/nn/network_layout.hpp"
#include "views/replay/batch.hpp"

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace foxrl::test {

/// Parameters in the flat layout of `layout`, as doubles.
struct RefNet {
  NetworkLayout layout;
  std::vector<double> p;

  /// Head outputs [V, A_0, ..., A_{n-1}] for one input row.
  std::vector<double> head(const double* x) const {
    std::vector<double> in(x, x + layout.obs_dim), out;
    for (int l = 0; l < layout.num_layers; ++l) {
      const auto& s = layout.layers[l];
      out.assign(s.out, 0.0);
      for (int o = 0; o < s.out; ++o) {
        double acc = p[s.bias_offset + o];
        for (int i = 0; i < s.in; ++i) acc += p[s.weight_offset + std::size_t(o) * s.in + i] * in[i];
        out[o] = (l + 1 < layout.num_layers) ? std::max(acc, 0.0) : acc;
      }
      in.swap(out);
    }
    return in;
  }

  /// Q = V + A - mean(A).
  std::vector<double> q(const double* x) const {
    const auto h = head(x);
    const int n = layout.num_actions;
    double mean = 0.0;
    for (int j = 0; j < n; ++j) mean += h[1 + j];
    mean /= n;
    std::vector<double> q(n);
    for (int j = 0; j < n; ++j) q[j] = h[0] + h[1 + j] - mean;
    return q;
  }
};

inline int ref_argmax(const std::vector<double>& q) {
  return static_cast<int>(std::max_element(q.begin(), q.end()) - q.begin());
}

/// A batch in host memory (float values, as the device sees them).
struct RefBatch {
  int size = 0, obs_dim = 0;
  std::vector<float> states, next_states, rewards, discounts, is_weights;
  std::vector<std::int32_t> actions;
};

/// What the loss produces, in float64.
struct RefLoss {
  double loss = 0.0, mean_q = 0.0, mean_abs_td = 0.0;
  std::vector<double> abs_td;
};

inline RefLoss ref_loss(const RefNet& online, const RefNet& target, const RefBatch& b, LossKind kind) {
  RefLoss r;
  const int D = b.obs_dim;
  for (int i = 0; i < b.size; ++i) {
    std::vector<double> s(b.states.begin() + std::size_t(i) * D, b.states.begin() + std::size_t(i + 1) * D);
    std::vector<double> s2(b.next_states.begin() + std::size_t(i) * D, b.next_states.begin() + std::size_t(i + 1) * D);
    const double q = online.q(s.data())[b.actions[i]];
    const int a_star = ref_argmax(online.q(s2.data()));
    const double y = double(b.rewards[i]) + double(b.discounts[i]) * target.q(s2.data())[a_star];
    const double td = q - y;
    const double l = kind == LossKind::huber ? (std::abs(td) <= 1.0 ? 0.5 * td * td : std::abs(td) - 0.5) : td * td;
    r.loss += double(b.is_weights[i]) * l;
    r.mean_q += q;
    r.mean_abs_td += std::abs(td);
    r.abs_td.push_back(std::abs(td));
  }
  r.loss /= b.size;
  r.mean_q /= b.size;
  r.mean_abs_td /= b.size;
  return r;
}

/// Random batch whose rewards put some TD errors beyond the Huber delta and
/// some inside it; a few rows terminal (discount 0).
inline RefBatch random_batch(int size, int obs_dim, int num_actions, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  RefBatch b;
  b.size = size;
  b.obs_dim = obs_dim;
  for (int i = 0; i < size * obs_dim; ++i) b.states.push_back(u(rng));
  for (int i = 0; i < size * obs_dim; ++i) b.next_states.push_back(u(rng));
  for (int i = 0; i < size; ++i) {
    b.actions.push_back(static_cast<std::int32_t>(rng() % num_actions));
    b.rewards.push_back(i % 2 == 0 ? 3.0f * (u(rng) > 0 ? 1.0f : -1.0f) : 0.3f * u(rng));
    b.discounts.push_back(i % 5 == 0 ? 0.0f : 0.970299f);
    b.is_weights.push_back(0.6f + 0.4f * u(rng));
  }
  return b;
}

/// A RefBatch as a device Batch (replay indices 0).
template <class Exec>
foxrl::Batch<typename Exec::memory_space> to_device(const Exec& space, const RefBatch& b) {
  foxrl::Batch<typename Exec::memory_space> d;
  d.states = to_device(space, b.states, b.size, b.obs_dim);
  d.next_states = to_device(space, b.next_states, b.size, b.obs_dim);
  d.actions = to_device(space, b.actions);
  d.rewards = to_device(space, b.rewards);
  d.discounts = to_device(space, b.discounts);
  d.is_weights = to_device(space, b.is_weights);
  d.indices = to_device(space, std::vector<std::int64_t>(b.size, 0));
  return d;
}

/// A host copy of a rank-1 float View as a vector (fences: tests only).
template <class Exec, class View>
std::vector<float> flat_host(const Exec& space, const View& v) {
  const auto h = to_host(space, v);
  return std::vector<float>(h.data(), h.data() + h.extent(0));
}

}  // namespace foxrl::test
