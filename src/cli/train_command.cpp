// foxrl train: train a DQN agent (CartPole or market) and, for the market,
// evaluate it on the held-out test split against the baselines. With
// --resume, continue the run checkpointed in out_dir.
#include "io/atomic_file.hpp"
#include "cli/commands.hpp"
#include "agents/dqn/dqn_trainer.hpp"
#include "core/error.hpp"
#include "market/market_evaluation.hpp"
#include "run/run_manifest.hpp"
#include "io/svg_chart.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

namespace foxrl::cli {
namespace {

struct TrainArgs {
  std::string config_file;
  std::vector<std::string> overrides;
  bool help_config = false;
  bool resume = false;
};

void write_learning_curves(const std::string& path, const std::vector<EpochRecord>& epochs) {
  ChartSeries returns{"mean return (last 100 episodes)", {}}, loss{"loss", {}};
  for (const auto& e : epochs) {
    returns.values.push_back(e.mean_return_last_100);
    loss.values.push_back(e.loss);
  }
  write_file_atomically(path + "/learning_curve_return.svg",
                        render_line_chart("Episode return per epoch", "epoch", "return", {returns}));
  write_file_atomically(path + "/learning_curve_loss.svg",
                        render_line_chart("Loss per epoch", "epoch", "loss", {loss}));
}

/// The epochs of metrics.jsonl up to `last_epoch` (the checkpoint a resumed
/// run continues from): the file is rewritten without later lines, which a
/// run interrupted after its last checkpoint left behind, so it reads as the
/// uninterrupted run's. Returns the kept records for the learning curves.
std::vector<EpochRecord> keep_metrics_until(const std::string& path, std::int64_t last_epoch) {
  std::vector<EpochRecord> kept;
  std::ifstream in(path);
  std::string line, text;
  while (std::getline(in, line)) {
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("epoch")) continue;
    if (j.value("epoch", std::int64_t(0)) > last_epoch) continue;
    EpochRecord r;
    r.epoch = j.value("epoch", std::int64_t(0));
    r.loss = j.value("loss", 0.0);
    r.mean_return_last_100 = j.value("mean_return_last_100", 0.0);
    kept.push_back(r);
    text += line + "\n";
  }
  in.close();
  write_file_atomically(path, text);
  return kept;
}

/// The config of a resumed run: the saved one (or --config) with --set on
/// top; out_dir (where the checkpoint is) comes from the same sources.
TrainConfig resume_config(const TrainArgs& args, RunManifest& manifest) {
  TrainConfig config = args.config_file.empty() ? TrainConfig{} : TrainConfig::from_json_file(args.config_file);
  config.apply_overrides(args.overrides);
  manifest = RunManifest::read(config.out_dir);
  if (args.config_file.empty()) {
    const std::string out_dir = config.out_dir;
    config = manifest.config;
    config.out_dir = out_dir;
    config.apply_overrides(args.overrides);
  }
  return config;
}

int run_train(const TrainArgs& args) {
  if (args.help_config) {
    std::cout << "foxrl train configuration keys (JSON file via --config, or --set key=value):\n"
              << TrainConfig::describe();
    return 0;
  }
  RunManifest saved;
  TrainConfig config;
  if (args.resume) {
    config = resume_config(args, saved);
    check_resume_compatible(saved.config, config, config.out_dir + "/checkpoint.json");
  } else {
    config = args.config_file.empty() ? TrainConfig{} : TrainConfig::from_json_file(args.config_file);
    config.apply_overrides(args.overrides);
  }
  std::filesystem::create_directories(config.out_dir);
  std::vector<EpochRecord> epochs;
  if (args.resume) epochs = keep_metrics_until(config.out_dir + "/metrics.jsonl", saved.epoch);
  std::ofstream log(config.out_dir + "/train.log", std::ios::app);
  std::ofstream metrics(config.out_dir + "/metrics.jsonl", std::ios::app);
  auto say = [&](const std::string& line) {
    std::cout << line << std::endl;
    log << line << std::endl;
  };

  using Exec = Kokkos::DefaultExecutionSpace;
  auto trainer = std::make_unique<DqnTrainer<Exec>>(config);
  say("foxrl " FOXRL_VERSION " train: " + config.env + " on " + Exec::name() + ", " +
      std::to_string(config.num_envs) + " envs, seed " + std::to_string(config.seed));
  if (trainer->market()) say(trainer->market()->describe());
  if (args.resume) {
    trainer->resume(config.out_dir);
    say("resumed from the checkpoint of epoch " + std::to_string(trainer->epoch()) + " (" +
        std::to_string(trainer->global_step()) + " env steps, " + std::to_string(trainer->updates()) +
        " updates) in " + config.out_dir);
  }
  write_file_atomically(config.out_dir + "/config.json", config.to_json() + "\n");

  for (std::int64_t e = trainer->epoch(); e < config.epochs; ++e) {
    const auto record = trainer->run_epoch();
    epochs.push_back(record);
    say(format_epoch_log(record));
    metrics << epoch_json(record) << std::endl;
    const bool solved = config.target_return > 0 && record.episodes >= 100 &&
                        record.mean_return_last_100 >= config.target_return;
    if (record.epoch % config.checkpoint_every == 0 || e + 1 == config.epochs || solved) {
      trainer->save_checkpoint(config.out_dir);
    }
    if (solved) {
      say("solved: mean return of the last 100 episodes " + std::to_string(record.mean_return_last_100) +
          " >= " + std::to_string(config.target_return) + " after " + std::to_string(record.env_steps) +
          " env steps");
      break;
    }
  }
  write_learning_curves(config.out_dir, epochs);

  if (trainer->market()) {
    const auto& market = *trainer->market();
    const auto report = evaluate_market(trainer->context().space(), trainer->learner(), trainer->adapter(),
                                        *trainer->market_features(), market, market.splits.test,
                                        trainer->market_env_config(), config.seed + 1);
    say(report.table());
    write_file_atomically(config.out_dir + "/evaluation.json", report.json() + "\n");
    write_file_atomically(config.out_dir + "/equity.svg", report.svg());
  }
  say("outputs in " + config.out_dir +
      ": train.log, metrics.jsonl, checkpoint.safetensors + checkpoint.json + trainer_state.safetensors, "
      "learning curves" +
      std::string(trainer->market() ? ", evaluation.json, equity.svg" : ""));
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
  return [cmd, args]() { return cmd->parsed() ? run_train(*args) : -1; };
}

}  // namespace foxrl::cli
