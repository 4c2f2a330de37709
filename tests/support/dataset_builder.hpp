#pragma once
// A dataset in `foxrl collect`'s format built by hand on the host, for the
// offline dataset tests: known episodes per env (rows interleaved as collect
// records them, row t * num_envs + i), every tensor and metadata key as
// collect writes them, and a way to write it (or a broken copy of it).

#include "config/train_config.hpp"
#include "io/safetensors.hpp"

#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace foxrl::test {

/// One behaviour episode of the hand-built dataset: its rewards, and how it
/// ends (terminated, truncated, or neither: cut by the end of the recording).
struct EpisodeSpec {
  std::vector<float> rewards;
  bool terminated = true;
  bool truncated = false;
};

/// A CartPole dataset (4 features, 2 actions) in host vectors.
struct HostDataset {
  int num_envs = 1;
  int obs_dim = 4;
  int num_actions = 2;
  std::vector<float> observations, next_observations, rewards;
  std::vector<std::int32_t> actions;
  std::vector<std::uint8_t> terminated, truncated;

  std::int64_t rows() const { return static_cast<std::int64_t>(actions.size()); }

  /// Rows from `episodes[i]`, env i's episodes in order. Every env must
  /// have the same number of steps, except that the last iteration may
  /// cover the first envs only (as collect records a partial iteration).
  /// Observations are distinct per env and step; a continuing row's next
  /// observation is the same env's next observation, a reset one is not.
  static HostDataset from_episodes(const std::vector<std::vector<EpisodeSpec>>& episodes) {
    HostDataset d;
    d.num_envs = static_cast<int>(episodes.size());
    struct Step {
      float reward;
      bool term, trunc, last_of_episode;
    };
    std::vector<std::vector<Step>> steps(episodes.size());
    for (std::size_t i = 0; i < episodes.size(); ++i) {
      for (const auto& e : episodes[i]) {
        for (std::size_t k = 0; k < e.rewards.size(); ++k) {
          const bool last = k + 1 == e.rewards.size();
          steps[i].push_back({e.rewards[k], last && e.terminated, last && e.truncated, last});
        }
      }
    }
    std::size_t iterations = 0;
    for (const auto& s : steps) iterations = std::max(iterations, s.size());
    std::vector<float> state(episodes.size() * 4);
    std::vector<int> resets(episodes.size(), 0);
    for (std::size_t i = 0; i < episodes.size(); ++i) state_for(&state[i * 4], int(i), 0, 0);
    for (std::size_t t = 0; t < iterations; ++t) {
      for (std::size_t i = 0; i < episodes.size(); ++i) {
        if (t >= steps[i].size()) continue;
        const Step& s = steps[i][t];
        float* obs = &state[i * 4];
        float next[4];
        state_for(next, int(i), resets[i], int(t) + 1);
        d.observations.insert(d.observations.end(), obs, obs + 4);
        d.next_observations.insert(d.next_observations.end(), next, next + 4);
        d.actions.push_back(static_cast<std::int32_t>((t * 7 + i * 3) % 2));
        d.rewards.push_back(s.reward);
        d.terminated.push_back(s.term ? 1 : 0);
        d.truncated.push_back(s.trunc ? 1 : 0);
        if (s.term || s.trunc) {
          ++resets[i];
          state_for(obs, int(i), resets[i], -1);  // an auto-reset observation: not `next`
        } else {
          std::memcpy(obs, next, sizeof next);
        }
      }
    }
    return d;
  }

  /// The metadata collect writes for this dataset (CartPole's config).
  std::map<std::string, std::string> metadata() const {
    TrainConfig config;
    config.env = "cartpole";
    config.num_envs = num_envs;
    std::map<std::string, std::string> m;
    m["format"] = "foxrl.dataset";
    m["format_version"] = "1";
    m["env"] = "cartpole";
    m["obs_dim"] = std::to_string(obs_dim);
    m["num_actions"] = std::to_string(num_actions);
    m["num_envs"] = std::to_string(num_envs);
    m["transitions"] = std::to_string(rows());
    m["row_order"] = "row = iteration * num_envs + env";
    m["policy"] = "random";
    m["epsilon"] = "1";
    m["seed"] = "1";
    m["config"] = config.to_json();
    return m;
  }

  /// The whole file: the six tensors and metadata().
  safetensors::File file() const {
    safetensors::File f;
    const std::int64_t T = rows();
    f.tensors.push_back(safetensors::make_f32("observations", {T, obs_dim}, observations.data()));
    f.tensors.push_back(bytes_tensor("actions", "I32", {T}, actions));
    f.tensors.push_back(safetensors::make_f32("rewards", {T}, rewards.data()));
    f.tensors.push_back(safetensors::make_f32("next_observations", {T, obs_dim}, next_observations.data()));
    f.tensors.push_back(bytes_tensor("terminated", "U8", {T}, terminated));
    f.tensors.push_back(bytes_tensor("truncated", "U8", {T}, truncated));
    f.metadata = metadata();
    return f;
  }

  void write(const std::string& path) const { safetensors::write(path, file()); }

  /// A tensor of raw values with the given safetensors dtype.
  template <class T>
  static safetensors::Tensor bytes_tensor(const std::string& name, const std::string& dtype,
                                          std::vector<std::int64_t> shape, const std::vector<T>& values) {
    safetensors::Tensor t;
    t.name = name;
    t.dtype = dtype;
    t.shape = std::move(shape);
    t.data.resize(values.size() * sizeof(T));
    if (!values.empty()) std::memcpy(t.data.data(), values.data(), t.data.size());
    return t;
  }

 private:
  /// A recognisable observation of env `env` after `resets` resets at step
  /// `step` (-1: a reset observation).
  static void state_for(float* s, int env, int resets, int step) {
    s[0] = float(env);
    s[1] = float(resets);
    s[2] = float(step);
    s[3] = step < 0 ? -0.5f : 0.25f * float(step % 8);
  }
};

}  // namespace foxrl::test
