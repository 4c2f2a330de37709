#include "market/trading_metrics.hpp"

#include "core/error.hpp"

#include <algorithm>
#include <cmath>

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
  const double mean = sum / m.bars;
  double squares = 0;
  for (double r : log_returns) squares += (r - mean) * (r - mean);
  const double stddev = m.bars > 1 ? std::sqrt(squares / (m.bars - 1)) : 0.0;
  m.total_return = std::expm1(sum);
  m.sharpe = stddev > 0 ? mean / stddev * std::sqrt(bars_per_year) : 0.0;

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
