// foxrl rollout: replay an action file in one env of any registered kind and
// write every step to CSV (envs/rollout.hpp).
#include "cli/commands.hpp"
#include "cli/option_checks.hpp"
#include "envs/rollout.hpp"

#include <iostream>
#include <memory>

namespace foxrl::cli {
namespace {

struct RolloutArgs {
  RolloutOptions options;
  std::string initial_state;
  double cost = 0.0005;  ///< market: cost per unit of position change, as a fraction
};

}  // namespace

Command add_rollout_command(CLI::App& app) {
  auto args = std::make_shared<RolloutArgs>();
  TrainConfig& c = args->options.config;
  c.env = "cartpole";
  c.seed = 0;
  c.synthetic_bars = 20000;
  c.features = "returns";
  auto* cmd = app.add_subcommand("rollout", "Replay an action sequence in one environment and write every step to CSV");
  cmd->add_option("--env", c.env, "Environment: a registered env (`foxrl info` lists them)")->capture_default_str();
  cmd->add_option("--seed", c.seed, "Seed of the reset / start-bar draws")
      ->check(CLI::NonNegativeNumber)  // "-1" would otherwise wrap to 2^64 - 1
      ->capture_default_str();
  cmd->add_option("--actions", args->options.actions_path, "Action file: one integer action per line")->required();
  cmd->add_option("--initial-state", args->initial_state,
                  "Envs with a settable state: start from these comma-separated values (CartPole: "
                  "x,x_dot,theta,theta_dot) instead of a seeded reset");
  cmd->add_option("--data", c.data,
                  "Market only: OHLCV CSV (timestamp,open,high,low,close,volume); default: synthetic");
  cmd->add_option("--synthetic", c.synthetic, "Market only: generator without --data (regime, benchmark)")
      ->capture_default_str();
  // Integer ranges as `foxrl train` bounds the same keys (synthetic_bars,
  // episode_length, window), so a bad value is named by its option here
  // rather than by a component's field later.
  cmd->add_option("--bars", c.synthetic_bars, "Market only: bars of the synthetic series")
      ->check(CLI::Range(std::int64_t(2), std::int64_t(100000000)))
      ->capture_default_str();
  cmd->add_option("--episode-length", c.episode_length, "Market only: steps per episode")
      ->check(CLI::Range(std::int64_t(1), std::int64_t(1000000000)))
      ->capture_default_str();
  cmd->add_option("--window", c.window, "Market only: lookback window W")
      ->check(CLI::Range(std::int64_t(1), std::int64_t(4096)))
      ->capture_default_str();
  cmd->add_option("--features", c.features, "Market only: feature set (returns, ohlcv)")->capture_default_str();
  cmd->add_option("--positions", c.positions,
                  "Market only: actions short, flat, long (long_short) or flat, long (long_only)")
      ->check(CLI::IsMember({"long_short", "long_only"}))
      ->capture_default_str();
  cmd->add_option("--cost", args->cost, "Market only: cost per unit of position change")
      ->check(finite_range(0.0, 1.0))  // inf would write -inf rewards, NaN NaN rewards
      ->capture_default_str();
  cmd->add_flag("--allow-implausible-bars", c.allow_implausible_bars,
                "Market only: accept --data bars that move more than 10x within a bar or from the last close");
  cmd->add_option("--out", args->options.out_path, "Output CSV")->required();
  return [cmd, args]() {
    if (!cmd->parsed()) return -1;
    RolloutOptions options = args->options;
    if (!args->initial_state.empty()) options.initial_state = parse_initial_state(args->initial_state);
    options.config.cost_bps = args->cost * 1e4;
    const RolloutTrace trace = run_rollout(options);
    std::cout << "foxrl rollout: " << trace.size() << " steps of " << trace.env << " written to " << options.out_path
              << "\n";
    return 0;
  };
}

}  // namespace foxrl::cli
