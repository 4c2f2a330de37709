#pragma once
// The test-split evaluation of a model saved in a directory (a checkpoint
// generation or a best model: checkpoint.safetensors + checkpoint.json):
// its weights in an inference learner, its normaliser frozen, traded in one
// continuous backtest against the baselines (market/market_evaluation.hpp).
// `foxrl eval` and the end of a training run (its best model) use it.

#include "agents/learner_registry.hpp"
#include "market/market_evaluation.hpp"
#include "train/run_manifest.hpp"
#include "train/run_spec.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace foxrl {

/// Evaluates the model in `dir` (whose manifest is `manifest`, built with
/// `spec`) on `split` of `market`; UsageError naming the file when its
/// weights are missing, damaged or of another run or epoch.
template <class ExecSpace>
EvaluationReport evaluate_saved_model(const ExecSpace& space, const std::string& dir, const RunManifest& manifest,
                                      const RunSpec& spec, const MarketComponents<ExecSpace>& market,
                                      const MarketSplit& split, std::uint64_t seed) {
  const auto agent = make_online_agent(space, manifest.config, spec.spaces(), 64);
  const std::string weights = dir + "/checkpoint.safetensors";
  manifest.identity.check_metadata(agent->load(space, weights), weights);
  std::optional<SignalAdapter<ExecSpace>> adapter;
  if (manifest.has_normalizer) {
    adapter = make_adapter(space, spec);
    if (!adapter) throw UsageError(dir + "/checkpoint.json: a normalizer, but the env does not normalise");
    adapter->import_state(space, manifest.normalizer, dir + "/checkpoint.json");
    adapter->set_frozen(true);
  }
  return evaluate_market(space, *agent, adapter ? &*adapter : nullptr, market.features, market.data, split,
                         spec.market_env, seed, greedy_agent_name(manifest.config.algo));
}

}  // namespace foxrl
