#include "study/study_report.hpp"

#include "core/build_info.hpp"
#include "core/error.hpp"
#include "envs/env_registry.hpp"
#include "io/strict_json.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

namespace foxrl {
namespace {

// Streams of the bootstrap seed, one per test: a test's draws do not
// depend on which other tests the study runs.
constexpr std::uint64_t kStreamSeedVersusBuyAndHold = 1ull << 56;  // + the training seed
constexpr std::uint64_t kStreamAcrossSeeds = 2ull << 56;           // + the metric's index
constexpr std::uint64_t kStreamAveragedVersusBuyAndHold = 3ull << 56;
constexpr std::uint64_t kStreamAveragedVersusZero = 4ull << 56;

// The percentile bootstrap interval of a mean over n values covers it about
// as often as mean -+ 1.96 s sqrt((n-1)/n) / sqrt(n) does: for normal
// values 75% at n = 3, 85% at n = 5, 90% at n = 10, 93% at n = 20
// (P(|t_{n-1}| < 1.96 sqrt((n-1)/n))). Below 5 seeds the interval is
// shown but no sentence judges it.
constexpr std::size_t kMinSeedsToJudgeSpread = 5;

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot be read (the seed's run did not finish its evaluation?)");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

double number_at(const nlohmann::json& j, const char* key, const std::string& file) {
  if (!j.is_object() || !j.contains(key) || !j.at(key).is_number()) {
    throw Error(file + ": field '" + key + "' is missing or not a number");
  }
  return j.at(key).get<double>();
}

TradingMetrics metrics_of(const nlohmann::json& s, const std::string& file) {
  TradingMetrics m;
  m.total_return = number_at(s, "total_return", file);
  m.sharpe = number_at(s, "sharpe", file);
  m.gross_total_return = number_at(s, "gross_total_return", file);
  m.gross_sharpe = number_at(s, "gross_sharpe", file);
  m.cost_paid = number_at(s, "cost_paid", file);
  m.trades = static_cast<long>(number_at(s, "trades", file));
  m.max_drawdown = number_at(s, "max_drawdown", file);
  m.turnover = number_at(s, "turnover", file);
  m.hit_rate = number_at(s, "hit_rate", file);
  m.bars_in_market = static_cast<long>(number_at(s, "bars_in_market", file));
  return m;
}

/// The net return a series of net log returns compounds to must be the
/// reported one (up to the rounding of summing in another order).
void check_compounds_to(const std::vector<double>& net, double total_return, const std::string& what) {
  double sum = 0;
  for (double r : net) sum += r;
  if (!(std::abs(std::expm1(sum) - total_return) <= 1e-9 * (1 + std::abs(total_return)))) {
    throw Error(what + ": the per-bar net returns compound to " + std::to_string(std::expm1(sum)) +
                " but evaluation.json reports " + std::to_string(total_return));
  }
}

std::vector<std::string> split_commas(const std::string& line) {
  std::vector<std::string> fields;
  std::string field;
  std::istringstream in(line);
  while (std::getline(in, field, ',')) fields.push_back(field);
  if (!line.empty() && line.back() == ',') fields.emplace_back();
  return fields;
}

double parse_double(const std::string& text, const std::string& where) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size()) throw Error(where + ": '" + text + "' is not a number");
  return value;
}

/// One metric across the seeds: its name in study.json, in the table, and
/// how the table prints it.
enum class Style { signed_percent, percent, number };

struct MetricColumn {
  const char* key;
  const char* label;
  Style style;
  std::function<double(const SeedMarketResult&, const SharpeDifference&)> value;
};

const std::vector<MetricColumn>& metric_columns() {
  static const std::vector<MetricColumn> columns = {
      {"net_total_return", "net return", Style::signed_percent,
       [](const auto& s, const auto&) { return s.agent.total_return; }},
      {"gross_total_return", "gross return", Style::signed_percent,
       [](const auto& s, const auto&) { return s.agent.gross_total_return; }},
      {"sharpe", "Sharpe", Style::number, [](const auto& s, const auto&) { return s.agent.sharpe; }},
      {"max_drawdown", "max drawdown", Style::percent, [](const auto& s, const auto&) { return s.agent.max_drawdown; }},
      {"trades", "trades", Style::number,
       [](const auto& s, const auto&) { return static_cast<double>(s.agent.trades); }},
      {"cost_paid", "cost paid", Style::number, [](const auto& s, const auto&) { return s.agent.cost_paid; }},
      {"sharpe_minus_buy_and_hold", "Sharpe - B&H", Style::number,
       [](const auto&, const auto& t) { return t.difference; }},
  };
  return columns;
}

std::string format_value(double v, Style style = Style::number) {
  char text[64];
  if (style == Style::signed_percent) {
    std::snprintf(text, sizeof text, "%+.2f%%", 100 * v);
  } else if (style == Style::percent) {
    std::snprintf(text, sizeof text, "%.2f%%", 100 * v);
  } else if (std::abs(v) >= 1000) {
    std::snprintf(text, sizeof text, "%.0f", v);
  } else {
    std::snprintf(text, sizeof text, "%.4g", v);
  }
  return text;
}

std::string pad(const std::string& s, std::size_t width, bool left = false) {
  if (s.size() >= width) return s;
  return left ? s + std::string(width - s.size(), ' ') : std::string(width - s.size(), ' ') + s;
}

nlohmann::json across_json(const AcrossSeeds& a) {
  return {{"median", a.median},
          {"mean", a.mean},
          {"min", a.min},
          {"max", a.max},
          {"q25", a.q25},
          {"q75", a.q75},
          {"mean_interval_95", {a.mean_interval.lower, a.mean_interval.upper}}};
}

nlohmann::json metrics_json(const TradingMetrics& m) {
  return {{"net_total_return", m.total_return},
          {"gross_total_return", m.gross_total_return},
          {"sharpe", m.sharpe},
          {"gross_sharpe", m.gross_sharpe},
          {"max_drawdown", m.max_drawdown},
          {"trades", m.trades},
          {"cost_paid", m.cost_paid}};
}

nlohmann::json test_json(const SharpeDifference& t) {
  return {{"sharpe_agent", t.sharpe_a},
          {"sharpe_other", t.sharpe_b},
          {"difference", t.difference},
          {"interval_95", {t.interval.lower, t.interval.upper}},
          {"p_value", t.p_value},
          {"significant_at_5_percent", t.significant()},
          {"bars", t.bars},
          {"mean_block_length", t.mean_block_length},
          {"rng_stream", t.stream}};
}

/// "is not distinguishable from zero (...)" for the mean of a metric over
/// the seeds, judged by its 95% bootstrap interval; too few seeds for that
/// say so instead.
std::string across_sentence(const std::string& subject, const AcrossSeeds& a, std::size_t seeds) {
  if (seeds < kMinSeedsToJudgeSpread) {
    return subject + " is not judged at the 5% level: " + std::to_string(seeds) + " seeds are too few (at least " +
           std::to_string(kMinSeedsToJudgeSpread) + ").";
  }
  char numbers[160];
  std::snprintf(numbers, sizeof numbers, "(mean %.3g, 95%% interval %.3g..%.3g over %zu seeds)", a.mean,
                a.mean_interval.lower, a.mean_interval.upper, seeds);
  if (a.mean_interval.contains(0.0)) return subject + " is not distinguishable from zero " + numbers + ".";
  return subject + " is " + (a.mean > 0 ? "above" : "below") + " zero at the 5% level " + numbers + ".";
}

void market_conclusions(StudyReport& r) {
  const std::size_t n = r.market.size();
  long significant = 0;
  for (const auto& t : r.versus_buy_and_hold) significant += t.significant() ? 1 : 0;
  if (n == 1) {
    r.conclusions.push_back(
        sharpe_difference_sentence(r.versus_buy_and_hold.front(), "The agent's Sharpe", "buy-and-hold's"));
    return;
  }
  if (r.same_bars) {
    r.conclusions.push_back(sharpe_difference_sentence(r.averaged_versus_buy_and_hold,
                                                       "The seed-averaged agent's Sharpe", "buy-and-hold's"));
    r.conclusions.push_back(
        sharpe_difference_sentence(r.averaged_versus_zero, "The seed-averaged agent's Sharpe", "zero"));
  } else {
    r.conclusions.push_back(
        "The seeds evaluated different bars (the built-in synthetic market is generated from the seed), so "
        "there is no seed-averaged test.");
  }
  r.conclusions.push_back(std::to_string(significant) + " of " + std::to_string(n) +
                          " seeds' agents have a Sharpe that differs from buy-and-hold's at the 5% level "
                          "(two-sided, each seed tested on its own, no correction for testing several).");
  const auto find = [&](const std::string& key) -> const AcrossSeeds& {
    for (const auto& [k, a] : r.metrics)
      if (k == key) return a;
    throw LogicError("study report: no metric " + key);
  };
  r.conclusions.push_back(across_sentence("The agent's mean Sharpe across seeds", find("sharpe"), n));
  r.conclusions.push_back(across_sentence("The agent's mean Sharpe minus buy-and-hold's across seeds",
                                          find("sharpe_minus_buy_and_hold"), n));
}

/// The best weights' sentences say so: read on their own (study.json's
/// best_weights, a quoted line), they would pass for the last weights'.
void name_best_weights(StudyReport& r) {
  if (r.weights != StudyWeights::best) return;
  for (auto& c : r.conclusions) {
    if (!c.empty() && c[0] >= 'A' && c[0] <= 'Z') c[0] = static_cast<char>(c[0] - 'A' + 'a');
    c = "With the best weights, " + c;
  }
}

std::string market_table(const StudyReport& r) {
  std::ostringstream out;
  const auto& first = r.market.front();
  out << "seed study: " << r.market.size() << " seeds of the market on " << first.split
      << (r.weights == StudyWeights::best ? ", best weights" : "") << "\n";
  out << "per seed (the agent net of costs; buy and hold on the seed's bars; Sharpe - B&H with its 95% "
         "stationary-bootstrap interval and two-sided p):\n";
  out << pad("seed", 6) << pad("net return", 12) << pad("gross return", 14) << pad("Sharpe", 9)
      << pad("max drawdown", 14) << pad("trades", 8) << pad("cost paid", 11) << pad("B&H Sharpe", 12)
      << pad("Sharpe - B&H", 14) << pad("95% interval", 18) << pad("p", 8) << "\n";
  for (std::size_t i = 0; i < r.market.size(); ++i) {
    const auto& s = r.market[i];
    const auto& t = r.versus_buy_and_hold[i];
    char interval[64];
    std::snprintf(interval, sizeof interval, "%.2f..%.2f", t.interval.lower, t.interval.upper);
    char p[32];
    std::snprintf(p, sizeof p, "%.2g", t.p_value);
    out << pad(std::to_string(s.seed), 6) << pad(format_value(s.agent.total_return, Style::signed_percent), 12)
        << pad(format_value(s.agent.gross_total_return, Style::signed_percent), 14)
        << pad(format_value(s.agent.sharpe), 9) << pad(format_value(s.agent.max_drawdown, Style::percent), 14)
        << pad(std::to_string(s.agent.trades), 8) << pad(format_value(s.agent.cost_paid), 11)
        << pad(format_value(s.buy_and_hold.sharpe), 12) << pad(format_value(t.difference), 14) << pad(interval, 18)
        << pad(p, 8) << "\n";
  }
  out << "across seeds (the agent): median, mean with the 95% bootstrap percentile interval of the mean, min..max, "
         "interquartile range:\n";
  out << pad("metric", 14, true) << pad("median", 11) << pad("mean", 11) << pad("95% interval of mean", 24)
      << pad("min..max", 24) << pad("IQR", 24) << "\n";
  std::size_t k = 0;
  for (const auto& column : metric_columns()) {
    const AcrossSeeds& a = r.metrics[k++].second;
    const auto v = [&](double x) { return format_value(x, column.style); };
    out << pad(column.label, 14, true) << pad(v(a.median), 11) << pad(v(a.mean), 11)
        << pad(v(a.mean_interval.lower) + ".." + v(a.mean_interval.upper), 24) << pad(v(a.min) + ".." + v(a.max), 24)
        << pad(v(a.q25) + ".." + v(a.q75), 24) << "\n";
  }
  return out.str();
}

std::string episodes_table(const StudyReport& r) {
  std::ostringstream out;
  out << "seed study: " << r.episodes.size() << " seeds of " << r.env
      << "; mean return of the last 100 episodes at the last epoch:\n";
  out << pad("seed", 6) << pad("epoch", 8) << pad("env steps", 12) << pad("episodes", 10) << pad("mean return", 13)
      << "\n";
  for (const auto& s : r.episodes) {
    out << pad(std::to_string(s.seed), 6) << pad(std::to_string(s.epoch), 8) << pad(std::to_string(s.env_steps), 12)
        << pad(std::to_string(s.episodes), 10) << pad(format_value(s.mean_return_last_100), 13) << "\n";
  }
  const auto& a = r.episodes_return;
  const auto v = [](double x) { return format_value(x); };
  out << "across seeds: median " << v(a.median) << ", mean " << v(a.mean) << " (95% bootstrap percentile interval "
      << v(a.mean_interval.lower) << ".." << v(a.mean_interval.upper) << "), min..max " << v(a.min) << ".." << v(a.max)
      << ", IQR " << v(a.q25) << ".." << v(a.q75) << "\n";
  return out.str();
}

}  // namespace

