// foxrl collect: record a dataset of transitions for offline training, with
// a uniform random policy or the (epsilon-)greedy policy of a trained run.
#include "cli/commands.hpp"
#include "cli/option_checks.hpp"
#include "evaluate/collect_request.hpp"

#include <iostream>
#include <memory>

namespace foxrl::cli {
namespace {

using CollectArgs = CollectRequest;

int run_collect(const CollectArgs& args) {
  std::string line;
  collect(args, &line);
  std::cout << line << "\n";
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
