// foxrl train-offline: train an IQL, CQL or BC agent on a dataset recorded
// by `foxrl collect`, evaluating its greedy policy in the dataset's env. The
// run itself is the library's OfflineTrainingRun; this file turns arguments
// into its config and prints its log.
#include "cli/commands.hpp"
#include "offline/offline_training_run.hpp"
#include "run/checkpoint_store.hpp"

#include <iostream>
#include <memory>

namespace foxrl::cli {
namespace {

struct TrainOfflineArgs {
  std::string config_file;
  std::string dataset;
  std::string algo;
  std::vector<std::string> overrides;
  bool help_config = false;
  bool resume = false;
  bool auto_resume = false;
  bool overwrite = false;
};

/// The config from --config (or, resuming without it, the run's saved
/// one), then --algo, --dataset and --set on top.
OfflineTrainConfig build_config(const TrainOfflineArgs& args, bool resume) {
  OfflineTrainConfig config =
      args.config_file.empty() ? OfflineTrainConfig{} : OfflineTrainConfig::from_json_file(args.config_file);
  const auto apply_arguments = [&](OfflineTrainConfig& c) {
    if (!args.algo.empty()) c.apply_overrides({"algo=" + args.algo});
    if (!args.dataset.empty()) c.dataset = args.dataset;
    c.apply_overrides(args.overrides);
  };
  apply_arguments(config);
  if (resume && args.config_file.empty()) {
    const std::string out_dir = config.out_dir;
    config = OfflineTrainingRun::saved_config(out_dir);
    config.out_dir = out_dir;
    apply_arguments(config);
  }
  return config;
}

int run_train_offline(const TrainOfflineArgs& args) {
  if (args.help_config) {
    std::cout << "foxrl train-offline configuration keys (JSON file via --config, or --set key=value):\n"
              << OfflineTrainConfig::describe();
    return 0;
  }
  bool resume = args.resume, overwrite = args.overwrite;
  if (args.auto_resume) {
    // A requeued job runs the same command again: continue if there is a
    // checkpoint, else start (replacing an attempt that stopped before one).
    const OfflineTrainConfig probe = build_config(args, false);
    resume = !CheckpointStore(probe.out_dir).generations().empty();
    overwrite = !resume;
  }
  OfflineTrainingRun run(build_config(args, resume), resume, overwrite);
  run.on_log([](const std::string& line) { std::cout << line << std::endl; });
  run.run();
  return 0;
}

}  // namespace

Command add_train_offline_command(CLI::App& app) {
  auto args = std::make_shared<TrainOfflineArgs>();
  auto* cmd = app.add_subcommand(
      "train-offline",
      "Train an offline agent (IQL, CQL or BC) on a dataset of `foxrl collect`, evaluating it in the "
      "dataset's env");
  cmd->add_option("--dataset", args->dataset, "Dataset file of `foxrl collect` (the config key dataset)");
  cmd->add_option("--algo", args->algo, "Algorithm (the config key algo; default iql)")
      ->check(CLI::IsMember({"iql", "cql", "bc"}));
  cmd->add_option("--config", args->config_file, "JSON config file (keys: see --help-config)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--set", args->overrides, "Override a config key: --set key=value (repeatable)");
  cmd->add_flag("--help-config", args->help_config, "List every config key with its default and range");
  cmd->add_flag("--resume", args->resume,
                "Continue the run checkpointed in out_dir (its saved config, --set on top; only epochs may grow)");
  cmd->add_flag("--overwrite", args->overwrite, "Replace the run already in out_dir")->excludes("--resume");
  cmd->add_flag("--auto-resume", args->auto_resume,
                "Continue the run in out_dir if it has a checkpoint, else start it (for requeued jobs)")
      ->excludes("--resume")
      ->excludes("--overwrite");
  return [cmd, args]() { return cmd->parsed() ? run_train_offline(*args) : -1; };
}

}  // namespace foxrl::cli