bool has_best_weights(const std::string& dir) {
  const std::string path = dir + "/evaluation.json";
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  try {
    const nlohmann::json j = parse_strict_json(read_text(path), path);
    return j.is_object() && j.contains("best") && j.at("best").is_object();
  } catch (const Error&) {
    return false;
  }
}

SeedMarketResult read_seed_market_result(std::uint64_t seed, const std::string& dir, StudyWeights weights) {
  SeedMarketResult s;
  s.seed = seed;
  s.dir = dir;
  const bool best = weights == StudyWeights::best;
  const std::string csv_path = dir + (best ? "/evaluation_best_backtest.csv" : "/evaluation_backtest.csv");
  std::string json_path = dir + "/evaluation.json";
  const nlohmann::json file = parse_strict_json(read_text(json_path), json_path);
  nlohmann::json j = file;
  if (best) {
    // The best weights' test evaluation, as the run wrote it beside the last one.
    if (!file.contains("best") || !file.at("best").is_object() || !file.at("best").contains("test"))
      throw Error(json_path + ": no 'best' section with a 'test' evaluation (the run kept no best weights)");
    s.best_epoch = static_cast<std::int64_t>(number_at(file.at("best"), "epoch", json_path));
    j = file.at("best").at("test");
    json_path += " (best.test)";
  }
  if (!j.contains("strategies") || !j.at("strategies").is_array() || j.at("strategies").empty()) {
    throw Error(json_path + ": no strategies");
  }
  s.agent = metrics_of(j.at("strategies").front(), json_path);
  bool found = false;
  for (const auto& strategy : j.at("strategies")) {
    if (strategy.value("name", std::string()) == "buy and hold") {
      s.buy_and_hold = metrics_of(strategy, json_path);
      found = true;
    }
  }
  if (!found) throw Error(json_path + ": no 'buy and hold' strategy");
  s.split = j.value("split", std::string());
  s.bars = static_cast<long>(number_at(j, "bars", json_path));
  s.cost = number_at(j.value("cost_model", nlohmann::json::object()), "cost_per_unit_position_change", json_path);
  s.bars_per_year = number_at(j.value("annualisation", nlohmann::json::object()), "bars_per_year", json_path);

  std::istringstream csv(read_text(csv_path));
  std::string line;
  std::getline(csv, line);
  if (line.rfind("bar,timestamp,position,market_log_return,gross_log_return,cost,net_log_return,equity", 0) != 0) {
    throw Error(csv_path + ": not an evaluation backtest (header '" + line.substr(0, 80) + "')");
  }
  long row = 1;
  while (std::getline(csv, line)) {
    ++row;
    if (line.empty()) continue;
    const auto fields = split_commas(line);
    const std::string where = csv_path + ":" + std::to_string(row);
    if (fields.size() != 8) throw Error(where + ": " + std::to_string(fields.size()) + " fields, 8 expected");
    s.timestamps.push_back(fields[1]);
    s.market_returns.push_back(parse_double(fields[3], where));
    s.agent_net.push_back(parse_double(fields[6], where));
  }
  if (static_cast<long>(s.agent_net.size()) != s.bars) {
    throw Error(csv_path + ": " + std::to_string(s.agent_net.size()) + " bars, but " + json_path + " reports " +
                std::to_string(s.bars));
  }
  check_compounds_to(s.agent_net, s.agent.total_return, csv_path + " (the agent)");
  s.buy_and_hold_net =
      backtest_returns(s.market_returns, std::vector<double>(s.market_returns.size(), 1.0), s.cost).net;
  check_compounds_to(s.buy_and_hold_net, s.buy_and_hold.total_return, csv_path + " (buy and hold)");
  return s;
}

