// foxrl train-offline: an offline run (train/offline_training_run.hpp); this
// file parses the arguments and prints the log.
#include "agents/learner_registry.hpp"
#include "cli/commands.hpp"
#include "train/offline_training_run.hpp"

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

int run_train_offline(const TrainOfflineArgs& args) {
  if (args.help_config) {
    std::cout << "foxrl train-offline configuration keys (JSON file via --config, or --set key=value):\n"
              << OfflineTrainConfig::describe() << "registered offline algorithms: " << offline_learner_names() << "\n";
    return 0;
  }
  // --algo and --dataset are the config keys of the same names, set before --set.
  std::vector<std::string> overrides;
  if (!args.algo.empty()) overrides.push_back("algo=" + args.algo);
  if (!args.dataset.empty()) overrides.push_back("dataset=" + args.dataset);
  overrides.insert(overrides.end(), args.overrides.begin(), args.overrides.end());
  RunStart start = args.auto_resume ? RunStart::auto_resume : run_start(args.resume, args.overwrite);
  const OfflineTrainConfig config = OfflineTrainingRun::config_for(args.config_file, overrides, start);
  OfflineTrainingRun run(config, start);
  run.on_log([](const std::string& line) { std::cout << line << std::endl; });
  run.run();
  return 0;
}

}  // namespace

Command add_train_offline_command(CLI::App& app) {
  auto args = std::make_shared<TrainOfflineArgs>();
  auto* cmd = app.add_subcommand(
      "train-offline",
      "Train an offline agent (IQL, CQL, BC, ...) on a dataset of `foxrl collect`, evaluating it in the "
      "dataset's env");
  cmd->add_option("--dataset", args->dataset, "Dataset file of `foxrl collect` (the config key dataset)");
  cmd->add_option("--algo", args->algo, "Algorithm: a registered offline learner (the config key algo; default iql)");
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
