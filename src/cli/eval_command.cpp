// foxrl eval: the greedy policy of a run on a time split of its market data
// (or another CSV), next to buy-and-hold, always-flat and random; for a
// CartPole run, the returns of --episodes greedy episodes. Runs of `foxrl
// train` and of `foxrl train-offline` alike (an offline run's learner is
// rebuilt with its dataset, which holds the env's config and normaliser).
#include "cli/commands.hpp"
#include "core/execution_context.hpp"
#include "envs/episode_evaluation.hpp"
#include "io/atomic_file.hpp"
#include "io/output_dir.hpp"
#include "market/market_evaluation.hpp"
#include "offline/offline_manifest.hpp"
#include "offline/offline_trainer.hpp"
#include "run/best_model.hpp"
#include "run/checkpoint_store.hpp"
#include "run/policy.hpp"
#include "run/saved_model_evaluation.hpp"
#include "run/setup.hpp"

#include <nlohmann/json.hpp>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <sstream>
#include <vector>

namespace foxrl::cli {
namespace {

struct EvalArgs {
  std::string run_dir;
  std::string data;
  std::string split = "test";
  std::string weights = "last";  ///< "last": the newest checkpoint; "best": the run's best model
  std::string out_dir;
  bool allow_implausible_bars = false;
  int episodes = 100;
  std::vector<double> cost_bps;  ///< empty: no cost-sensitivity table
};

/// "<split>_epoch-<N>", plus "_<data file stem>" for --data (letters,
/// digits, '-' and '.' kept, anything else '_').
std::string output_stem(const std::string& split, std::int64_t epoch, const std::string& data) {
  std::string stem = split + "_epoch-" + std::to_string(epoch);
  if (data.empty()) return stem;
  std::string file = std::filesystem::path(data).stem().string().substr(0, 64);
  for (char& c : file) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.') c = '_';
  }
  return stem + "_" + file;
}

/// Market data options given for a run of another env: UsageError.
void refuse_market_options(const EvalArgs& args, EnvKind env) {
  if (!args.data.empty() || args.allow_implausible_bars || !args.cost_bps.empty())
    throw UsageError(std::string(!args.data.empty()            ? "--data"
                                 : args.allow_implausible_bars ? "--allow-implausible-bars"
                                                               : "--cost-bps") +
                     ": the run " + args.run_dir + " trained on " + env_kind_name(env) +
                     "; market data options are for market runs");
}

/// Prints the summary of greedy episodes and writes
/// evaluation_episodes_epoch-<epoch>.json.
void report_episodes(const EvalArgs& args, const EpisodeEvaluation& e, EnvKind env, std::int64_t epoch,
                     std::uint64_t seed) {
  char line[256];
  std::snprintf(line, sizeof line,
                "greedy policy, %d episodes: return %.2f +- %.2f (min %.0f, max %.0f), mean length %.1f steps\n",
                e.episodes, e.mean, e.std, e.min, e.max, e.mean_length);
  std::cout << line;
  nlohmann::json j;
  j["env"] = env_kind_name(env);
  j["epoch"] = epoch;
  j["episodes"] = e.episodes;
  j["unfinished"] = e.unfinished;
  j["seed"] = seed;
  j["return_mean"] = e.mean;
  j["return_std"] = e.std;
  j["return_min"] = e.min;
  j["return_max"] = e.max;
  j["length_mean"] = e.mean_length;
  j["returns"] = e.returns;
  const std::string out = args.out_dir.empty() ? args.run_dir : args.out_dir;
  prepare_output_directory(out, args.out_dir.empty() ? "--run" : "--out");
  const std::string name = "evaluation_episodes_epoch-" + std::to_string(epoch) + ".json";
  write_file_atomically(out + "/" + name, j.dump(2) + "\n");
  std::cout << "wrote " << out << "/" << name << "\n";
}

/// Prints a market report (and the cost-sensitivity table) and writes its
/// files under names of the split, checkpoint and data file: evaluations
/// of other checkpoints or data never overwrite each other (nor the
/// evaluation.json of the training run).
void report_market(const EvalArgs& args, const MarketSetup& data, const EvaluationReport& report, std::int64_t epoch,
                   const std::string& label = "") {
  std::cout << data.describe() << "\n" << report.table();
  if (!args.cost_bps.empty()) std::cout << "\n" << cost_sensitivity_table(report, args.cost_bps);
  const std::string out = args.out_dir.empty() ? args.run_dir : args.out_dir;
  prepare_output_directory(out, args.out_dir.empty() ? "--run" : "--out");
  const std::string name = output_stem(args.split + label, epoch, args.data);
  write_file_atomically(out + "/evaluation_" + name + ".json", report.json() + "\n");
  write_file_atomically(out + "/evaluation_" + name + "_backtest.csv", report.backtest_csv());
  write_file_atomically(out + "/equity_" + name + ".svg",
                        report.svg(label == "_best" ? "best weights, epoch " + std::to_string(epoch) : ""));
  std::cout << "wrote " << out << "/evaluation_" << name << ".json, evaluation_" << name << "_backtest.csv and equity_"
            << name << ".svg\n";
}

/// A checkpoint generation of `foxrl train-offline`: its learner, rebuilt
/// with the run's dataset, evaluated like a `foxrl train` run of the
/// dataset's env (market: the split against the baselines; CartPole:
/// `args.episodes` greedy episodes seeded from the run's seed + 1).
int run_offline_eval(const EvalArgs& args, const std::string& checkpoint) {
  using Exec = Kokkos::DefaultExecutionSpace;
  const OfflineManifest manifest = OfflineManifest::read(checkpoint);
  OfflineTrainConfig config =
      OfflineTrainConfig::from_json_text(manifest.config_json, checkpoint + "/" + OfflineManifest::manifest_file);
  // The learner's inference scratch takes one row per episode; the weights
  // do not depend on it.
  config.eval_episodes = args.episodes;
  std::unique_ptr<OfflineTrainer<Exec>> built;
  try {
    built = std::make_unique<OfflineTrainer<Exec>>(config);
  } catch (const UsageError& e) {
    throw UsageError(checkpoint + ": an offline run is evaluated with its dataset: " + e.what());
  }
  OfflineTrainer<Exec>& trainer = *built;
  trainer.resume(checkpoint);
  const EnvKind env = trainer.dataset_metadata().env;
  if (!trainer.market()) {
    refuse_market_options(args, env);
    const EpisodeEvaluation e = trainer.evaluate(args.episodes);
    report_episodes(args, e, env, manifest.epoch, config.seed + 1);
    return 0;
  }
  if (args.data.empty() && !args.allow_implausible_bars) {
    const MarketComponents<Exec>& market = *trainer.market();
    const auto report = trainer.evaluate_market_split(market, market_split(market.data.splits, args.split));
    report_market(args, market.data, report, manifest.epoch);
    return 0;
  }
  TrainConfig env_config = trainer.dataset_metadata().config;
  if (!args.data.empty()) env_config.data = args.data;
  if (args.allow_implausible_bars) env_config.allow_implausible_bars = true;
  const MarketComponents<Exec> market = make_market(trainer.space(), env_config, trainer.spec());
  const auto report = trainer.evaluate_market_split(market, market_split(market.data.splits, args.split));
  report_market(args, market.data, report, manifest.epoch);
  return 0;
}

/// CartPole runs: `args.episodes` envs each play one greedy episode (seeded
/// from the run's seed + 1, so not the training episodes).
int run_episode_eval(const EvalArgs& args, const std::string& checkpoint, const RunManifest& manifest) {
  using Exec = Kokkos::DefaultExecutionSpace;
  refuse_market_options(args, manifest.config.env);
  ExecutionContext<Exec> context(manifest.config.seed);
  const Exec& space = context.space();
  RunSpec spec = run_spec(manifest.config);
  spec.num_envs = args.episodes;
  DqnLearner<Exec> learner(space, inference_learner_config(spec, args.episodes));
  const std::string weights = checkpoint + "/checkpoint.safetensors";
  manifest.identity.check_metadata(learner.load(space, weights), weights);
  VectorEnv<Exec> env = make_vector_env(space, spec, manifest.config.seed + 1);
  const auto greedy = [&](const Exec& s, const typename VectorEnv<Exec>::obs_view& obs,
                          const Kokkos::View<std::int32_t*, Exec::memory_space>& actions) {
    learner.greedy_actions(s, ConstMatrix<Exec::memory_space>(obs), actions);
  };
  // CartPole-v1 truncates at 500 steps; the bound only guards against an env
  // that never ends an episode.
  const EpisodeEvaluation e = evaluate_first_episodes(space, env, greedy, 100000);
  report_episodes(args, e, spec.env, manifest.epoch, manifest.config.seed + 1);
  return 0;
}

int run_eval(const EvalArgs& args) {
  using Exec = Kokkos::DefaultExecutionSpace;
  std::error_code ec;
  const auto offline = [&](const std::string& dir) {
    return std::filesystem::exists(dir + "/" + OfflineManifest::manifest_file, ec);
  };
  // A run directory, or one checkpoint generation of it.
  if (args.weights == "best" && offline(args.run_dir))
    throw UsageError("--weights best: " + args.run_dir + " is a train-offline run, which keeps no best model");
  const std::string checkpoint = args.weights == "best"  ? BestModelStore::resolve(args.run_dir)
                                 : offline(args.run_dir) ? args.run_dir
                                                         : CheckpointStore::resolve(args.run_dir);
  if (args.episodes < 1 || args.episodes > 1000000)
    throw UsageError("--episodes " + std::to_string(args.episodes) + ": must be in [1, 1000000]");
  for (double bps : args.cost_bps) {
    if (!std::isfinite(bps) || bps < 0 || bps > 1e4) {
      std::ostringstream value;
      value << bps;
      throw UsageError("--cost-bps " + value.str() + ": each cost must be in [0, 10000] basis points");
    }
  }
  if (offline(checkpoint)) return run_offline_eval(args, checkpoint);
  const RunManifest manifest = RunManifest::read(checkpoint);
  if (manifest.config.env != EnvKind::market) return run_episode_eval(args, checkpoint, manifest);
  ExecutionContext<Exec> context(manifest.config.seed);
  const Exec& space = context.space();
  TrainConfig config = manifest.config;
  const RunSpec spec = run_spec(config);
  if (!args.data.empty()) config.data = args.data;
  if (args.allow_implausible_bars) config.allow_implausible_bars = true;
  const MarketComponents<Exec> market = make_market(space, config, spec);
  const MarketSplit split = market_split(market.data.splits, args.split);
  const auto report = evaluate_saved_model(space, checkpoint, manifest, spec, market, split, config.seed + 1);
  report_market(args, market.data, report, manifest.epoch, args.weights == "best" ? "_best" : "");
  return 0;
}

}  // namespace

