#pragma once
// OfflineSampler: uniform minibatches from an OfflineDataset, drawn on the
// device: one launch per batch on the run's instance, no host read-back, no
// allocation after construction. Row k of call c is a counter-based draw of
// (derived seed, c, k), so a sequence of batches is a pure function of the
// seed and the same on every backend; sample_calls() and
// restore_counters() carry the stream across a checkpoint.
//
// The batch is the replay buffer's Batch, so a learner's loss takes either:
// `foxrl collect` records one-step transitions, so rewards are r_t and
// discounts gamma * (1 - terminated_t) (n = 1); a truncated transition
// bootstraps from its real next state (never a reset one); indices are the
// dataset rows and is_weights 1.

#include "core/error.hpp"
#include "core/validate.hpp"
#include "kernels/core/counter_rng.hpp"
#include "kernels/offline/uniform_sample.hpp"
#include "offline/offline_dataset.hpp"
#include "views/offline/offline_storage.hpp"
#include "views/replay/batch.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <limits>
#include <string>
#include <utility>

namespace foxrl {

/// Settings of an OfflineSampler.
struct OfflineSamplerConfig {
  int max_batch = 256;     ///< largest batch (buffers are preallocated), 1 .. 65536
  float gamma = 0.99f;     ///< one-step discount, in [0, 1]
  std::uint64_t seed = 0;  ///< root of the sampling stream (derive_seed(seed, rng_tag::offline_sample))
};

/// Uniform sampling with replacement from a device-resident dataset.
template <class ExecSpace>
class OfflineSampler {
 public:
  using memory_space = typename ExecSpace::memory_space;
  static constexpr int max_batch_limit = 1 << 16;

  /// Keeps a reference to `dataset`'s Views (they stay alive with the
  /// sampler) and allocates the batch buffers on `space`.
  OfflineSampler(const ExecSpace& space, const OfflineDataset<ExecSpace>& dataset, const OfflineSamplerConfig& config)
      : data_(dataset.storage()),
        config_(config),
        seed_(kernels::derive_seed(config.seed, kernels::rng_tag::offline_sample)) {
    const std::string owner = "foxrl::OfflineSamplerConfig";
    require_in_range(owner, "max_batch", config.max_batch, 1, max_batch_limit);
    require(config.gamma >= 0.0f && config.gamma <= 1.0f, owner, "gamma", config.gamma, "must be in [0, 1]");
    const int D = data_.obs_dim();
    if (std::int64_t(config.max_batch) * D > std::numeric_limits<int>::max()) {
      throw UsageError(owner + ": max_batch " + std::to_string(config.max_batch) + " x " + std::to_string(D) +
                       " features exceeds 2^31 - 1 batch elements");
    }
    auto alloc = [&](const char* name) {
      return Kokkos::view_alloc(space, Kokkos::WithoutInitializing, std::string("foxrl::OfflineSampler::") + name);
    };
    const int B = config.max_batch;
    using matrix = typename Batch<memory_space>::matrix;
    using vector = typename Batch<memory_space>::vector;
    buffers_.states = matrix(alloc("states"), B, D);
    buffers_.next_states = matrix(alloc("next_states"), B, D);
    buffers_.actions = Kokkos::View<std::int32_t*, memory_space>(alloc("actions"), B);
    buffers_.rewards = vector(alloc("rewards"), B);
    buffers_.discounts = vector(alloc("discounts"), B);
    buffers_.indices = Kokkos::View<std::int64_t*, memory_space>(alloc("indices"), B);
    buffers_.is_weights = vector(alloc("is_weights"), B);
  }

  /// Draws `batch_size` rows uniformly (with replacement) into the batch
  /// buffers, one launch ("foxrl::OfflineDataset::sample"), and advances the
  /// call counter. The returned Views alias buffers the next call overwrites.
  Batch<memory_space> sample(const ExecSpace& space, int batch_size) {
    if (batch_size < 1 || batch_size > config_.max_batch) {
      throw LogicError("foxrl::OfflineSampler::sample: batch size " + std::to_string(batch_size) +
                       " outside [1, max_batch = " + std::to_string(config_.max_batch) + "]");
    }
    const auto rows = std::make_pair(0, batch_size);
    Batch<memory_space> out;
    out.states = Kokkos::subview(buffers_.states, rows, Kokkos::ALL);
    out.next_states = Kokkos::subview(buffers_.next_states, rows, Kokkos::ALL);
    out.actions = Kokkos::subview(buffers_.actions, rows);
    out.rewards = Kokkos::subview(buffers_.rewards, rows);
    out.discounts = Kokkos::subview(buffers_.discounts, rows);
    out.indices = Kokkos::subview(buffers_.indices, rows);
    out.is_weights = Kokkos::subview(buffers_.is_weights, rows);
    kernels::uniform_sample(space, data_, out, seed_, calls_, config_.gamma);
    ++calls_;
    return out;
  }

  /// Calls of sample() so far (the stream of the next call).
  std::uint64_t sample_calls() const { return calls_; }
  /// Continues a saved stream (resume): the next sample() is call `calls`.
  void restore_counters(std::uint64_t calls) { calls_ = calls; }
  const OfflineSamplerConfig& config() const { return config_; }

 private:
  OfflineStorage<memory_space> data_;
  OfflineSamplerConfig config_;
  std::uint64_t seed_;
  std::uint64_t calls_ = 0;
  Batch<memory_space> buffers_;
};

}  // namespace foxrl
