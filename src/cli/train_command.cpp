// foxrl train: one run, a seed study or a walk-forward
// (study/train_request.hpp); this file parses the arguments and prints the log.
#include "agents/learner_registry.hpp"
#include "cli/commands.hpp"
#include "cli/option_checks.hpp"
#include "envs/env_registry.hpp"
#include "study/train_request.hpp"

#include <iostream>
#include <memory>

namespace foxrl::cli {
namespace {

struct TrainArgs {
  TrainRequest request;
  bool help_config = false;
  bool resume = false;
  bool auto_resume = false;
  bool overwrite = false;
};

/// Prints the run's log lines as train.log gets them.
struct PrintLines : TrainingObserver {
  void on_log(const std::string& line) override { std::cout << line << std::endl; }
};

int run_train(TrainArgs args) {
  if (args.help_config) {
    std::cout << "foxrl train configuration keys (JSON file via --config, or --set key=value):\n"
              << TrainConfig::describe() << "registered envs: " << registered_env_names()
              << "\nregistered online algorithms: " << online_learner_names() << "\n";
    return 0;
  }
  args.request.start = args.auto_resume ? RunStart::auto_resume : run_start(args.resume, args.overwrite);
  PrintLines print;
  run_train_request(args.request, print);
  return 0;
}

}  // namespace

Command add_train_command(CLI::App& app) {
  auto args = std::make_shared<TrainArgs>();
  auto* cmd = app.add_subcommand("train", "Train a DQN agent (default: built-in synthetic market, then evaluate)");
  cmd->add_option("--config", args->request.config_file, "JSON config file (keys: see --help-config)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--set", args->request.overrides, "Override a config key: --set key=value (repeatable)");
  cmd->add_flag("--help-config", args->help_config, "List every config key with its default and range");
  cmd->add_flag("--resume", args->resume,
                "Continue the run checkpointed in out_dir (its saved config, --set on top; only epochs may change)");
  cmd->add_flag("--overwrite", args->overwrite,
                "Replace the run already in out_dir (its logs, metrics, checkpoint, charts); without it, train refuses "
                "a directory that holds a run")
      ->excludes("--resume");
  cmd->add_flag("--auto-resume", args->auto_resume,
                "Continue the run in out_dir if it has a checkpoint, else start it (for job scripts that are "
                "requeued after preemption or a time limit)")
      ->excludes("--resume")
      ->excludes("--overwrite");
  auto* seeds =
      cmd->add_option("--seeds", args->request.seeds,
                      "Train one run per seed (e.g. 1,2,3,4,5 or 1-5), one after another, into out_dir/seed_<N>/, "
                      "then write out_dir/study.json: per-seed results, their spread and bootstrap tests "
                      "(--resume continues the unfinished seeds)")
          ->check(non_empty("a list of seeds, e.g. 1,2,3 or 1-5"));
  cmd->add_option("--bootstrap-resamples", args->request.bootstrap.resamples,
                  "Resamples of each bootstrap of a seed study (default 2000)")
      ->check(CLI::Range(100, 1000000))
      ->needs(seeds);
  cmd->add_option("--bootstrap-seed", args->request.bootstrap.seed,
                  "Seed of a seed study's bootstrap (default " + std::to_string(kDefaultBootstrapSeed) +
                      "): the same seed, the same intervals and p-values")
      ->check(unsigned_integer())
      ->needs(seeds);
  cmd->add_option("--block-length", args->request.bootstrap.block_length,
                  "Mean block length (bars) of the stationary bootstrap of a seed study's Sharpe tests (default 0: "
                  "round(bars^(1/3)))")
      ->check(finite_range(0, 1e9))
      ->needs(seeds);
  cmd->add_option_function<std::string>(
         "--walk-forward", [args](const std::string& spec) { args->request.walk_forward = spec; },
         "Walk-forward evaluation (market): train=N,test=M,step=S, each bars or a duration (5y, 6m, 30d); "
         "one run per fold in out_dir/fold_<k>/, the stitched out-of-sample result in walk_forward.json "
         "(--resume continues the unfinished folds)")
      ->excludes(seeds);
  return [cmd, args]() { return cmd->parsed() ? run_train(*args) : -1; };
}

}  // namespace foxrl::cli
