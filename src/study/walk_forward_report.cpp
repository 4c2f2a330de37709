#include "study/walk_forward_report.hpp"

#include "core/build_info.hpp"
#include "core/error.hpp"
#include "io/svg_chart.hpp"
#include "market/market_data.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <sstream>

namespace foxrl {
namespace {

constexpr const char* kBuyAndHold = "buy and hold";

/// The agent is the report's first strategy (whatever its row is called);
/// the baselines follow by name.
const StrategyResult& agent_of(const EvaluationReport& report, int fold) {
  if (report.strategies.empty()) {
    throw LogicError("walk-forward fold " + std::to_string(fold) + ": its evaluation has no strategies");
  }
  return report.strategies.front();
}

const StrategyResult& strategy(const EvaluationReport& report, const std::string& name, int fold) {
  for (const auto& s : report.strategies)
    if (s.name == name) return s;
  throw LogicError("walk-forward fold " + std::to_string(fold) + ": its evaluation has no strategy '" + name + "'");
}

void append(BacktestReturns& to, const BacktestReturns& from) {
  to.gross.insert(to.gross.end(), from.gross.begin(), from.gross.end());
  to.cost.insert(to.cost.end(), from.cost.begin(), from.cost.end());
  to.net.insert(to.net.end(), from.net.begin(), from.net.end());
}

/// Trades and turnover as the folds' own backtests count them: each fold
/// enters from flat at its first bar.
void count_trades_per_fold(TradingMetrics& m, const std::vector<double>& positions, const std::vector<int>& fold) {
  double previous = 0, changes = 0;
  m.trades = 0;
  for (std::size_t i = 0; i < positions.size(); ++i) {
    if (i > 0 && fold[i] != fold[i - 1]) previous = 0;
    changes += std::abs(positions[i] - previous);
    if (positions[i] != previous) ++m.trades;
    previous = positions[i];
  }
  m.turnover = positions.empty() ? 0.0 : changes / static_cast<double>(positions.size());
}

std::string date_text(std::int64_t t, std::int64_t bar_seconds) {
  const std::string iso = format_timestamp(t);
  return bar_seconds >= 86400 ? iso.substr(0, 10) : iso.substr(0, 10) + " " + iso.substr(11, 5);
}

nlohmann::json metrics_json(const TradingMetrics& m) {
  return {{"total_return", m.total_return},
          {"gross_total_return", m.gross_total_return},
          {"sharpe", m.sharpe},
          {"gross_sharpe", m.gross_sharpe},
          {"cost_paid", m.cost_paid},
          {"trades", m.trades},
          {"max_drawdown", m.max_drawdown},
          {"turnover", m.turnover},
          {"bars_in_market", m.bars_in_market}};
}

nlohmann::json period_json(std::int64_t first, std::int64_t last, int bars) {
  return {{"first", format_timestamp(first)}, {"last", format_timestamp(last)}, {"bars", bars}};
}

}  // namespace

StitchedBacktest stitch_walk_forward(const std::vector<WalkForwardFoldResult>& folds, double bars_per_year) {
  StitchedBacktest s;
  for (const auto& f : folds) {
    const EvaluationReport& e = f.evaluation;
    const StrategyResult& agent = agent_of(e, f.fold.index);
    const StrategyResult& hold = strategy(e, kBuyAndHold, f.fold.index);
    if (!s.timestamps.empty() && !e.timestamps.empty() && e.timestamps.front() <= s.timestamps.back()) {
      throw LogicError("stitch_walk_forward: fold " + std::to_string(f.fold.index) +
                       " does not start after the previous fold's test period");
    }
    if (agent.positions.size() != e.timestamps.size()) {
      throw LogicError("stitch_walk_forward: fold " + std::to_string(f.fold.index) + " has " +
                       std::to_string(agent.positions.size()) + " positions for " +
                       std::to_string(e.timestamps.size()) + " bars");
    }
    s.timestamps.insert(s.timestamps.end(), e.timestamps.begin(), e.timestamps.end());
    s.fold.insert(s.fold.end(), e.timestamps.size(), f.fold.index);
    s.positions.insert(s.positions.end(), agent.positions.begin(), agent.positions.end());
    append(s.agent, agent.returns);
    append(s.buy_and_hold, hold.returns);
  }
  s.agent_equity = equity_curve(s.agent.net);
  s.buy_and_hold_equity = equity_curve(s.buy_and_hold.net);
  s.agent_metrics = backtest_metrics(s.agent, s.positions, bars_per_year);
  count_trades_per_fold(s.agent_metrics, s.positions, s.fold);
  const std::vector<double> held(s.positions.size(), 1.0);
  s.buy_and_hold_metrics = backtest_metrics(s.buy_and_hold, held, bars_per_year);
  count_trades_per_fold(s.buy_and_hold_metrics, held, s.fold);
  return s;
}

std::string walk_forward_table(const WalkForwardContext& context, const std::vector<WalkForwardFoldResult>& folds,
                               const StitchedBacktest& stitched) {
  std::ostringstream out;
  const auto dates = [&](std::int64_t a, std::int64_t b) {
    return date_text(a, context.bar_seconds) + " .. " + date_text(b, context.bar_seconds);
  };
  out << "Walk-forward " << context.spec << " on " << context.data_origin << ": " << folds.size() << " folds, cost "
      << context.cost * 1e4 << " bp per unit of position change, Sharpe annualised over " << context.bars_per_year
      << " bars a year (" << context.annualisation_basis << ")"
      << (context.positions == PositionSet::long_only ? ", long only" : "") << "\n";
  const int width = context.bar_seconds >= 86400 ? 24 : 36;
  char line[512];
  std::snprintf(line, sizeof line, "%-8s %-*s %-*s %7s %12s %12s %8s %7s %12s %8s\n", "fold", width, "train", width,
                "test", "bars", "agent net", "agent gross", "Sharpe", "trades", "B&H net", "B&H Sh");
  out << line;
  const auto row = [&](const std::string& name, const std::string& train, const std::string& test, long bars,
                       const TradingMetrics& a, const TradingMetrics& h) {
    std::snprintf(line, sizeof line, "%-8s %-*s %-*s %7ld %12s %12s %8.2f %7ld %12s %8.2f\n", name.c_str(), width,
                  train.c_str(), width, test.c_str(), bars, format_percent(a.total_return).c_str(),
                  format_percent(a.gross_total_return).c_str(), a.sharpe, a.trades,
                  format_percent(h.total_return).c_str(), h.sharpe);
    out << line;
  };
  for (const auto& f : folds) {
    row(std::to_string(f.fold.index), dates(f.train_first, f.train_last), dates(f.test_first, f.test_last),
        f.evaluation.bars, agent_of(f.evaluation, f.fold.index).metrics,
        strategy(f.evaluation, kBuyAndHold, f.fold.index).metrics);
  }
  if (!stitched.timestamps.empty()) {
    row("stitched", "", dates(stitched.timestamps.front(), stitched.timestamps.back()),
        static_cast<long>(stitched.timestamps.size()), stitched.agent_metrics, stitched.buy_and_hold_metrics);
    out << "stitched out-of-sample: agent max drawdown " << format_percent(stitched.agent_metrics.max_drawdown)
        << ", buy and hold max drawdown " << format_percent(stitched.buy_and_hold_metrics.max_drawdown)
        << " (each fold starts flat)\n";
  }
  return out.str();
}

std::string walk_forward_json(const WalkForwardContext& context, const std::vector<WalkForwardFoldResult>& folds,
                              const StitchedBacktest& stitched) {
  nlohmann::json j;
  j["foxrl_version"] = FOXRL_VERSION;
  j["foxrl_commit"] = build_commit();
  j["walk_forward"] = context.spec;
  j["data"] = {
      {"origin", context.data_origin}, {"sha256", context.data_sha256}, {"median_bar_seconds", context.bar_seconds}};
  j["cost_model"] = {{"kind", "proportional: cost x |position change| per bar, subtracted from the log return"},
                     {"cost_per_unit_position_change", context.cost},
                     {"cost_bps", context.cost * 1e4}};
  j["annualisation"] = {{"bars_per_year", context.bars_per_year}, {"basis", context.annualisation_basis}};
  if (context.positions != PositionSet::long_short) j["positions"] = position_set_name(context.positions);
  j["folds"] = nlohmann::json::array();
  for (const auto& f : folds) {
    j["folds"].push_back({{"fold", f.fold.index},
                          {"dir", f.dir},
                          {"train", period_json(f.train_first, f.train_last, f.fold.train_bars())},
                          {"test", period_json(f.test_first, f.test_last, f.fold.test_bars())},
                          {"agent", metrics_json(agent_of(f.evaluation, f.fold.index).metrics)},
                          {"buy_and_hold", metrics_json(strategy(f.evaluation, kBuyAndHold, f.fold.index).metrics)}});
  }
  nlohmann::json aggregate;
  aggregate["kind"] =
      "the folds' test periods stitched in time: per-bar net returns concatenated, each fold starting flat";
  if (!stitched.timestamps.empty()) {
    aggregate["first"] = format_timestamp(stitched.timestamps.front());
    aggregate["last"] = format_timestamp(stitched.timestamps.back());
  }
  aggregate["bars"] = stitched.timestamps.size();
  aggregate["agent"] = metrics_json(stitched.agent_metrics);
  aggregate["buy_and_hold"] = metrics_json(stitched.buy_and_hold_metrics);
  aggregate["backtest"] = "walk_forward_backtest.csv";
  aggregate["chart"] = "walk_forward_equity.svg";
  j["aggregate"] = aggregate;
  return j.dump(2);
}

std::string walk_forward_csv(const StitchedBacktest& stitched) {
  std::string out =
      "timestamp,fold,position,gross_log_return,cost,net_log_return,equity,buy_and_hold_net_log_return,"
      "buy_and_hold_equity\n";
  char line[320];
  for (std::size_t i = 0; i < stitched.timestamps.size(); ++i) {
    // %.17g: the file reproduces the doubles exactly.
    std::snprintf(line, sizeof line, "%s,%d,%.0f,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g\n",
                  format_timestamp(stitched.timestamps[i]).c_str(), stitched.fold[i], stitched.positions[i],
                  stitched.agent.gross[i], stitched.agent.cost[i], stitched.agent.net[i], stitched.agent_equity[i + 1],
                  stitched.buy_and_hold.net[i], stitched.buy_and_hold_equity[i + 1]);
    out += line;
  }
  return out;
}

std::string walk_forward_svg(const WalkForwardContext& context, const StitchedBacktest& stitched) {
  ChartOptions options;
  options.log_y = true;
  // One point before the first bar and one after each, as the equity
  // vectors hold them; the first tick repeats the first bar's date.
  if (!stitched.timestamps.empty()) {
    options.x_labels.push_back(date_text(stitched.timestamps.front(), context.bar_seconds));
    for (const std::int64_t t : stitched.timestamps) options.x_labels.push_back(date_text(t, context.bar_seconds));
  }
  std::string origin = context.data_origin;
  const std::size_t slash = origin.rfind('/');
  if (slash != std::string::npos) origin.erase(0, slash + 1);  // a long path would run off the canvas
  const std::vector<ChartSeries> series = {{kDqnAgentName, stitched.agent_equity},
                                           {kBuyAndHold, stitched.buy_and_hold_equity}};
  return render_line_chart("Walk-forward " + context.spec + " on " + origin + ": out-of-sample equity, net of costs",
                           "UTC", "equity (start = 1, log scale)", series, options);
}

}  // namespace foxrl
