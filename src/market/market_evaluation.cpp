#include "market/market_evaluation.hpp"

#include "io/svg_chart.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <sstream>

namespace foxrl {
namespace {

StrategyResult run_positions(const std::string& name, const std::vector<double>& r, int first, int count, double cost,
                             double per_year, const std::vector<double>& positions) {
  std::vector<double> returns(static_cast<std::size_t>(count));
  double previous = 0;
  for (int i = 0; i < count; ++i) {
    const double p = positions[static_cast<std::size_t>(i)];
    returns[static_cast<std::size_t>(i)] =
        p * r[static_cast<std::size_t>(first) + static_cast<std::size_t>(i)] - cost * std::abs(p - previous);
    previous = p;
  }
  StrategyResult s;
  s.name = name;
  s.metrics = compute_trading_metrics(returns, positions, per_year);
  s.equity = equity_curve(returns);
  return s;
}

}  // namespace

std::vector<StrategyResult> baseline_strategies(const std::vector<double>& log_returns, int first, int count,
                                                double cost, double bars_per_year, std::uint64_t seed) {
  std::vector<StrategyResult> out;
  const auto n = static_cast<std::size_t>(count);
  out.push_back(
      run_positions("buy and hold", log_returns, first, count, cost, bars_per_year, std::vector<double>(n, 1.0)));
  out.push_back(
      run_positions("always flat", log_returns, first, count, cost, bars_per_year, std::vector<double>(n, 0.0)));
  std::mt19937_64 rng(seed);
  std::vector<double> random_positions(n);
  for (auto& p : random_positions) p = static_cast<double>(static_cast<int>(rng() % 3) - 1);
  out.push_back(run_positions("random", log_returns, first, count, cost, bars_per_year, random_positions));
  return out;
}

std::string EvaluationReport::table() const {
  std::ostringstream out;
  out << "Evaluation on " << split_description << ", " << bars << " bars\n";
  char line[200];
  std::snprintf(line, sizeof line, "%-22s %12s %8s %12s %10s %9s\n", "strategy", "total return", "Sharpe",
                "max drawdown", "turnover", "hit rate");
  out << line;
  // Compounded returns over long test splits can reach astronomic values
  // (e.g. on a synthetic market): those print in scientific notation so the
  // columns stay aligned.
  auto percent = [](double fraction) {
    char text[32];
    const double p = 100 * fraction;
    if (std::isfinite(p) && std::fabs(p) >= 1e7)
      std::snprintf(text, sizeof text, "%.3e%%", p);
    else
      std::snprintf(text, sizeof text, "%.2f%%", p);
    return std::string(text);
  };
  for (const auto& s : strategies) {
    const auto& m = s.metrics;
    std::snprintf(line, sizeof line, "%-22s %12s %8.2f %11.2f%% %10.4f %8.1f%%\n", s.name.c_str(),
                  percent(m.total_return).c_str(), m.sharpe, 100 * m.max_drawdown, m.turnover, 100 * m.hit_rate);
    out << line;
  }
  return out.str();
}

std::string EvaluationReport::json() const {
  nlohmann::json j;
  j["split"] = split_description;
  j["bars"] = bars;
  for (const auto& s : strategies) {
    const auto& m = s.metrics;
    j["strategies"].push_back({{"name", s.name},
                               {"total_return", m.total_return},
                               {"sharpe", m.sharpe},
                               {"max_drawdown", m.max_drawdown},
                               {"turnover", m.turnover},
                               {"hit_rate", m.hit_rate},
                               {"bars_in_market", m.bars_in_market}});
  }
  return j.dump(2);
}

std::string EvaluationReport::svg() const {
  std::vector<ChartSeries> series;
  for (const auto& s : strategies) series.push_back({s.name, s.equity});
  return render_line_chart("Equity on " + split_description, "bar", "equity (start = 1)", series);
}

}  // namespace foxrl
