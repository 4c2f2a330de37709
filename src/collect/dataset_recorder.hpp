#pragma once
// DatasetRecorder: transitions of a vectorized env, recorded on the device
// for an offline dataset (`foxrl collect`). Row t * N + i is env i's step in
// iteration t: the observation acted on, the action, the reward, the real
// next observation (before any auto-reset) and both flags. Two launches per
// iteration, both on the run's instance; the host sees the data once, when
// write() copies it out.

#include "core/error.hpp"
#include "core/validate.hpp"
#include "io/state_archive.hpp"
#include "kernels/collect/dataset_kernels.hpp"
#include "views/envs/env_step.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <map>
#include <string>

namespace foxrl {

template <class ExecSpace>
class DatasetRecorder {
 public:
  using memory_space = typename ExecSpace::memory_space;
  using matrix = Kokkos::View<float**, Kokkos::LayoutRight, memory_space>;
  using const_matrix = Kokkos::View<const float**, Kokkos::LayoutRight, memory_space>;

  /// Room for `rows` transitions of `num_envs` envs with `obs_dim` features
  /// (the whole dataset lives in device memory until write()).
  DatasetRecorder(const ExecSpace& space, std::int64_t rows, int num_envs, int obs_dim)
      : rows_(rows), num_envs_(num_envs), obs_dim_(obs_dim) {
    require_positive("DatasetRecorder", "rows", rows);
    require_positive("DatasetRecorder", "num_envs", num_envs);
    require_positive("DatasetRecorder", "obs_dim", obs_dim);
    auto alloc = [&](const char* name) {
      return Kokkos::view_alloc(space, Kokkos::WithoutInitializing, std::string("foxrl::DatasetRecorder::") + name);
    };
    observations_ = matrix(alloc("observations"), rows, obs_dim);
    next_observations_ = matrix(alloc("next_observations"), rows, obs_dim);
    actions_ = Kokkos::View<std::int32_t*, memory_space>(alloc("actions"), rows);
    rewards_ = Kokkos::View<float*, memory_space>(alloc("rewards"), rows);
    terminated_ = Kokkos::View<std::uint8_t*, memory_space>(alloc("terminated"), rows);
    truncated_ = Kokkos::View<std::uint8_t*, memory_space>(alloc("truncated"), rows);
  }

  std::int64_t rows() const { return rows_; }
  /// Iterations that fill every row (the last may be partly recorded).
  std::int64_t iterations() const { return (rows_ + num_envs_ - 1) / num_envs_; }

  /// The observations [N, D] iteration `t` acts on (before the env step
  /// overwrites them).
  void record_observations(const ExecSpace& space, std::int64_t t, const const_matrix& obs) const {
    kernels::record_observations(space, observations_, t * num_envs_, rows_, num_envs_, obs);
  }

  /// The actions of iteration `t` and what the env step returned.
  void record_step(const ExecSpace& space, std::int64_t t,
                   const Kokkos::View<const std::int32_t*, memory_space>& actions,
                   const EnvStep<memory_space>& step) const {
    kernels::record_step(space, next_observations_, actions_, rewards_, terminated_, truncated_, t * num_envs_, rows_,
                         num_envs_, actions, step);
  }

  /// Copies the dataset to the host and writes it to `path` atomically
  /// (safetensors: observations, actions, rewards, next_observations,
  /// terminated, truncated) with `metadata`; `extra` adds host tensors.
  void write(const ExecSpace& space, const std::string& path, const std::map<std::string, std::string>& metadata,
             StateWriter<ExecSpace> extra = {}) const {
    StateWriter<ExecSpace>& w = extra;
    w.tensor(space, "observations", observations_);
    w.tensor(space, "actions", actions_);
    w.tensor(space, "rewards", rewards_);
    w.tensor(space, "next_observations", next_observations_);
    w.tensor(space, "terminated", terminated_);
    w.tensor(space, "truncated", truncated_);
    for (const auto& [k, v] : metadata) w.metadata()[k] = v;
    w.write(space, path);
  }

 private:
  std::int64_t rows_;
  int num_envs_;
  int obs_dim_;
  matrix observations_, next_observations_;
  Kokkos::View<std::int32_t*, memory_space> actions_;
  Kokkos::View<float*, memory_space> rewards_;
  Kokkos::View<std::uint8_t*, memory_space> terminated_, truncated_;
};

}  // namespace foxrl
