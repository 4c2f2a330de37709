// foxrl eval: the greedy policy of a run on a time split of its market data
// (or another CSV), next to buy-and-hold, always-flat and random.
#include "cli/commands.hpp"
#include "core/execution_context.hpp"
#include "io/atomic_file.hpp"
#include "io/output_dir.hpp"
#include "market/market_evaluation.hpp"
#include "run/checkpoint_store.hpp"
#include "run/policy.hpp"
#include "run/setup.hpp"

#include <cctype>
#include <filesystem>
#include <iostream>
#include <memory>

namespace foxrl::cli {
namespace {

struct EvalArgs {
  std::string run_dir;
  std::string data;
  std::string split = "test";
  std::string out_dir;
  bool allow_implausible_bars = false;
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

int run_eval(const EvalArgs& args) {
  using Exec = Kokkos::DefaultExecutionSpace;
  const std::string checkpoint = CheckpointStore::resolve(args.run_dir);
  const RunManifest manifest = RunManifest::read(checkpoint);
  ExecutionContext<Exec> context(manifest.config.seed);
  const Exec& space = context.space();
  TrainConfig config = manifest.config;
  const RunSpec spec = run_spec(config);
  if (spec.env != EnvKind::market)
    throw UsageError("--run " + args.run_dir + ": the run trained on " + env_kind_name(spec.env) +
                     "; eval is for market runs");
  if (!args.data.empty()) config.data = args.data;
  if (args.allow_implausible_bars) config.allow_implausible_bars = true;
  const MarketComponents<Exec> market = make_market(space, config, spec);
  const MarketSplit split = market_split(market.data.splits, args.split);
  DqnLearner<Exec> learner(space, inference_learner_config(spec, 64));
  const std::string weights = checkpoint + "/checkpoint.safetensors";
  manifest.identity.check_metadata(learner.load(space, weights), weights);
  std::optional<SignalAdapter<Exec>> adapter;
  if (manifest.has_normalizer) {
    adapter = make_adapter(space, spec);
    adapter->import_state(space, manifest.normalizer, checkpoint + "/checkpoint.json");
    adapter->set_frozen(true);
  }
  const auto report = evaluate_market(space, learner, adapter ? &*adapter : nullptr, market.features, market.data,
                                      split, spec.market_env, config.seed + 1);
  std::cout << market.data.describe() << "\n" << report.table();
  const std::string out = args.out_dir.empty() ? args.run_dir : args.out_dir;
  prepare_output_directory(out, args.out_dir.empty() ? "--run" : "--out");
  // One name per split, checkpoint and data file: evaluations of other
  // checkpoints or data never overwrite each other (nor train's
  // evaluation.json).
  const std::string name = output_stem(args.split, manifest.epoch, args.data);
  write_file_atomically(out + "/evaluation_" + name + ".json", report.json() + "\n");
  write_file_atomically(out + "/equity_" + name + ".svg", report.svg());
  std::cout << "wrote " << out << "/evaluation_" << name << ".json and equity_" << name << ".svg\n";
  return 0;
}

}  // namespace

Command add_eval_command(CLI::App& app) {
  auto args = std::make_shared<EvalArgs>();
  auto* cmd = app.add_subcommand("eval", "Evaluate a run's greedy policy on a time split against baselines");
  cmd->add_option("--run", args->run_dir, "Run directory of `foxrl train`")->required();
  cmd->add_option("--data", args->data, "OHLCV CSV to evaluate on (default: the run's own data)");
  cmd->add_option("--split", args->split, "Time split")
      ->check(CLI::IsMember({"train", "validation", "test"}))
      ->capture_default_str();
  cmd->add_option("--out", args->out_dir,
                  "Where evaluation_<split>_epoch-<N>[_<data>].json and equity_....svg go (default: --run)");
  cmd->add_flag("--allow-implausible-bars", args->allow_implausible_bars,
                "Accept --data bars that move more than 10x within a bar or from the last close");
  return [cmd, args]() { return cmd->parsed() ? run_eval(*args) : -1; };
}

}  // namespace foxrl::cli
