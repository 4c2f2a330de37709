#pragma once
// Performance statistics of a trading strategy from its per-bar log returns
// and positions: what the evaluation report prints for the agent and for the
// baselines. Host code: it runs once per evaluation on copied-back series.

#include <string>
#include <vector>

namespace foxrl {

struct TradingMetrics {
  double total_return = 0;  ///< exp(sum of log returns) - 1
  double sharpe = 0;        ///< annualised: mean/std of per-bar log returns x sqrt(bars_per_year)
  double max_drawdown = 0;  ///< largest peak-to-trough fall of the equity curve, as a fraction
  double turnover = 0;      ///< mean |position change| per bar
  double hit_rate = 0;      ///< fraction of bars in the market with a positive return
  long bars = 0;
  long bars_in_market = 0;
};

/// `log_returns[i]`: the strategy's net log return of bar i (after costs);
/// `positions[i]`: the position held over bar i (-1, 0, +1); the position
/// before the first bar is 0. Sharpe is 0 when the returns have no spread.
TradingMetrics compute_trading_metrics(const std::vector<double>& log_returns, const std::vector<double>& positions,
                                       double bars_per_year);

/// Equity curve exp(cumulative log return), starting at 1 before bar 0.
std::vector<double> equity_curve(const std::vector<double>& log_returns);

}  // namespace foxrl