Command add_eval_command(CLI::App& app) {
  auto args = std::make_shared<EvalArgs>();
  auto* cmd = app.add_subcommand(
      "eval", "Evaluate a run's greedy policy: market runs on a time split against baselines, CartPole in episodes");
  cmd->add_option("--run", args->run_dir, "Run directory of `foxrl train` or `foxrl train-offline`")->required();
  cmd->add_option("--data", args->data, "OHLCV CSV to evaluate on (default: the run's own data)");
  cmd->add_option("--split", args->split, "Time split")
      ->check(CLI::IsMember({"train", "validation", "test"}))
      ->capture_default_str();
  cmd->add_option("--weights", args->weights,
                  "Market runs of `foxrl train`: the newest checkpoint (last) or the best model, the epoch that "
                  "scored best on the validation split (best; files named evaluation_<split>_best_epoch-<N>...)")
      ->check(CLI::IsMember({"last", "best"}))
      ->capture_default_str();
  cmd->add_option("--out", args->out_dir,
                  "Where evaluation_<split>_epoch-<N>[_<data>].json and equity_....svg go (default: --run)");
  cmd->add_flag("--allow-implausible-bars", args->allow_implausible_bars,
                "Accept --data bars that move more than 10x within a bar or from the last close");
  cmd->add_option("--cost-bps", args->cost_bps,
                  "Market runs: also print a cost-sensitivity table, the policy's positions priced at each of these "
                  "costs (basis points per unit of position change, e.g. 0,5,10,20)")
      ->delimiter(',');
  cmd->add_option("--episodes", args->episodes,
                  "CartPole runs: greedy episodes to play, one per env (evaluation_episodes_epoch-<N>.json)")
      ->capture_default_str();
  return [cmd, args]() { return cmd->parsed() ? run_eval(*args) : -1; };
}

}  // namespace foxrl::cli
