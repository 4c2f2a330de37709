#pragma once
// Performance statistics of a trading strategy from its per-bar log returns
// and positions: what the evaluation report prints for the agent and for the
// baselines. Host code: it runs once per evaluation on copied-back series.

#include <string>
#include <vector>

namespace foxrl {

struct TradingMetrics {
  double total_return = 0;        ///< net of costs: exp(sum of log returns) - 1
  double sharpe = 0;              ///< net, annualised: mean/std of per-bar log returns x sqrt(bars_per_year)
  double gross_total_return = 0;  ///< before costs (backtest_metrics; else equal to total_return)
  double gross_sharpe = 0;        ///< before costs (backtest_metrics; else equal to sharpe)
  /// Costs paid, in log-return units: sum of cost x |position change|, so
  /// log(1 + gross_total_return) - log(1 + total_return) == cost_paid.
  double cost_paid = 0;
  long trades = 0;          ///< bars on which the position changed (entering at bar 0 counts)
  double max_drawdown = 0;  ///< largest peak-to-trough fall of the equity curve, as a fraction
  double turnover = 0;      ///< mean |position change| per bar
  double hit_rate = 0;      ///< fraction of bars in the market with a positive return
  long bars = 0;
  long bars_in_market = 0;
};

/// Annualised Sharpe ratio of per-bar log returns: their mean over their
/// standard deviation (n - 1 denominator) times sqrt(bars_per_year); 0 for
/// fewer than two bars or no spread.
double annualised_sharpe(const std::vector<double>& log_returns, double bars_per_year);

/// `log_returns[i]`: the strategy's net log return of bar i (after costs);
/// `positions[i]`: the position held over bar i (-1, 0, +1); the position
/// before the first bar is 0. Sharpe is 0 when the returns have no spread.
TradingMetrics compute_trading_metrics(const std::vector<double>& log_returns, const std::vector<double>& positions,
                                       double bars_per_year);

/// Per-bar log returns of a strategy that holds positions[i] over bar i of
/// a market whose bar log returns are market_returns[i], flat before bar 0:
/// gross[i] = p[i] r[i], cost[i] = cost |p[i] - p[i-1]|, net = gross - cost.
struct BacktestReturns {
  std::vector<double> gross, cost, net;
};
BacktestReturns backtest_returns(const std::vector<double>& market_returns, const std::vector<double>& positions,
                                 double cost);

/// Metrics of a backtest's net returns (compute_trading_metrics) plus the
/// gross return and Sharpe, the cost paid and the trades.
TradingMetrics backtest_metrics(const BacktestReturns& returns, const std::vector<double>& positions,
                                double bars_per_year);

/// Equity curve exp(cumulative log return), starting at 1 before bar 0.
std::vector<double> equity_curve(const std::vector<double>& log_returns);

/// `fraction` as a percentage with two decimals ("-12.34%"); compounded
/// returns that reach astronomic values (a synthetic market over a long
/// split) print in scientific notation ("5.344e+55%") so table columns
/// stay aligned.
std::string format_percent(double fraction);

}  // namespace foxrl