SeedEpisodesResult read_seed_episodes_result(std::uint64_t seed, const std::string& dir) {
  SeedEpisodesResult s;
  s.seed = seed;
  s.dir = dir;
  const std::string path = dir + "/metrics.jsonl";
  std::istringstream in(read_text(path));
  std::string line;
  bool found = false;
  while (std::getline(in, line)) {
    nlohmann::json j;
    try {
      j = parse_strict_json(line, path);
    } catch (const UsageError&) {
      continue;  // a line cut short by a crash
    }
    if (!j.is_object() || !j.contains("epoch")) continue;
    s.epoch = j.value("epoch", std::int64_t(0));
    s.env_steps = j.value("env_steps", std::int64_t(0));
    s.episodes = j.value("episodes", std::int64_t(0));
    s.mean_return_last_100 = j.value("mean_return_last_100", 0.0);
    found = true;
  }
  if (!found) throw Error(path + ": no epoch record");
  return s;
}

AcrossSeeds summarize_across_seeds(const std::vector<double>& values, const BootstrapSettings& settings,
                                   std::uint64_t stream) {
  if (values.empty()) throw LogicError("summarize_across_seeds: no values");
  AcrossSeeds a;
  a.median = quantile(values, 0.5);
  a.q25 = quantile(values, 0.25);
  a.q75 = quantile(values, 0.75);
  a.min = *std::min_element(values.begin(), values.end());
  a.max = *std::max_element(values.begin(), values.end());
  a.mean = mean_of(values);
  BootstrapRng rng(settings.seed, stream);
  a.mean_interval = percentile_interval_of_mean(values, settings.resamples, 0.95, rng);
  return a;
}

