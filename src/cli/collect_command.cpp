// foxrl collect: record a dataset of transitions for offline training, with
// a uniform random policy or the (epsilon-)greedy policy of a trained run.
#include "cli/commands.hpp"
#include "cli/option_checks.hpp"
#include "core/execution_context.hpp"
#include "evaluate/collect_dataset.hpp"
#include "io/output_dir.hpp"
#include "train/checkpoint_store.hpp"
#include "train/run_manifest.hpp"

#include <iostream>
#include <memory>

namespace foxrl::cli {
namespace {

struct CollectArgs {
  std::string config_file;
  std::vector<std::string> overrides;
  CollectOptions options;
};

int run_collect(CollectArgs args) {
  auto& o = args.options;
  // The env of a network policy is its run's (same observations), unless
  // --config names another; --set applies on top either way.
  if (!args.config_file.empty()) {
    o.config = TrainConfig::from_json_file(args.config_file);
  } else if (!o.run_dir.empty()) {
    o.config = RunManifest::read(CheckpointStore::resolve(o.run_dir)).config;
  }
  o.config.apply_overrides(args.overrides);
  prepare_output_file_directory(o.out_path, "--out");
  // The run's one stream, as in train and rollout.
  ExecutionContext<> context(o.config.seed);
  const auto summary = collect_dataset(context.space(), o);
  std::cout << "foxrl collect: " << summary.transitions << " transitions of " << o.config.env << " ("
            << o.config.num_envs << " envs x " << summary.iterations << " steps, " << summary.obs_dim
            << " features, policy " << o.policy << ") written to " << o.out_path << "\n";
  return 0;
}

}  // namespace

Command add_collect_command(CLI::App& app) {
  auto args = std::make_shared<CollectArgs>();
  auto* cmd = app.add_subcommand("collect", "Record a dataset of transitions (safetensors) for offline training");
  cmd->add_option("--config", args->config_file, "JSON config of the env (keys: see `foxrl train --help-config`)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--set", args->overrides, "Override a config key: --set key=value (repeatable)");
  cmd->add_option("--policy", args->options.policy, "Behaviour policy")
      ->check(CLI::IsMember({"random", "epsilon-greedy", "greedy"}))
      ->capture_default_str();
  cmd->add_option("--epsilon", args->options.epsilon, "Exploration rate of epsilon-greedy")
      ->check(finite_range(0.0, 1.0))
      ->capture_default_str();
  cmd->add_option("--run", args->options.run_dir,
                  "Run directory of `foxrl train` whose policy acts (greedy, epsilon-greedy)");
  cmd->add_option("--steps", args->options.transitions, "Transitions to record (over all envs)")
      ->required()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--split", args->options.split, "Market: the time split the envs replay")
      ->check(CLI::IsMember({"train", "validation", "test"}))
      ->capture_default_str();
  cmd->add_option("--out", args->options.out_path, "Output safetensors file")->required();
  return [cmd, args]() { return cmd->parsed() ? run_collect(*args) : -1; };
}

}  // namespace foxrl::cli
