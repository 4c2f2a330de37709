#pragma once
// Rollouts: replay a fixed action sequence in one environment and record
// every step (the `foxrl rollout` subcommand). A tool path, not a hot path:
// it reads each step back to the host.

#include "config/train_config.hpp"
#include "core/compat.hpp"
#include "core/error.hpp"
#include "envs/vector_env.hpp"

#include <Kokkos_Core.hpp>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace foxrl {

/// What a rollout records: row k is the k-th step (observation acted on,
/// action, reward, flags). Observations are row-major [steps, obs_dim].
struct RolloutTrace {
  std::string env;
  int obs_dim = 0;
  std::vector<float> observations;
  std::vector<std::int32_t> actions;
  std::vector<float> rewards;
  std::vector<std::uint8_t> terminated, truncated;
  std::size_t size() const { return actions.size(); }
};

struct RolloutOptions {
  /// The env and its keys as a run of it would set them: `env`, `seed` (the
  /// reset and start-bar draws) and the env's own keys (market: data,
  /// synthetic, synthetic_bars, window, features, positions, cost_bps,
  /// episode_length, allow_implausible_bars). A data-driven env replays
  /// all of its data (EnvSplit::whole).
  TrainConfig config;
  std::string actions_path;  ///< one action per line ('#' comments and blank lines ignored)
  /// Envs with a settable state (VectorEnv::state_variables): start from
  /// these values instead of a seeded reset; empty: the seeded reset.
  std::vector<double> initial_state;
  std::string out_path;  ///< CSV output
};

/// Reads an action file: one integer in [0, num_actions) per line. Throws
/// UsageError naming the file, line and value of a bad line.
std::vector<std::int32_t> read_action_file(const std::string& path, int num_actions);

/// Parses --initial-state: comma-separated finite numbers (the env checks
/// how many it takes).
std::vector<double> parse_initial_state(const std::string& text);

/// Writes the trace as CSV: step,obs_0..obs_{D-1},action,reward,terminated,truncated.
void write_rollout_csv(const std::string& path, const RolloutTrace& trace);

/// Runs options on the default execution space and writes options.out_path.
RolloutTrace run_rollout(const RolloutOptions& options);

/// Steps `env` (its env 0; the env should hold one env) through `actions`.
template <class ExecSpace, class Env>
RolloutTrace rollout_steps(const ExecSpace& space, Env& env, const std::vector<std::int32_t>& actions) {
  using mem = typename ExecSpace::memory_space;
  RolloutTrace trace;
  const int D = env.obs_dim();
  trace.obs_dim = D;
  Kokkos::View<std::int32_t*, mem> action(
      Kokkos::view_alloc(space, Kokkos::WithoutInitializing, "foxrl::Rollout::action"), env.num_envs());
  Kokkos::deep_copy(space, action, 0);
  // create_mirror, not create_mirror_view: on host backends the latter
  // would alias the env's Views, which the step overwrites.
  auto h_obs = Kokkos::create_mirror(env.observations());
  const auto& result = env.step_result();
  auto h_reward = Kokkos::create_mirror(result.rewards);
  auto h_term = Kokkos::create_mirror(result.terminated);
  auto h_trunc = Kokkos::create_mirror(result.truncated);
  for (std::int32_t a : actions) {
    Kokkos::deep_copy(space, h_obs, env.observations());
    Kokkos::deep_copy(space, Kokkos::subview(action, 0), a);
    env.step(space, action);
    Kokkos::deep_copy(space, h_reward, result.rewards);
    Kokkos::deep_copy(space, h_term, result.terminated);
    Kokkos::deep_copy(space, h_trunc, result.truncated);
    compat::fence(space, "foxrl::Rollout::read_step");
    for (int j = 0; j < D; ++j) trace.observations.push_back(h_obs(0, j));
    trace.actions.push_back(a);
    trace.rewards.push_back(h_reward(0));
    trace.terminated.push_back(h_term(0));
    trace.truncated.push_back(h_trunc(0));
  }
  return trace;
}

/// Builds the env `options` describes on `space` (one env) and replays `actions`.
template <class ExecSpace>
RolloutTrace rollout(const ExecSpace& space, const RolloutOptions& options, const std::vector<std::int32_t>& actions) {
  const EnvData<ExecSpace> data(space, options.config);
  VectorEnv<ExecSpace> env = make_vector_env(space, options.config, data, 1, options.config.seed, EnvSplit::whole);
  if (!options.initial_state.empty()) env.set_state(space, 0, options.initial_state, "--initial-state");
  auto trace = rollout_steps(space, env, actions);
  trace.env = env.name();
  return trace;
}

}  // namespace foxrl
