#include "evaluate/evaluate_run.hpp"

#include "agents/learner_registry.hpp"
#include "core/execution_context.hpp"
#include "envs/env_registry.hpp"
#include "envs/episode_evaluation.hpp"
#include "io/atomic_file.hpp"
#include "io/output_dir.hpp"
#include "market/market_evaluation.hpp"
#include "train/best_model.hpp"
#include "train/checkpoint_store.hpp"
#include "train/offline_manifest.hpp"
#include "train/offline_trainer.hpp"
#include "train/run_manifest.hpp"
#include "train/run_spec.hpp"
#include "train/saved_model_evaluation.hpp"

#include <nlohmann/json.hpp>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <sstream>
#include <vector>

namespace foxrl {
namespace {

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
void refuse_market_options(const EvaluateOptions& args, std::string env) {
  if (!args.data.empty() || args.allow_implausible_bars || !args.cost_bps.empty())
    throw UsageError(std::string(!args.data.empty()            ? "--data"
                                 : args.allow_implausible_bars ? "--allow-implausible-bars"
                                                               : "--cost-bps") +
                     ": the run " + args.run_dir + " trained on " + env + "; market data options are for market runs");
}

/// Prints the summary of greedy episodes and writes
/// evaluation_episodes_epoch-<epoch>.json.
void report_episodes(std::string& out_text, const EvaluateOptions& args, const EpisodeEvaluation& e, std::string env,
                     std::int64_t epoch, std::uint64_t seed) {
  char line[256];
  std::snprintf(line, sizeof line,
                "greedy policy, %d episodes: return %.2f +- %.2f (min %.0f, max %.0f), mean length %.1f steps\n",
                e.episodes, e.mean, e.std, e.min, e.max, e.mean_length);
  out_text += line;
  nlohmann::json j;
  j["env"] = env;
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
  out_text += "wrote " + out + "/" + name + "\n";
}

/// Prints a market report (and the cost-sensitivity table) and writes its
/// files under names of the split, checkpoint and data file: evaluations
/// of other checkpoints or data never overwrite each other (nor the
/// evaluation.json of the training run).
void report_market(std::string& out_text, const EvaluateOptions& args, const MarketSetup& data,
                   const EvaluationReport& report, std::int64_t epoch, const std::string& label = "") {
  out_text += data.describe() + "\n" + report.table();
  if (!args.cost_bps.empty()) out_text += "\n" + cost_sensitivity_table(report, args.cost_bps);
  const std::string out = args.out_dir.empty() ? args.run_dir : args.out_dir;
  prepare_output_directory(out, args.out_dir.empty() ? "--run" : "--out");
  const std::string name = output_stem(args.split + label, epoch, args.data);
  write_file_atomically(out + "/evaluation_" + name + ".json", report.json() + "\n");
  write_file_atomically(out + "/evaluation_" + name + "_backtest.csv", report.backtest_csv());
  write_file_atomically(out + "/equity_" + name + ".svg",
                        report.svg(label == "_best" ? "best weights, epoch " + std::to_string(epoch) : ""));
  out_text += "wrote " + out + "/evaluation_" + name + ".json, evaluation_" + name + "_backtest.csv and equity_" +
              name + ".svg\n";
}

/// A checkpoint generation of `foxrl train-offline`: its learner, rebuilt
/// with the run's dataset, evaluated like a `foxrl train` run of the
/// dataset's env (market: the split against the baselines; CartPole:
/// `args.episodes` greedy episodes seeded from the run's seed + 1).
std::string run_offline_eval(const EvaluateOptions& args, const std::string& checkpoint) {
  std::string text;
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
  const std::string env = trainer.dataset_metadata().env;
  if (!trainer.market()) {
    refuse_market_options(args, env);
    const EpisodeEvaluation e = trainer.evaluate(args.episodes);
    report_episodes(text, args, e, env, manifest.epoch, config.seed + 1);
    return text;
  }
  if (args.data.empty() && !args.allow_implausible_bars) {
    const MarketComponents<Exec>& market = *trainer.market();
    const auto report = trainer.evaluate_market_split(market, market_split(market.data.splits, args.split));
    report_market(text, args, market.data, report, manifest.epoch);
    return text;
  }
  TrainConfig env_config = trainer.dataset_metadata().config;
  if (!args.data.empty()) env_config.data = args.data;
  if (args.allow_implausible_bars) env_config.allow_implausible_bars = true;
  const MarketComponents<Exec> market = MarketEnv<Exec>::make_data(trainer.space(), env_config);
  const auto report = trainer.evaluate_market_split(market, market_split(market.data.splits, args.split));
  report_market(text, args, market.data, report, manifest.epoch);
  return text;
}

/// CartPole runs: `args.episodes` envs each play one greedy episode (seeded
/// from the run's seed + 1, so not the training episodes).
std::string run_episode_eval(const EvaluateOptions& args, const std::string& checkpoint, const RunManifest& manifest) {
  std::string text;
  using Exec = Kokkos::DefaultExecutionSpace;
  refuse_market_options(args, manifest.config.env);
  ExecutionContext<Exec> context(manifest.config.seed);
  const Exec& space = context.space();
  const RunSpec spec = run_spec(manifest.config);
  const auto agent = make_online_agent(space, manifest.config, spec.spaces(), args.episodes);
  const std::string weights = checkpoint + "/checkpoint.safetensors";
  manifest.identity.check_metadata(agent->load(space, weights), weights);
  const EnvData<Exec> data(space, manifest.config);
  VectorEnv<Exec> env =
      make_vector_env(space, manifest.config, data, args.episodes, manifest.config.seed + 1, EnvSplit::test);
  const auto greedy = [&](const Exec& s, const typename VectorEnv<Exec>::obs_view& obs,
                          const Kokkos::View<std::int32_t*, Exec::memory_space>& actions) {
    agent->greedy_actions(s, ConstMatrix<Exec::memory_space>(obs), actions);
  };
  // CartPole-v1 truncates at 500 steps; the bound only guards against an env
  // that never ends an episode.
  const EpisodeEvaluation e = evaluate_first_episodes(space, env, greedy, 100000);
  report_episodes(text, args, e, spec.env, manifest.epoch, manifest.config.seed + 1);
  return text;
}

}  // namespace

EvaluationSummary evaluate_run(const EvaluateOptions& args) {
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
  if (offline(checkpoint)) return {run_offline_eval(args, checkpoint)};
  const RunManifest manifest = RunManifest::read(checkpoint);
  if (env_info(manifest.config.env).evaluation == EvaluationKind::episodes)
    return {run_episode_eval(args, checkpoint, manifest)};
  ExecutionContext<Exec> context(manifest.config.seed);
  const Exec& space = context.space();
  TrainConfig config = manifest.config;
  const RunSpec spec = run_spec(config);
  if (!args.data.empty()) config.data = args.data;
  if (args.allow_implausible_bars) config.allow_implausible_bars = true;
  const MarketComponents<Exec> market = MarketEnv<Exec>::make_data(space, config);
  const MarketSplit split = market_split(market.data.splits, args.split);
  const auto report = evaluate_saved_model(space, checkpoint, manifest, spec, market, split, config.seed + 1);
  std::string text;
  report_market(text, args, market.data, report, manifest.epoch, args.weights == "best" ? "_best" : "");
  return {text};
}

}  // namespace foxrl