StudyReport build_study_report(std::string env, const std::string& out_dir, const std::vector<std::uint64_t>& seeds,
                               const std::vector<std::string>& dirs, const BootstrapSettings& settings,
                               StudyWeights weights) {
  if (seeds.empty() || seeds.size() != dirs.size()) throw LogicError("build_study_report: one directory per seed");
  StudyReport r;
  r.env = env;
  r.weights = weights;
  r.out_dir = out_dir;
  r.seeds = seeds;
  r.settings = settings;
  if (env_info(env).evaluation == EvaluationKind::episodes) {
    std::vector<double> returns;
    for (std::size_t i = 0; i < seeds.size(); ++i) {
      r.episodes.push_back(read_seed_episodes_result(seeds[i], dirs[i]));
      returns.push_back(r.episodes.back().mean_return_last_100);
    }
    r.episodes_return = summarize_across_seeds(returns, settings, kStreamAcrossSeeds);
    if (seeds.size() > 1) {
      r.conclusions.push_back(across_sentence("The mean return across seeds", r.episodes_return, seeds.size()));
    }
    return r;
  }
  for (std::size_t i = 0; i < seeds.size(); ++i) {
    r.market.push_back(read_seed_market_result(seeds[i], dirs[i], weights));
    const auto& s = r.market.back();
    r.versus_buy_and_hold.push_back(sharpe_difference_test(s.agent_net, s.buy_and_hold_net, s.bars_per_year, settings,
                                                           kStreamSeedVersusBuyAndHold + seeds[i]));
  }
  std::size_t k = 0;
  for (const auto& column : metric_columns()) {
    std::vector<double> values;
    for (std::size_t i = 0; i < r.market.size(); ++i)
      values.push_back(column.value(r.market[i], r.versus_buy_and_hold[i]));
    r.metrics.emplace_back(column.key, summarize_across_seeds(values, settings, kStreamAcrossSeeds + k++));
  }
  const auto& first = r.market.front();
  r.same_bars = r.market.size() > 1;
  for (const auto& s : r.market) {
    r.same_bars = r.same_bars && s.timestamps == first.timestamps && s.market_returns == first.market_returns &&
                  s.cost == first.cost && s.bars_per_year == first.bars_per_year;
  }
  if (r.same_bars) {
    std::vector<double> averaged(first.agent_net.size(), 0.0);
    for (const auto& s : r.market)
      for (std::size_t t = 0; t < averaged.size(); ++t) averaged[t] += s.agent_net[t];
    for (double& x : averaged) x /= static_cast<double>(r.market.size());
    r.averaged_versus_buy_and_hold = sharpe_difference_test(averaged, first.buy_and_hold_net, first.bars_per_year,
                                                            settings, kStreamAveragedVersusBuyAndHold);
    r.averaged_versus_zero = sharpe_difference_test(averaged, std::vector<double>(averaged.size(), 0.0),
                                                    first.bars_per_year, settings, kStreamAveragedVersusZero);
  }
  market_conclusions(r);
  name_best_weights(r);
  if (weights == StudyWeights::last &&
      std::all_of(dirs.begin(), dirs.end(), [](const std::string& d) { return has_best_weights(d); })) {
    // The same draws as the last weights' report (the same streams): the
    // two reports differ only by the weights they evaluate.
    r.best_weights = std::make_shared<const StudyReport>(
        build_study_report(env, out_dir, seeds, dirs, settings, StudyWeights::best));
  }
  return r;
}

