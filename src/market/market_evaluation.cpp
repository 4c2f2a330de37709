#include "market/market_evaluation.hpp"

#include "core/error.hpp"
#include "io/svg_chart.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <sstream>

namespace foxrl {
StrategyResult price_strategy(const std::string& name, const std::vector<double>& market_returns,
                              const std::vector<double>& positions, double cost, double bars_per_year) {
  StrategyResult s;
  s.name = name;
  s.positions = positions;
  s.returns = backtest_returns(market_returns, positions, cost);
  s.metrics = backtest_metrics(s.returns, positions, bars_per_year);
  s.equity = equity_curve(s.returns.net);
  return s;
}

std::vector<StrategyResult> baseline_strategies(const std::vector<double>& log_returns, int first, int count,
                                                double cost, double bars_per_year, std::uint64_t seed) {
  std::vector<StrategyResult> out;
  const auto n = static_cast<std::size_t>(count);
  const std::vector<double> r(log_returns.begin() + first, log_returns.begin() + first + count);
  out.push_back(price_strategy("buy and hold", r, std::vector<double>(n, 1.0), cost, bars_per_year));
  out.push_back(price_strategy("always flat", r, std::vector<double>(n, 0.0), cost, bars_per_year));
  std::mt19937_64 rng(seed);
  std::vector<double> random_positions(n);
  for (auto& p : random_positions) p = static_cast<double>(static_cast<int>(rng() % 3) - 1);
  out.push_back(price_strategy("random", r, random_positions, cost, bars_per_year));
  return out;
}

EvaluationReport build_evaluation_report(const MarketSeries& series, int first,
                                         const std::vector<double>& agent_positions, double cost, double bars_per_year,
                                         std::uint64_t seed) {
  const int count = static_cast<int>(agent_positions.size());
  if (first < 0 || count < 1 || static_cast<std::size_t>(first) + agent_positions.size() > series.size()) {
    throw LogicError("build_evaluation_report: bars [" + std::to_string(first) + ", " + std::to_string(first + count) +
                     ") outside a series of " + std::to_string(series.size()));
  }
  const std::vector<double> all = host_log_returns(series);
  EvaluationReport report;
  report.bars = count;
  report.cost = cost;
  report.bars_per_year = bars_per_year;
  report.first_bar = first;
  report.market_returns.assign(all.begin() + first, all.begin() + first + count);
  report.timestamps.assign(series.timestamp.begin() + first, series.timestamp.begin() + first + count);
  report.split_description =
      series.source + " bars " + std::to_string(first) + " .. " + std::to_string(first + count - 1) + " (" +
      format_timestamp(series.timestamp[static_cast<std::size_t>(first)]).substr(0, 10) + " .. " +
      format_timestamp(series.timestamp[static_cast<std::size_t>(first + count - 1)]).substr(0, 10) + ")";
  report.strategies.push_back(
      price_strategy("agent (greedy DQN)", report.market_returns, agent_positions, cost, bars_per_year));
  for (auto& b : baseline_strategies(all, first, count, cost, bars_per_year, seed)) {
    report.strategies.push_back(std::move(b));
  }
  return report;
}

EvaluationReport EvaluationReport::repriced(double new_cost) const {
  EvaluationReport out = *this;
  out.cost = new_cost;
  for (auto& s : out.strategies) s = price_strategy(s.name, market_returns, s.positions, new_cost, bars_per_year);
  return out;
}

namespace {

// Compounded returns over long test splits can reach astronomic values
// (e.g. on a synthetic market): those print in scientific notation so the
// columns stay aligned.
std::string percent(double fraction) {
  char text[32];
  const double p = 100 * fraction;
  if (std::isfinite(p) && std::fabs(p) >= 1e7)
    std::snprintf(text, sizeof text, "%.3e%%", p);
  else
    std::snprintf(text, sizeof text, "%.2f%%", p);
  return std::string(text);
}

}  // namespace

std::string EvaluationReport::table() const {
  std::ostringstream out;
  out << "Evaluation on " << split_description << ", " << bars << " bars, cost " << cost * 1e4
      << " bp per unit of position change, Sharpe annualised over " << bars_per_year << " bars a year ("
      << annualisation_basis << ")\n";
  char line[256];
  std::snprintf(line, sizeof line, "%-22s %12s %12s %8s %8s %10s %7s %12s %10s %9s\n", "strategy", "net return",
                "gross return", "Sharpe", "gross Sh", "cost paid", "trades", "max drawdown", "turnover", "hit rate");
  out << line;
  for (const auto& s : strategies) {
    const auto& m = s.metrics;
    std::snprintf(line, sizeof line, "%-22s %12s %12s %8.2f %8.2f %10s %7ld %11.2f%% %10.4f %8.1f%%\n", s.name.c_str(),
                  percent(m.total_return).c_str(), percent(m.gross_total_return).c_str(), m.sharpe, m.gross_sharpe,
                  percent(m.cost_paid).c_str(), m.trades, 100 * m.max_drawdown, m.turnover, 100 * m.hit_rate);
    out << line;
  }
  return out.str();
}

std::string cost_sensitivity_table(const EvaluationReport& report, const std::vector<double>& costs_bps) {
  std::ostringstream out;
  out << "Cost sensitivity on " << report.split_description << ", " << report.bars
      << " bars (the same positions priced at each cost)\n";
  char line[256];
  std::snprintf(line, sizeof line, "%9s  %-22s %12s %12s %8s %8s %10s %7s\n", "cost (bp)", "strategy", "net return",
                "gross return", "Sharpe", "gross Sh", "cost paid", "trades");
  out << line;
  for (double bps : costs_bps) {
    const EvaluationReport priced = report.repriced(bps * 1e-4);
    for (const auto& s : priced.strategies) {
      const auto& m = s.metrics;
      std::snprintf(line, sizeof line, "%9.4g  %-22s %12s %12s %8.2f %8.2f %10s %7ld\n", bps, s.name.c_str(),
                    percent(m.total_return).c_str(), percent(m.gross_total_return).c_str(), m.sharpe, m.gross_sharpe,
                    percent(m.cost_paid).c_str(), m.trades);
      out << line;
    }
  }
  return out.str();
}

std::string EvaluationReport::json() const {
  nlohmann::json j;
  j["split"] = split_description;
  j["bars"] = bars;
  j["cost_per_unit_position_change"] = cost;
  j["cost_bps"] = cost * 1e4;
  j["bars_per_year"] = bars_per_year;
  j["annualisation_basis"] = annualisation_basis;
  for (const auto& s : strategies) {
    const auto& m = s.metrics;
    j["strategies"].push_back({{"name", s.name},
                               {"total_return", m.total_return},
                               {"sharpe", m.sharpe},
                               {"gross_total_return", m.gross_total_return},
                               {"gross_sharpe", m.gross_sharpe},
                               {"cost_paid", m.cost_paid},
                               {"trades", m.trades},
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
  // The chart plots the backtest's equity (backtest_csv), one point before
  // the first bar and one after each, on a log axis (compounded equity),
  // with the bars' dates as x ticks.
  ChartOptions options;
  options.log_y = true;
  // Splits shorter than a month are labelled with day and time (MM-DD
  // HH:MM), longer ones with the date: both fit five ticks on the axis.
  const bool short_span = timestamps.size() >= 2 && timestamps.back() - timestamps.front() < 30 * 86400;
  const auto date = [&](std::size_t i) {
    const std::string t = format_timestamp(timestamps[i]);
    return short_span ? t.substr(5, 5) + " " + t.substr(11, 5) : t.substr(0, 10);
  };
  if (!timestamps.empty()) {
    options.x_labels.push_back(date(0));
    for (std::size_t i = 0; i < timestamps.size(); ++i) options.x_labels.push_back(date(i));
  }
  return render_line_chart("Equity on " + split_description, timestamps.empty() ? "bar" : "UTC",
                           "equity (start = 1, log scale)", series, options);
}

std::string EvaluationReport::backtest_csv() const {
  if (strategies.empty()) throw LogicError("EvaluationReport::backtest_csv: no strategies");
  const StrategyResult& agent = strategies.front();
  std::string out = "bar,timestamp,position,market_log_return,gross_log_return,cost,net_log_return,equity\n";
  char line[256];
  for (std::size_t i = 0; i < agent.positions.size(); ++i) {
    // %.17g: the file reproduces the report's doubles exactly.
    std::snprintf(line, sizeof line, "%ld,%s,%.0f,%.17g,%.17g,%.17g,%.17g,%.17g\n",
                  static_cast<long>(first_bar) + static_cast<long>(i),
                  i < timestamps.size() ? format_timestamp(timestamps[i]).c_str() : "", agent.positions[i],
                  market_returns[i], agent.returns.gross[i], agent.returns.cost[i], agent.returns.net[i],
                  agent.equity[i + 1]);
    out += line;
  }
  return out;
}

}  // namespace foxrl
