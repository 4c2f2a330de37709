// foxrl command-line tool. Exit codes: 0 ok, 2 bad input (options, config,
// data or run files, unusable output directories), 1 runtime failure or
// internal error (the reason is printed, once, after "foxrl: ").
#include "cli/commands.hpp"
#include "cli/option_checks.hpp"
#include "core/error.hpp"
#include "core/execution_context.hpp"
#include "core/kernel_check.hpp"
#include "dist/communicator.hpp"
#include "envs/rollout.hpp"
#include "market/market_data.hpp"
#include "market/position_set.hpp"

#include <CLI/CLI.hpp>
#include <Kokkos_Core.hpp>
#ifdef KOKKOS_ENABLE_CUDA
#include <cuda_runtime_api.h>
#endif

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <string>

namespace {

/// Prints an error once, with the tool's one "foxrl: " prefix (messages
/// thrown by the library carry none; one that does is not doubled).
void report(const std::exception& e, const char* kind = "") {
  std::string what = e.what();
  const std::string prefix = "foxrl: ";
  if (what.compare(0, prefix.size(), prefix) == 0) what.erase(0, prefix.size());
  std::cerr << prefix << foxrl::dist::rank_label() << kind << what << "\n";
}

/// The exit code of a failure; a rank of a data-parallel run ends every
/// rank instead (the others would wait for it in their next all-reduce).
int failed(int rc) {
  std::cerr.flush();
  foxrl::dist::abort_if_distributed(rc);
  return rc;
}

#ifdef KOKKOS_ENABLE_CUDA
/// Kokkos' settings for this process: in a run of several ranks, the GPU
/// of this rank's place on its node (dist::device_for_local_rank), unless
/// KOKKOS_DEVICE_ID chooses one. Creates the world (MPI) before Kokkos, as
/// MPI launchers expect.
Kokkos::InitializationSettings kokkos_settings() {
  Kokkos::InitializationSettings settings;
  const auto world = foxrl::dist::world();
  if (world->size() > 1 && std::getenv("KOKKOS_DEVICE_ID") == nullptr) {
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess) devices = 0;
    settings.set_device_id(foxrl::dist::device_for_local_rank(world->local_rank(), devices));
  }
  return settings;
}
#endif

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"foxrl: GPU-resident deep Q-learning on Kokkos"};
  app.set_version_flag("--version", std::string("foxrl ") + FOXRL_VERSION);
  app.require_subcommand(1);

  const auto info = foxrl::cli::add_info_command(app);
  const auto train = foxrl::cli::add_train_command(app);
  const auto evaluate = foxrl::cli::add_eval_command(app);
  const auto infer = foxrl::cli::add_infer_command(app);
  const auto collect = foxrl::cli::add_collect_command(app);
  const auto dataset = foxrl::cli::add_dataset_command(app);
  const auto train_offline = foxrl::cli::add_train_offline_command(app);

  foxrl::RolloutOptions rollout;
  std::string initial_state, feature_set = "returns", rollout_env = "cartpole", positions = "long_short";
  auto* rollout_cmd =
      app.add_subcommand("rollout", "Replay an action sequence in one environment and write every step to CSV");
  rollout_cmd->add_option("--env", rollout_env, "Environment: cartpole or market")
      ->check(CLI::IsMember({"cartpole", "market"}))
      ->capture_default_str();
  rollout_cmd->add_option("--seed", rollout.seed, "Seed of the reset / start-bar draws")
      ->check(CLI::NonNegativeNumber)  // "-1" would otherwise wrap to 2^64 - 1
      ->capture_default_str();
  rollout_cmd->add_option("--actions", rollout.actions_path, "Action file: one integer action per line")->required();
  rollout_cmd->add_option("--initial-state", initial_state,
                          "CartPole only: start state x,x_dot,theta,theta_dot instead of a seeded reset");
  rollout_cmd->add_option("--data", rollout.data_path,
                          "Market only: OHLCV CSV (timestamp,open,high,low,close,volume); default: synthetic");
  rollout_cmd->add_option("--synthetic", rollout.synthetic, "Market only: generator without --data (regime, benchmark)")
      ->capture_default_str();
  // Integer ranges as `foxrl train` bounds the same keys (synthetic_bars,
  // episode_length, window), so a bad value is named by its option here
  // rather than by a component's field later.
  rollout_cmd->add_option("--bars", rollout.synthetic_bars, "Market only: bars of the synthetic series")
      ->check(CLI::Range(std::size_t(2), std::size_t(100000000)))
      ->capture_default_str();
  rollout_cmd->add_option("--episode-length", rollout.market.episode_length, "Market only: steps per episode")
      ->check(CLI::Range(1, 1000000000))
      ->capture_default_str();
  rollout_cmd->add_option("--window", rollout.market.observation.window, "Market only: lookback window W")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  rollout_cmd->add_option("--features", feature_set, "Market only: feature set (returns, ohlcv)")
      ->capture_default_str();
  rollout_cmd
      ->add_option("--positions", positions,
                   "Market only: actions short, flat, long (long_short) or flat, long (long_only)")
      ->check(CLI::IsMember({"long_short", "long_only"}))
      ->capture_default_str();
  rollout_cmd->add_option("--cost", rollout.market.cost, "Market only: cost per unit of position change")
      ->check(foxrl::cli::finite_range(0.0, 1.0))  // inf would write -inf rewards, NaN NaN rewards
      ->capture_default_str();
  rollout_cmd->add_flag("--allow-implausible-bars", rollout.load.allow_implausible_bars,
                        "Market only: accept --data bars that move more than 10x within a bar or from the last close");
  rollout_cmd->add_option("--out", rollout.out_path, "Output CSV")->required();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }

  try {
#ifdef KOKKOS_ENABLE_CUDA
    Kokkos::ScopeGuard kokkos(kokkos_settings());
#else
    Kokkos::ScopeGuard kokkos;
#endif
    foxrl::KernelCheck::install_from_environment();  // FOXRL_CHECK_KERNELS=1: name a failing kernel
    for (const auto& command : {train, evaluate, infer, collect, dataset, train_offline, info}) {
      if (const int rc = command(); rc >= 0) return rc;
    }
    if (rollout_cmd->parsed()) {
      if (!initial_state.empty()) rollout.initial_state = foxrl::parse_initial_state(initial_state);
      rollout.env = foxrl::parse_env_kind(rollout_env);
      rollout.market.observation.set = foxrl::parse_feature_set(feature_set);
      rollout.market.positions = foxrl::parse_position_set(positions);
      const auto trace = foxrl::run_rollout(rollout);
      std::cout << "foxrl rollout: " << trace.size() << " steps of " << trace.env << " written to " << rollout.out_path
                << "\n";
    }
  } catch (const foxrl::UsageError& e) {
    report(e);
    return failed(2);
  } catch (const foxrl::LogicError& e) {
    // A bug in foxrl itself, not the user's input.
    report(e, "internal error: ");
    return failed(1);
  } catch (const std::exception& e) {
    report(e);
    return failed(1);
  }
  return 0;
}