std::string StudyReport::table() const {
  std::string out = env_info(env).evaluation == EvaluationKind::episodes ? episodes_table(*this) : market_table(*this);
  for (const auto& c : conclusions) out += c + "\n";
  if (best_weights) {
    out += "\nthe best weights of each seed's run (by its validation score; epoch";
    for (const auto& s : best_weights->market) out += " " + std::to_string(s.best_epoch);
    out += "):\n" + best_weights->table();
  }
  return out;
}

std::string StudyReport::json() const {
  nlohmann::json j;
  j["foxrl_version"] = FOXRL_VERSION;
  j["foxrl_commit"] = build_commit();
  j["env"] = env;
  j["seeds"] = seeds;
  j["bootstrap"] = {{"rng", "mt19937_64, stream s of seed: engine seeded with splitmix64(seed ^ splitmix64(s))"},
                    {"seed", settings.seed},
                    {"resamples", settings.resamples},
                    {"level", 0.95},
                    {"across_seeds", "percentile interval of the mean over the seeds, seeds resampled i.i.d."},
                    {"min_seeds_to_judge_spread", kMinSeedsToJudgeSpread},
                    {"sharpe_difference",
                     {{"method",
                       "stationary block bootstrap (Politis and Romano 1994) of the pairs of per-bar net log returns, "
                       "geometric block lengths, wrapping"},
                      {"mean_block_length", settings.block_length > 0 ? nlohmann::json(settings.block_length)
                                                                      : nlohmann::json("round(bars^(1/3))")},
                      {"interval", "symmetric: difference -+ the 95% quantile of |resampled - observed difference|"},
                      {"p_value", "two-sided: (1 + #{|resampled - observed| >= |observed|}) / (resamples + 1)"}}}};
  if (env_info(env).evaluation == EvaluationKind::episodes) {
    for (const auto& s : episodes) {
      j["per_seed"].push_back({{"seed", s.seed},
                               {"dir", std::filesystem::path(s.dir).filename().string()},
                               {"epoch", s.epoch},
                               {"env_steps", s.env_steps},
                               {"episodes", s.episodes},
                               {"mean_return_last_100", s.mean_return_last_100}});
    }
    j["aggregate"] = {{"mean_return_last_100", across_json(episodes_return)}};
  } else {
    for (std::size_t i = 0; i < market.size(); ++i) {
      const auto& s = market[i];
      j["per_seed"].push_back({{"seed", s.seed},
                               {"dir", std::filesystem::path(s.dir).filename().string()},
                               {"split", s.split},
                               {"bars", s.bars},
                               {"bars_per_year", s.bars_per_year},
                               {"cost_per_unit_position_change", s.cost},
                               {"agent", metrics_json(s.agent)},
                               {"buy_and_hold", metrics_json(s.buy_and_hold)},
                               {"sharpe_versus_buy_and_hold", test_json(versus_buy_and_hold[i])}});
      if (weights == StudyWeights::best) j["per_seed"].back()["best_epoch"] = s.best_epoch;
    }
    for (const auto& [key, a] : metrics) j["aggregate"]["agent"][key] = across_json(a);
    j["seed_averaged"]["same_bars"] = same_bars;
    if (same_bars) {
      j["seed_averaged"]["returns"] = "per bar: the mean over the seeds of the agents' net log returns";
      j["seed_averaged"]["sharpe_versus_buy_and_hold"] = test_json(averaged_versus_buy_and_hold);
      j["seed_averaged"]["sharpe_versus_zero"] = test_json(averaged_versus_zero);
    }
  }
  j["conclusions"] = conclusions;
  if (env_info(env).evaluation == EvaluationKind::backtest)
    j["weights"] = weights == StudyWeights::best ? "best" : "last";
  if (best_weights) {
    // The best weights' report without what the two share (versions,
    // bootstrap settings, seeds).
    nlohmann::json b = nlohmann::json::parse(best_weights->json());
    for (const char* shared : {"foxrl_version", "foxrl_commit", "env", "seeds", "bootstrap"}) b.erase(shared);
    j["best_weights"] = b;
  }
  return j.dump(2);
}

}  // namespace foxrl
