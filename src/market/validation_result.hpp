#pragma once
// What a validation backtest (market/validation_backtest.hpp) reports, and
// the metric that ranks epochs by it: host values only, for logs, metrics
// and the best checkpoint's record.

#include "core/error.hpp"
#include "market/trading_metrics.hpp"

#include <string>

namespace foxrl {

/// The greedy policy's continuous backtest on a market's validation split
/// (evaluate_market), with buy and hold on the same bars for scale.
struct ValidationBacktest {
  TradingMetrics agent;
  double buy_and_hold_return = 0;  ///< net total return
};

/// The validation metric config key `select_by` names ("sharpe": the net
/// Sharpe ratio, "net_return": the net total return); LogicError for any
/// other name (the config table admits only these).
inline double validation_score(const ValidationBacktest& v, const std::string& select_by) {
  if (select_by == "sharpe") return v.agent.sharpe;
  if (select_by == "net_return") return v.agent.total_return;
  throw LogicError("validation_score: unknown metric '" + select_by + "'");
}

}  // namespace foxrl
