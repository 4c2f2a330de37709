#pragma once
// The validation backtest of a training run: after an epoch, the greedy
// policy trades a market's validation split in one continuous backtest
// (evaluate_market), with buy and hold on the same bars for scale. The
// offline trainer reports it per evaluated epoch; `foxrl train` per epoch,
// and picks its best checkpoint by it (select_by: its net Sharpe ratio or
// net return). The test split is never looked at before the run's end.

#include "market/market_evaluation.hpp"
#include "market/validation_result.hpp"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>

namespace foxrl {

/// The backtest of `policy` (see evaluate_market) on `market`'s validation
/// split when it holds two or more decision bars after the observation's
/// lookback; else nothing. Seeded like the test split's evaluation (the
/// seed only draws the random baseline).
template <class ExecSpace, class GreedyPolicy>
std::optional<ValidationBacktest> validation_backtest(const ExecSpace& space, GreedyPolicy& policy,
                                                      SignalAdapter<ExecSpace>* adapter,
                                                      const MarketFeatures<ExecSpace>& features,
                                                      const MarketSetup& market, const MarketEnvConfig& env_config,
                                                      std::uint64_t seed, const std::string& agent_name) {
  const MarketSplit& v = market.splits.validation;
  const int first = std::max(v.begin, env_config.observation.min_decision_bar());
  if (v.end - first < 2) return std::nullopt;
  const EvaluationReport report =
      evaluate_market(space, policy, adapter, features, market, v, env_config, seed, agent_name);
  // The report's rows: the agent, then buy and hold (build_evaluation_report).
  return ValidationBacktest{report.strategies.at(0).metrics, report.strategies.at(1).metrics.total_return};
}

}  // namespace foxrl
