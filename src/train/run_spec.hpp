#pragma once
// From a TrainConfig to the run's components: the one place config keys
// become component configs (learner, replay, exploration, market env,
// feature window, normaliser mask) and the env, market data and adapter
// are built. The trainer, the Policy (`foxrl infer`), `foxrl collect` and
// `foxrl eval` all go through it, so a run is evaluated and served with the
// observations it was trained on.

#include "agents/dqn/dqn_learner.hpp"
#include "collect/action_selector.hpp"
#include "config/train_config.hpp"
#include "core/error.hpp"
#include "core/strings.hpp"
#include "envs/env_registry.hpp"
#include "envs/vector_env.hpp"
#include "kernels/nn/matmul_precision.hpp"
#include "market/market_env.hpp"
#include "market/market_setup.hpp"
#include "market/signal_adapter.hpp"
#include "replay/replay_buffer.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace foxrl {

/// Everything a TrainConfig decides about the components, on the host,
/// before any device memory exists.
struct RunSpec {
  std::string env = "market";  ///< the registered env (envs/env_registry.hpp)
  int num_envs = 0;
  int obs_dim = 0;
  int num_actions = 0;
  MarketEnvConfig market_env;  ///< market: observation, episode length, cost
  /// Market: bars of the rolling statistics MarketFeatures computes, the
  /// observation's own rolling_window() (MarketEnv checks the two agree).
  int feature_window = 0;
  /// Whether observations go through a SignalAdapter (market), and which
  /// of their entries it normalises.
  bool normalizes = false;
  std::vector<std::uint8_t> normalize_mask;
  ReplayConfig replay;
  EpsilonSchedule epsilon;

  /// The env's spaces as the registry gives them.
  EnvSpaces spaces() const { return {obs_dim, num_actions, normalize_mask}; }
};

/// The spec of `config` (validated by the caller: TrainConfig::validate()).
inline RunSpec run_spec(const TrainConfig& config) {
  RunSpec s;
  s.env = config.env;
  s.num_envs = static_cast<int>(config.num_envs);
  const EnvSpaces spaces = env_spaces(config);  // UsageError for an env that is not registered
  s.obs_dim = spaces.obs_dim;
  s.num_actions = spaces.num_actions;
  s.normalizes = !spaces.normalize_mask.empty();
  s.normalize_mask = spaces.normalize_mask;
  // The market's keys as its env reads them (what market evaluations and
  // policies build their envs with); inert for other envs.
  s.market_env = market_env_config(config);
  s.feature_window = s.market_env.observation.rolling_window();

  ReplayConfig& rc = s.replay;
  rc.capacity = config.buffer_capacity;
  rc.obs_dim = s.obs_dim;
  rc.num_envs = s.num_envs;
  rc.n_step = static_cast<int>(config.n_step);
  rc.max_batch = static_cast<int>(config.batch_size);
  rc.alpha = static_cast<float>(config.per_alpha);
  rc.seed = config.seed;

  s.epsilon.start = config.eps_start;
  s.epsilon.end = config.eps_end;
  s.epsilon.decay_env_steps = static_cast<double>(config.eps_decay_env_steps);
  return s;
}

/// The market split called `name` ("train", "validation" or "test");
/// UsageError naming --split when it holds no bar.
inline MarketSplit market_split(const MarketSplits& splits, const std::string& name) {
  MarketSplit split;
  if (name == "train") {
    split = splits.train;
  } else if (name == "validation") {
    split = splits.validation;
  } else if (name == "test") {
    split = splits.test;
  } else {
    throw UsageError("--split " + quote_excerpt(name) + ": expected train, validation or test");
  }
  if (split.size() <= 0) {
    throw UsageError("--split " + name + ": the " + name +
                     " split holds no bars of this data (train_end and test_start set where it begins and ends)");
  }
  return split;
}

/// The run's signal adapter (learning statistics), or none when the env's
/// observations go to the network as they are.
template <class ExecSpace>
std::optional<SignalAdapter<ExecSpace>> make_adapter(const ExecSpace& space, const RunSpec& spec) {
  std::optional<SignalAdapter<ExecSpace>> adapter;
  if (spec.normalizes) adapter.emplace(space, spec.obs_dim, SignalAdapterConfig{}, spec.normalize_mask);
  return adapter;
}

}  // namespace foxrl
