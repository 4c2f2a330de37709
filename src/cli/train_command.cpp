// foxrl train: train a DQN agent (CartPole or market) and, for the market,
// evaluate it on the held-out test split against the baselines. With
// --resume, continue the run checkpointed in out_dir. The run itself is the
// library's TrainingRun; this file turns arguments into its config and
// prints its log. With --seeds, the runs of a seed study (run/seed_study.hpp).
#include "cli/commands.hpp"
#include "cli/option_checks.hpp"
#include "core/error.hpp"
#include "run/checkpoint_store.hpp"
#include "run/run_manifest.hpp"
#include "run/seed_study.hpp"
#include "run/training_run.hpp"
#include "run/walk_forward.hpp"

#include <filesystem>
#include <iostream>
#include <memory>

namespace foxrl::cli {
namespace {

struct TrainArgs {
  std::string config_file;
  std::vector<std::string> overrides;
  bool help_config = false;
  bool resume = false;
  bool auto_resume = false;
  bool overwrite = false;
  std::string seeds;  ///< --seeds: a seed study
  BootstrapSettings bootstrap;
  std::string walk_forward;  ///< --walk-forward train=N,test=M,step=S
  bool walk_forward_given = false;
};

/// Prints the run's log lines as train.log gets them.
struct PrintLines : TrainingObserver {
  void on_log(const std::string& line) override { std::cout << line << std::endl; }
};

/// The config of a resumed run: the saved one (or --config) with --set on
/// top; out_dir (where the checkpoint is) comes from the same sources.
TrainConfig resume_config(const TrainArgs& args) {
  TrainConfig config = args.config_file.empty() ? TrainConfig{} : TrainConfig::from_json_file(args.config_file);
  config.apply_overrides(args.overrides);
  const RunManifest manifest = RunManifest::read_newest(config.out_dir);
  if (args.config_file.empty()) {
    const std::string out_dir = config.out_dir;
    config = manifest.config;
    config.out_dir = out_dir;
    config.apply_overrides(args.overrides);
  }
  return config;
}

int run_seed_study(const TrainArgs& args, TrainConfig config) {
  for (const auto& kv : args.overrides) {
    if (kv.rfind("seed=", 0) == 0) {
      throw UsageError("--seeds " + args.seeds + " and --set " + kv +
                       " both set the seed: give the seeds with --seeds");
    }
  }
  SeedStudyOptions options;
  options.seeds = parse_seed_list(args.seeds);
  options.overwrite = args.overwrite;
  // A requeued job continues the study if its directory exists, where a
  // resumed study starts the seeds that have no checkpoint yet.
  options.resume = args.resume || (args.auto_resume && std::filesystem::is_directory(config.out_dir));
  options.bootstrap = args.bootstrap;
  SeedStudy study({std::move(config), args.overrides, !args.config_file.empty()}, options);
  PrintLines print;
  study.add_observer(print);
  study.run();
  return 0;
}

int run_train(const TrainArgs& args) {
  if (args.help_config) {
    std::cout << "foxrl train configuration keys (JSON file via --config, or --set key=value):\n"
              << TrainConfig::describe();
    return 0;
  }
  TrainConfig config = args.config_file.empty() ? TrainConfig{} : TrainConfig::from_json_file(args.config_file);
  config.apply_overrides(args.overrides);
  if (args.walk_forward_given) {
    const WalkForwardSpec spec = parse_walk_forward_spec(args.walk_forward);
    PrintLines print;
    run_walk_forward(plan_walk_forward(config, spec, args.overwrite), print);
    return 0;
  }
  if (!args.seeds.empty()) return run_seed_study(args, std::move(config));
  if (args.resume && CheckpointStore(config.out_dir).generations().empty()) {
    if (const auto seeds = seeds_in_study_directory(config.out_dir); !seeds.empty()) {
      throw UsageError("--resume: out_dir '" + config.out_dir + "' holds a seed study (seed_" +
                       std::to_string(seeds.front()) + "/, ...): continue it with --seeds, e.g. --seeds " +
                       seed_list_text(seeds));
    }
  }
  bool resume = args.resume, overwrite = args.overwrite;
  if (args.auto_resume) {
    // A job that is requeued runs the same command again: continue the run
    // if it has a checkpoint, else start it (replacing the logs of an
    // attempt that stopped before its first checkpoint).
    resume = !CheckpointStore(config.out_dir).generations().empty();
    overwrite = !resume;
  }
  if (resume) config = resume_config(args);
  TrainingRun run(config, resume, overwrite);
  PrintLines print;
  run.add_observer(print);
  run.run();
  return 0;
}

}  // namespace

Command add_train_command(CLI::App& app) {
  auto args = std::make_shared<TrainArgs>();
  auto* cmd = app.add_subcommand("train", "Train a DQN agent (default: built-in synthetic market, then evaluate)");
  cmd->add_option("--config", args->config_file, "JSON config file (keys: see --help-config)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--set", args->overrides, "Override a config key: --set key=value (repeatable)");
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
      cmd->add_option("--seeds", args->seeds,
                      "Train one run per seed (e.g. 1,2,3,4,5 or 1-5), one after another, into out_dir/seed_<N>/, "
                      "then write out_dir/study.json: per-seed results, their spread and bootstrap tests "
                      "(--resume continues the unfinished seeds)");
  cmd->add_option("--bootstrap-resamples", args->bootstrap.resamples,
                  "Resamples of each bootstrap of a seed study (default 2000)")
      ->check(CLI::Range(100, 1000000))
      ->needs(seeds);
  cmd->add_option("--bootstrap-seed", args->bootstrap.seed,
                  "Seed of a seed study's bootstrap (default " + std::to_string(kDefaultBootstrapSeed) +
                      "): the same seed, the same intervals and p-values")
      ->needs(seeds);
  cmd->add_option("--block-length", args->bootstrap.block_length,
                  "Mean block length (bars) of the stationary bootstrap of a seed study's Sharpe tests (default 0: "
                  "round(bars^(1/3)))")
      ->check(finite_range(0, 1e9))
      ->needs(seeds);
  cmd->add_option_function<std::string>(
         "--walk-forward",
         [args](const std::string& spec) {
           args->walk_forward = spec;
           args->walk_forward_given = true;
         },
         "Walk-forward evaluation (market): train=N,test=M,step=S, each bars or a duration (5y, 6m, 30d); "
         "one run per fold in out_dir/fold_<k>/, the stitched out-of-sample result in walk_forward.json")
      ->excludes("--resume")
      ->excludes("--auto-resume")
      ->excludes(seeds);
  return [cmd, args]() { return cmd->parsed() ? run_train(*args) : -1; };
}

}  // namespace foxrl::cli
