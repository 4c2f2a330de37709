#pragma once
// Rollouts: replay a fixed action sequence in one environment and record
// every step (the `foxrl rollout` subcommand). A tool path, not a hot path:
// it reads each step back to the host.

#include "config/env_kind.hpp"
#include "core/compat.hpp"
#include "core/error.hpp"
#include "envs/cartpole_env.hpp"
#include "market/market_data.hpp"
#include "market/market_env.hpp"

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
  EnvKind env = EnvKind::cartpole;
  std::uint64_t seed = 0;
  std::string actions_path;  ///< one action per line ('#' comments and blank lines ignored)
  /// CartPole only: start from this state (x, x_dot, theta, theta_dot)
  /// instead of a seeded reset.
  std::optional<std::array<float, 4>> initial_state;
  std::string data_path;  ///< market only: OHLCV CSV; empty: a synthetic series
  LoadOptions load;       ///< market only: how data_path is validated
  std::string synthetic = "regime";
  std::size_t synthetic_bars = 20000;
  MarketEnvConfig market;  ///< market only: observation, episode length, cost
  std::string out_path;    ///< CSV output
};

/// Reads an action file: one integer in [0, num_actions) per line. Throws
/// UsageError naming the file, line and value of a bad line.
std::vector<std::int32_t> read_action_file(const std::string& path, int num_actions);

/// Parses "x,x_dot,theta,theta_dot" (four finite numbers).
std::array<float, 4> parse_initial_state(const std::string& text);

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
  switch (options.env) {
    case EnvKind::cartpole: {
      CartPoleEnv<ExecSpace> env(space, 1, options.seed);
      if (options.initial_state) env.set_state(space, 0, *options.initial_state);
      auto trace = rollout_steps(space, env, actions);
      trace.env = env_kind_name(options.env);
      return trace;
    }
    case EnvKind::market: {
      if (options.initial_state) throw UsageError("--initial-state applies to the cartpole env only");
      const MarketSeries series = options.data_path.empty()
                                      ? make_synthetic_market(options.synthetic, options.synthetic_bars, options.seed)
                                      : load_market_csv(options.data_path, options.load);
      // The one split is the whole series: a short one is the options' doing.
      const std::int64_t needed =
          std::int64_t(options.market.observation.min_decision_bar()) + std::int64_t(options.market.episode_length);
      if (static_cast<std::int64_t>(series.size()) < needed) {
        throw UsageError(series.source + ": " + std::to_string(series.size()) + " bars, too few for --episode-length " +
                         std::to_string(options.market.episode_length) + " after the lookback of --window " +
                         std::to_string(options.market.observation.window) + ": at least " + std::to_string(needed) +
                         " bars needed (--bars, --data)");
      }
      MarketFeatures<ExecSpace> market(space, series, options.market.observation.rolling_window());
      MarketEnv<ExecSpace> env(space, market, MarketSplit{0, market.size()}, 1, options.seed, options.market);
      auto trace = rollout_steps(space, env, actions);
      trace.env = env_kind_name(options.env);
      return trace;
    }
  }
  throw LogicError("rollout: unknown env kind");
}

/// Actions each env accepts (CartPole 2, market 3, or 2 long-only).
int env_num_actions(EnvKind env, const MarketEnvConfig& market = {});

}  // namespace foxrl
