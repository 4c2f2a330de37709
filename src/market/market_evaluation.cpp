#include "market/market_evaluation.hpp"

#include "core/build_info.hpp"
#include "core/error.hpp"
#include "io/svg_chart.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
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

std::vector<double> random_positions_with_trades(int count, long trades, std::uint64_t seed, PositionSet set) {
  const auto n = static_cast<std::size_t>(count);
  const auto k = static_cast<std::size_t>(std::max(0L, std::min<long>(trades, count)));
  std::mt19937_64 rng(seed);
  // The first k entries of a partial Fisher-Yates shuffle: k distinct bars.
  std::vector<std::size_t> bars(n);
  for (std::size_t i = 0; i < n; ++i) bars[i] = i;
  std::vector<char> change(n, 0);
  for (std::size_t i = 0; i < k; ++i) {
    const std::size_t j = i + static_cast<std::size_t>(rng() % (n - i));
    std::swap(bars[i], bars[j]);
    change[bars[i]] = 1;
  }
  std::vector<double> positions(n);
  int p = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (change[i]) {
      if (set == PositionSet::long_only)
        p = 1 - p;  // the one other position
      else
        p = ((p + 1 + 1 + static_cast<int>(rng() % 2)) % 3) - 1;  // one of the two other positions
    }
    positions[i] = p;
  }
  return positions;
}

std::vector<double> crossover_positions(const std::vector<double>& closes, int first, int count, int fast, int slow,
                                        PositionSet set) {
  if (fast < 1 || slow <= fast) {
    throw LogicError("crossover_positions: need 1 <= fast < slow, got " + std::to_string(fast) + ", " +
                     std::to_string(slow));
  }
  std::vector<double> positions(static_cast<std::size_t>(count), 0.0);
  const double below = set == PositionSet::long_only ? 0.0 : -1.0;  // fast under slow
  for (int i = 0; i < count; ++i) {
    const int t = first + i;  // the bar; its decision sees closes [t - slow, t)
    if (t < slow) continue;
    double fast_sum = 0, slow_sum = 0;
    for (int k = t - slow; k < t; ++k) {
      slow_sum += closes[static_cast<std::size_t>(k)];
      if (k >= t - fast) fast_sum += closes[static_cast<std::size_t>(k)];
    }
    const double fast_mean = fast_sum / fast, slow_mean = slow_sum / slow;
    positions[static_cast<std::size_t>(i)] = fast_mean > slow_mean ? 1.0 : (fast_mean < slow_mean ? below : 0.0);
  }
  return positions;
}

std::vector<StrategyResult> baseline_strategies(const MarketSeries& series, int first, int count, double cost,
                                                double bars_per_year, long agent_trades, std::uint64_t seed,
                                                PositionSet set) {
  std::vector<StrategyResult> out;
  const auto n = static_cast<std::size_t>(count);
  const std::vector<double> all = host_log_returns(series);
  const std::vector<double> r(all.begin() + first, all.begin() + first + count);
  out.push_back(price_strategy("buy and hold", r, std::vector<double>(n, 1.0), cost, bars_per_year));
  out.push_back(price_strategy("always flat", r, std::vector<double>(n, 0.0), cost, bars_per_year));
  out.push_back(price_strategy("random, same trades", r, random_positions_with_trades(count, agent_trades, seed, set),
                               cost, bars_per_year));
  out.push_back(price_strategy("MA crossover " + std::to_string(kCrossoverFast) + "/" + std::to_string(kCrossoverSlow),
                               r, crossover_positions(series.close, first, count, kCrossoverFast, kCrossoverSlow, set),
                               cost, bars_per_year));
  return out;
}

EvaluationReport build_evaluation_report(const MarketSeries& series, int first,
                                         const std::vector<double>& agent_positions, double cost, double bars_per_year,
                                         std::uint64_t seed, const std::string& agent_name, PositionSet set) {
  const int count = static_cast<int>(agent_positions.size());
  if (first < 0 || count < 1 || static_cast<std::size_t>(first) + agent_positions.size() > series.size()) {
    throw LogicError("build_evaluation_report: bars [" + std::to_string(first) + ", " + std::to_string(first + count) +
                     ") outside a series of " + std::to_string(series.size()));
  }
  const std::vector<double> all = host_log_returns(series);
  EvaluationReport report;
  report.bars = count;
  report.cost = cost;
  report.positions = set;
  report.bars_per_year = bars_per_year;
  report.first_bar = first;
  report.market_returns.assign(all.begin() + first, all.begin() + first + count);
  report.timestamps.assign(series.timestamp.begin() + first, series.timestamp.begin() + first + count);
  report.split_description =
      series.source + " bars " + std::to_string(first) + " .. " + std::to_string(first + count - 1) + " (" +
      format_timestamp(series.timestamp[static_cast<std::size_t>(first)]).substr(0, 10) + " .. " +
      format_timestamp(series.timestamp[static_cast<std::size_t>(first + count - 1)]).substr(0, 10) + ")";
  report.strategies.push_back(price_strategy(agent_name, report.market_returns, agent_positions, cost, bars_per_year));
  const long agent_trades = report.strategies.front().metrics.trades;
  for (auto& b : baseline_strategies(series, first, count, cost, bars_per_year, agent_trades, seed, set)) {
    report.strategies.push_back(std::move(b));
  }
  return report;
}

