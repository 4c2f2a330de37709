#include "market/trading_metrics.hpp"

#include "core/error.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace foxrl {

std::vector<double> equity_curve(const std::vector<double>& log_returns) {
  std::vector<double> equity(log_returns.size() + 1, 1.0);
  double cumulative = 0;
  for (std::size_t i = 0; i < log_returns.size(); ++i) {
    cumulative += log_returns[i];
    equity[i + 1] = std::exp(cumulative);
  }
  return equity;
}

double annualised_sharpe(const std::vector<double>& r, double bars_per_year) {
  if (r.size() < 2) return 0.0;
  double sum = 0;
  for (double x : r) sum += x;
  const double mean = sum / static_cast<double>(r.size());
  double squares = 0;
  for (double x : r) squares += (x - mean) * (x - mean);
  const double stddev = std::sqrt(squares / static_cast<double>(r.size() - 1));
  return stddev > 0 ? mean / stddev * std::sqrt(bars_per_year) : 0.0;
}

TradingMetrics compute_trading_metrics(const std::vector<double>& log_returns, const std::vector<double>& positions,
                                       double bars_per_year) {
  if (log_returns.size() != positions.size()) {
    throw Error("compute_trading_metrics: " + std::to_string(log_returns.size()) + " returns but " +
                std::to_string(positions.size()) + " positions");
  }
  TradingMetrics m;
  m.bars = static_cast<long>(log_returns.size());
  if (m.bars == 0) return m;

  double sum = 0;
  for (double r : log_returns) sum += r;
  m.total_return = std::expm1(sum);
  m.sharpe = annualised_sharpe(log_returns, bars_per_year);
  m.gross_total_return = m.total_return;
  m.gross_sharpe = m.sharpe;

  // Drawdown on log equity: the fall from the running peak, as a fraction.
  double cumulative = 0, peak = 0, worst = 0;
  for (double r : log_returns) {
    cumulative += r;
    peak = std::max(peak, cumulative);
    worst = std::max(worst, -std::expm1(cumulative - peak));
  }
  m.max_drawdown = worst;

  double previous = 0, changes = 0;
  long hits = 0;
  for (std::size_t i = 0; i < positions.size(); ++i) {
    changes += std::abs(positions[i] - previous);
    if (positions[i] != previous) ++m.trades;
    previous = positions[i];
    if (positions[i] != 0) {
      ++m.bars_in_market;
      if (log_returns[i] > 0) ++hits;
    }
  }
  m.turnover = changes / m.bars;
  m.hit_rate = m.bars_in_market > 0 ? static_cast<double>(hits) / m.bars_in_market : 0.0;
  return m;
}

}  // namespace foxrl

namespace foxrl {

BacktestReturns backtest_returns(const std::vector<double>& market_returns, const std::vector<double>& positions,
                                 double cost) {
  if (market_returns.size() != positions.size()) {
    throw Error("backtest_returns: " + std::to_string(market_returns.size()) + " market returns but " +
                std::to_string(positions.size()) + " positions");
  }
  BacktestReturns out;
  const std::size_t n = positions.size();
  out.gross.resize(n);
  out.cost.resize(n);
  out.net.resize(n);
  double previous = 0;
  for (std::size_t i = 0; i < n; ++i) {
    out.gross[i] = positions[i] * market_returns[i];
    out.cost[i] = cost * std::abs(positions[i] - previous);
    out.net[i] = out.gross[i] - out.cost[i];
    previous = positions[i];
  }
  return out;
}

TradingMetrics backtest_metrics(const BacktestReturns& returns, const std::vector<double>& positions,
                                double bars_per_year) {
  TradingMetrics m = compute_trading_metrics(returns.net, positions, bars_per_year);
  double gross = 0, cost = 0;
  for (double r : returns.gross) gross += r;
  for (double c : returns.cost) cost += c;
  m.gross_total_return = std::expm1(gross);
  m.gross_sharpe = annualised_sharpe(returns.gross, bars_per_year);
  m.cost_paid = cost;
  return m;
}

std::string format_percent(double fraction) {
  char text[32];
  const double p = 100 * fraction;
  if (std::isfinite(p) && std::fabs(p) >= 1e7)
    std::snprintf(text, sizeof text, "%.3e%%", p);
  else
    std::snprintf(text, sizeof text, "%.2f%%", p);
  return std::string(text);
}

}  // namespace foxrl
