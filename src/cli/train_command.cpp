// foxrl train: train a DQN agent (CartPole or market) and, for the market,
// evaluate it on the held-out test split against the baselines.
#include "atomic_file.hpp"
#include "commands.hpp"
#include "dqn_trainer.hpp"
#include "error.hpp"
#include "market_evaluation.hpp"
#include "svg_chart.hpp"

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

int run_train(const TrainArgs& args) {
  if (args.help_config) {
    std::cout << "foxrl train configuration keys (JSON file via --config, or --set key=value):\n"
              << TrainConfig::describe();
    return 0;
  }
  TrainConfig config = args.config_file.empty() ? TrainConfig{} : TrainConfig::from_json_file(args.config_file);
  config.apply_overrides(args.overrides);
  std::filesystem::create_directories(config.out_dir);
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
  write_file_atomically(config.out_dir + "/config.json", config.to_json() + "\n");

  std::vector<EpochRecord> epochs;
  for (std::int64_t e = 0; e < config.epochs; ++e) {
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
  say("outputs in " + config.out_dir + ": train.log, metrics.jsonl, checkpoint.safetensors + checkpoint.json, learning curves" +
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
  return [cmd, args]() { return cmd->parsed() ? run_train(*args) : -1; };
}

}  // namespace foxrl::cli