namespace detail {

EvaluationReport market_evaluation_report(const MarketSetup& market, int first, const std::vector<double>& positions,
                                          const std::vector<double>& env_rewards, const MarketEnvConfig& env_config,
                                          std::uint64_t seed, const std::string& agent_name) {
  // The agent is priced on the host in float64 from its positions, like the
  // baselines: the device rewards (float32) are not needed for the report.
  EvaluationReport report =
      build_evaluation_report(market.series, first, positions, env_config.cost, market.annualisation.bars_per_year,
                              seed, agent_name, env_config.positions);
  report.annualisation_basis = market.annualisation.basis;
  report.record = evaluation_record(market);
  report.env_rewards = env_rewards;
  return report;
}

}  // namespace detail

EvaluationReport EvaluationReport::repriced(double new_cost) const {
  EvaluationReport out = *this;
  out.cost = new_cost;
  for (auto& s : out.strategies) s = price_strategy(s.name, market_returns, s.positions, new_cost, bars_per_year);
  return out;
}

namespace {}  // namespace

std::string EvaluationReport::table() const {
  std::ostringstream out;
  out << "Evaluation on " << split_description << ", " << bars << " bars, cost " << cost * 1e4
      << " bp per unit of position change, Sharpe annualised over " << bars_per_year << " bars a year ("
      << annualisation_basis << ")" << (positions == PositionSet::long_only ? ", long only (no short positions)" : "")
      << "\n";
  char line[256];
  std::snprintf(line, sizeof line, "%-22s %12s %12s %8s %8s %10s %7s %12s %10s %9s\n", "strategy", "net return",
                "gross return", "Sharpe", "gross Sh", "cost paid", "trades", "max drawdown", "turnover", "hit rate");
  out << line;
  for (const auto& s : strategies) {
    const auto& m = s.metrics;
    std::snprintf(line, sizeof line, "%-22s %12s %12s %8.2f %8.2f %10s %7ld %11.2f%% %10.4f %8.1f%%\n", s.name.c_str(),
                  format_percent(m.total_return).c_str(), format_percent(m.gross_total_return).c_str(), m.sharpe,
                  m.gross_sharpe, format_percent(m.cost_paid).c_str(), m.trades, 100 * m.max_drawdown, m.turnover,
                  100 * m.hit_rate);
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
                    format_percent(m.total_return).c_str(), format_percent(m.gross_total_return).c_str(), m.sharpe,
                    m.gross_sharpe, format_percent(m.cost_paid).c_str(), m.trades);
      out << line;
    }
  }
  return out.str();
}

EvaluationRecord evaluation_record(const MarketSetup& market) {
  EvaluationRecord r;
  r.data_origin = market.data_origin.empty() ? market.series.source : market.data_origin;
  r.data_sha256 = market.data_sha256;
  r.rows_loaded = static_cast<long>(market.load_report.rows_loaded ? market.load_report.rows_loaded
                                                                   : market.series.size() + market.first_row);
  r.rows_skipped = static_cast<long>(market.load_report.rows_skipped());
  r.first_row = static_cast<long>(market.first_row);
  r.splits = market.splits;
  r.median_bar_seconds = market.annualisation.median_bar_seconds;
  for (const MarketSplit& s : {market.splits.train, market.splits.validation, market.splits.test}) {
    const bool empty = s.size() <= 0;
    r.split_dates.push_back(empty ? "" : format_timestamp(market.series.timestamp[static_cast<std::size_t>(s.begin)]));
    r.split_dates.push_back(empty ? ""
                                  : format_timestamp(market.series.timestamp[static_cast<std::size_t>(s.end - 1)]));
  }
  return r;
}

std::string EvaluationReport::json() const {
  nlohmann::json j;
  j["foxrl_version"] = FOXRL_VERSION;
  j["foxrl_commit"] = build_commit();
  nlohmann::json data;
  data["origin"] = record.data_origin;
  data["sha256"] = record.data_sha256;
  data["rows_loaded"] = record.rows_loaded;
  data["rows_skipped"] = record.rows_skipped;
  data["bars_before_start_date"] = record.first_row;
  data["median_bar_seconds"] = record.median_bar_seconds;
  j["data"] = data;
  // Bar indices count from the first bar used (after start_date); dates are UTC.
  const char* names[] = {"train", "validation", "test"};
  const MarketSplit splits[] = {record.splits.train, record.splits.validation, record.splits.test};
  for (std::size_t k = 0; k < 3; ++k) {
    nlohmann::json s;
    s["bars"] = {splits[k].begin, splits[k].end};
    if (record.split_dates.size() == 6) {
      s["first"] = record.split_dates[2 * k];
      s["last"] = record.split_dates[2 * k + 1];
    }
    j["splits"][names[k]] = s;
  }
  j["evaluated_bars"] = {first_bar, first_bar + bars};
  j["cost_model"] = {{"kind", "proportional: cost x |position change| per bar, subtracted from the log return"},
                     {"cost_per_unit_position_change", cost},
                     {"cost_bps", cost * 1e4}};
  j["annualisation"] = {{"bars_per_year", bars_per_year}, {"basis", annualisation_basis}};
  // Stated for long-only runs; absent it is long_short, so the records of
  // runs with both positions keep their bytes (config key `positions`).
  if (positions != PositionSet::long_short) j["positions"] = position_set_name(positions);
  j["split"] = split_description;
  j["bars"] = bars;
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

std::string EvaluationReport::svg(const std::string& weights) const {
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
  // The title names the data file without its directories: a long path
  // would run off the canvas (the JSON and the table keep it whole).
  std::string description = split_description;
  const std::size_t bars_at = description.find(" bars ");
  const std::size_t slash = description.rfind('/', bars_at);
  if (bars_at != std::string::npos && slash != std::string::npos) description.erase(0, slash + 1);
  return render_line_chart(
      "Equity on " + description + ", net of costs" + (weights.empty() ? "" : " (" + weights + ")"),
      timestamps.empty() ? "bar" : "UTC", "equity (start = 1, log scale)", series, options);
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
