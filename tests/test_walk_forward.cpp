// Walk-forward evaluation: the config key test_end that ends a fold's test
// split, the plan's checks before training, the stitched out-of-sample
// backtest against a float64 recomputation from the folds' positions, and a
// two-fold run on the built-in synthetic market whose stitched equity is
// recomputed from the folds' own evaluation_backtest.csv files.
#include "config/train_config.hpp"
#include "core/error.hpp"
#include "market/market_data.hpp"
#include "market/market_evaluation.hpp"
#include "market/market_setup.hpp"
#include "study/walk_forward.hpp"
#include "support/tiny_trainer_config.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;

std::string scratch_dir(const std::string& name) {
  const auto dir = fs::temp_directory_path() / ("foxrl_walk_forward_" + std::to_string(::getpid()) + "_" + name);
  fs::remove_all(dir);
  return dir.string();
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

/// The rows of a CSV file after its header, split at commas.
std::vector<std::vector<std::string>> csv_rows(const std::string& path, std::string* header = nullptr) {
  std::istringstream in(read_text(path));
  std::string line;
  std::getline(in, line);
  if (header != nullptr) *header = line;
  std::vector<std::vector<std::string>> rows;
  while (std::getline(in, line)) {
    std::vector<std::string> fields;
    std::istringstream cells(line);
    std::string cell;
    while (std::getline(cells, cell, ',')) fields.push_back(cell);
    rows.push_back(fields);
  }
  return rows;
}

std::string usage_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const foxrl::UsageError& e) {
    return e.what();
  }
  return "(no error)";
}

/// The tiny market run of the walk-forward tests: 1200 synthetic minute
/// bars, so that train=600,test=300,step=300 gives two folds.
foxrl::TrainConfig tiny_market(const std::string& out_dir) {
  foxrl::TrainConfig c = foxrl::test::tiny_trainer_config("market", out_dir, 1);
  c.synthetic_bars = 1200;
  return c;
}

std::string iso_of_bar(const foxrl::MarketSeries& s, int bar) {
  return foxrl::format_timestamp(s.timestamp[static_cast<std::size_t>(bar)]);
}

struct Lines : foxrl::TrainingObserver {
  std::vector<std::string> lines;
  void on_log(const std::string& line) override { lines.push_back(line); }
  bool saw(const std::string& part) const {
    for (const auto& l : lines)
      if (l.find(part) != std::string::npos) return true;
    return false;
  }
};

}  // namespace

TEST_CASE("the config key test_end ends the test split", "[walk_forward]") {
  foxrl::TrainConfig c;
  c.synthetic_bars = 2000;  // minute bars from 2017-01-01T00:00:00Z
  const foxrl::MarketSeries series = foxrl::prepare_market(c).series;
  c.train_end = iso_of_bar(series, 999);
  c.test_start = iso_of_bar(series, 1200);
  c.test_end = iso_of_bar(series, 1499);
  const foxrl::MarketSplits s = foxrl::prepare_market(c).splits;
  CHECK(s.train.end == 1000);
  CHECK(s.validation.begin == 1000);
  CHECK(s.validation.end == 1200);
  CHECK(s.test.begin == 1200);
  CHECK(s.test.end == 1500);
  // A date alone means its whole day: the 1440 minutes of 2017-01-01.
  c.test_end = "2017-01-01";
  CHECK(foxrl::prepare_market(c).splits.test.end == 1440);

  // Written to config.json only when set, so the configs (and config
  // hashes) of runs saved before the key existed stay as they were.
  CHECK(foxrl::TrainConfig{}.to_json().find("test_end") == std::string::npos);
  CHECK_THAT(c.to_json(), Contains("\"test_end\": \"2017-01-01\""));
  CHECK(foxrl::TrainConfig::from_json_text(c.to_json(), "test").test_end == "2017-01-01");

  c.test_end = iso_of_bar(series, 1100);
  CHECK_THAT(usage_error_of([&] { foxrl::prepare_market(c); }),
             Contains("'test_end'") && Contains("must not come before key 'test_start'"));
  foxrl::TrainConfig alone;
  alone.synthetic_bars = 2000;
  alone.test_end = "2017-01-01";
  CHECK_THAT(usage_error_of([&] { foxrl::prepare_market(alone); }),
             Contains("key 'test_end' ('2017-01-01') needs 'train_end' and 'test_start'"));
}

TEST_CASE("a walk-forward plan sets each fold's keys and checks the folds before training", "[walk_forward]") {
  const std::string dir = scratch_dir("plan");
  const foxrl::TrainConfig config = tiny_market(dir);
  const auto spec = foxrl::parse_walk_forward_spec("train=600,test=300,step=300");
  const foxrl::WalkForwardPlan plan = foxrl::plan_walk_forward(config, spec);
  REQUIRE(plan.folds.size() == 2);
  REQUIRE(plan.fold_configs.size() == 2);
  const foxrl::MarketSeries& s = plan.market.series;
  const foxrl::TrainConfig& f1 = plan.fold_configs[1];
  CHECK(f1.out_dir == dir + "/fold_1");
  CHECK(f1.start_date == iso_of_bar(s, 300));
  CHECK(f1.train_end == iso_of_bar(s, 899));
  CHECK(f1.test_start == iso_of_bar(s, 900));
  CHECK(f1.test_end == iso_of_bar(s, 1199));
  // One annualisation for every fold: the minute bars' 525949 a year.
  CHECK(f1.bars_per_year == Approx(plan.market.annualisation.bars_per_year));
  CHECK(plan.context.annualisation_basis == "measured");
  CHECK(!fs::exists(dir + "/fold_0"));  // nothing written by the plan

  // The data holds no fold.
  CHECK_THAT(usage_error_of([&] {
               foxrl::plan_walk_forward(config, foxrl::parse_walk_forward_spec("train=1000,test=300,step=300"));
             }),
             Contains("synthetic:regime spans 2017-01-01 00:00 .. 2017-01-01 19:59") && Contains("1200 bars") &&
                 Contains("no whole fold"));
  // A train period too short for an episode after the window (16 + 30).
  CHECK_THAT(usage_error_of([&] {
               foxrl::plan_walk_forward(config, foxrl::parse_walk_forward_spec("train=40,test=300,step=300"));
             }),
             Contains("fold 0") && Contains("40 bars") && Contains("needs at least 46 bars"));
  foxrl::TrainConfig with_split = config;
  with_split.test_start = "2017-01-01T10:00:00Z";
  CHECK_THAT(usage_error_of([&] { foxrl::plan_walk_forward(with_split, spec); }),
             Contains("--walk-forward") && Contains("'test_start'"));
  foxrl::TrainConfig cartpole = foxrl::test::tiny_trainer_config("cartpole", dir, 1);
  CHECK_THAT(usage_error_of([&] { foxrl::plan_walk_forward(cartpole, spec); }),
             Contains("--walk-forward") && Contains("market") && Contains("cartpole"));
  // An earlier walk-forward in out_dir is refused unless overwritten.
  fs::create_directories(dir + "/fold_1");
  std::ofstream(dir + "/fold_1/train.log") << "an earlier run\n";
  CHECK_THAT(usage_error_of([&] { foxrl::plan_walk_forward(config, spec); }),
             Contains(dir + "/fold_1") && Contains("--overwrite"));
  CHECK(foxrl::plan_walk_forward(config, spec, true).folds.size() == 2);
  fs::remove_all(dir);
}

TEST_CASE("walk-forward durations count from start_date where it cuts the data", "[walk_forward]") {
  foxrl::TrainConfig config = tiny_market(scratch_dir("anchor"));
  config.synthetic_bars = 5000;  // minute bars 2017-01-01 00:00 .. 2017-01-04 11:19
  const auto days = foxrl::parse_walk_forward_spec("train=1d,test=1d,step=1d");
  // From noon: fold 0 trains noon to noon (1440 bars) and tests the next
  // day; fold 1 would test until 2017-01-04 12:00, after the last bar.
  config.start_date = "2017-01-01T12:00:00Z";
  const auto noon = foxrl::plan_walk_forward(config, days);
  REQUIRE(noon.folds.size() == 1);
  CHECK(noon.folds[0].train_bars() == 1440);
  CHECK(noon.folds[0].test_end == 2880);
  CHECK(noon.fold_configs[0].test_end == "2017-01-03T11:59:00Z");
  // A start_date before the data counts from the first bar: midnight.
  config.start_date = "2016-12-31";
  const auto midnight = foxrl::plan_walk_forward(config, days);
  REQUIRE(midnight.folds.size() == 2);
  CHECK(midnight.folds[1].train_begin == 1440);
  CHECK(midnight.folds[1].test_end == 4320);
  CHECK(midnight.fold_configs[1].test_start == "2017-01-03T00:00:00Z");
}

TEST_CASE("the stitched backtest is the folds' backtests in sequence, each fold entering from flat", "[walk_forward]") {
  // Twelve bars; fold 0 tests bars 3 .. 6, fold 1 bars 7 .. 9.
  foxrl::MarketSeries series;
  series.source = "hand";
  const std::vector<double> close = {100, 101, 99, 102, 104, 103, 101, 100, 98, 99, 103, 104};
  for (std::size_t i = 0; i < close.size(); ++i) {
    series.timestamp.push_back(978307200 + static_cast<std::int64_t>(i) * 86400);
    series.open.push_back(i == 0 ? 100 : close[i - 1]);
    series.high.push_back(close[i] + 2);
    series.low.push_back(close[i] - 2);
    series.close.push_back(close[i]);
    series.volume.push_back(1);
  }
  const double cost = 0.001, bars_per_year = 252;
  const std::vector<std::vector<double>> positions = {{1, 1, 0, -1}, {-1, -1, 1}};
  const std::vector<int> first = {3, 7};
  std::vector<foxrl::WalkForwardFoldResult> folds;
  for (int k = 0; k < 2; ++k) {
    foxrl::WalkForwardFoldResult r;
    r.fold.index = k;
    r.fold.test_begin = first[k];
    r.fold.test_end = first[k] + static_cast<int>(positions[k].size());
    r.evaluation = foxrl::build_evaluation_report(series, first[k], positions[k], cost, bars_per_year, 1);
    folds.push_back(r);
  }
  const foxrl::StitchedBacktest s = foxrl::stitch_walk_forward(folds, bars_per_year);

  // Float64 reference: net = p r - cost |p - previous|, previous flat at
  // each fold's first bar; buy and hold pays its entry once a fold.
  std::vector<double> net, hold;
  for (int k = 0; k < 2; ++k) {
    double previous = 0;
    for (std::size_t i = 0; i < positions[k].size(); ++i) {
      const std::size_t t = static_cast<std::size_t>(first[k]) + i;
      const double r = std::log(close[t] / close[t - 1]);
      const double p = positions[k][i];
      net.push_back(p * r - cost * std::fabs(p - previous));
      hold.push_back(r - (i == 0 ? cost : 0.0));
      previous = p;
    }
  }
  REQUIRE(s.timestamps.size() == 7);
  CHECK(s.timestamps.front() == series.timestamp[3]);
  CHECK(s.timestamps.back() == series.timestamp[9]);
  CHECK(s.fold == std::vector<int>{0, 0, 0, 0, 1, 1, 1});
  double log_equity = 0, log_hold = 0;
  for (std::size_t i = 0; i < 7; ++i) {
    log_equity += net[i];
    log_hold += hold[i];
    CHECK(s.agent_equity[i + 1] == Approx(std::exp(log_equity)).epsilon(1e-12));
    CHECK(s.buy_and_hold_equity[i + 1] == Approx(std::exp(log_hold)).epsilon(1e-12));
  }
  CHECK(s.agent_metrics.total_return == Approx(std::expm1(log_equity)).epsilon(1e-12));
  // 0 -> 1, 1 -> 0, 0 -> -1 in fold 0; flat -> -1, -1 -> 1 in fold 1.
  CHECK(s.agent_metrics.trades == 5);
  CHECK(s.agent_metrics.trades ==
        folds[0].evaluation.strategies.front().metrics.trades + folds[1].evaluation.strategies.front().metrics.trades);
  CHECK(s.buy_and_hold_metrics.trades == 2);
  double mean = 0;
  for (double x : net) mean += x / 7;
  double var = 0;
  for (double x : net) var += (x - mean) * (x - mean) / 6;
  CHECK(s.agent_metrics.sharpe == Approx(mean / std::sqrt(var) * std::sqrt(252.0)).epsilon(1e-12));

  foxrl::WalkForwardContext context;
  context.spec = "train=3,test=4,step=4";
  context.data_origin = "hand";
  context.bar_seconds = 86400;
  context.cost = cost;
  context.bars_per_year = bars_per_year;
  const auto j = nlohmann::json::parse(foxrl::walk_forward_json(context, folds, s));
  CHECK(j["walk_forward"] == "train=3,test=4,step=4");
  REQUIRE(j["folds"].size() == 2);
  CHECK(j["folds"][1]["test"]["bars"] == 3);
  CHECK(j["aggregate"]["bars"] == 7);
  CHECK(j["aggregate"]["agent"]["trades"] == 5);
  CHECK(j["aggregate"]["first"] == foxrl::format_timestamp(series.timestamp[3]));
  std::string header;
  std::istringstream csv(foxrl::walk_forward_csv(s));
  std::getline(csv, header);
  CHECK(header ==
        "timestamp,fold,position,gross_log_return,cost,net_log_return,equity,buy_and_hold_net_log_return,"
        "buy_and_hold_equity");
  CHECK_THAT(foxrl::walk_forward_svg(context, s), Contains("<svg") && Contains("buy and hold"));
  CHECK_THAT(foxrl::walk_forward_table(context, folds, s), Contains("stitched"));
}

TEST_CASE("a two-fold walk-forward on the synthetic market writes its folds and the stitched report",
          "[walk_forward]") {
  const std::string dir = scratch_dir("run");
  const auto spec = foxrl::parse_walk_forward_spec("train=600,test=300,step=300");
  Lines lines;
  const foxrl::WalkForwardResult result =
      foxrl::run_walk_forward(foxrl::plan_walk_forward(tiny_market(dir), spec), lines);
  CHECK(lines.saw("walk-forward fold 1 of 2: train 2017-01-01 00:00 .. 2017-01-01 09:59 (600 bars), test"));
  CHECK(lines.saw("walk-forward fold 2 of 2"));
  CHECK(lines.saw("stitched"));
  REQUIRE(result.folds.size() == 2);
  for (const char* file : {"walk_forward.json", "walk_forward_backtest.csv", "walk_forward_equity.svg"}) {
    CHECK(fs::exists(dir + "/" + file));
  }
  for (int k = 0; k < 2; ++k) {
    const std::string fold = dir + "/fold_" + std::to_string(k);
    for (const char* file : {"train.log", "config.json", "evaluation.json", "evaluation_backtest.csv"}) {
      CHECK(fs::exists(fold + "/" + file));
    }
    CHECK_THAT(read_text(fold + "/config.json"), Contains("\"test_end\""));
  }

  // The stitched equity recomputed from the folds' own backtest files: the
  // product of each fold's net equity curve, one after the other.
  std::vector<std::vector<std::string>> expected;
  std::vector<double> expected_equity;
  double carried = 1;
  for (int k = 0; k < 2; ++k) {
    const auto rows = csv_rows(dir + "/fold_" + std::to_string(k) + "/evaluation_backtest.csv");
    REQUIRE(rows.size() == 300);
    for (const auto& row : rows) {
      expected.push_back({row[1], std::to_string(k), row[2]});
      expected_equity.push_back(carried * std::stod(row[7]));
    }
    carried *= std::stod(rows.back()[7]);
  }
  const auto stitched = csv_rows(dir + "/walk_forward_backtest.csv");
  REQUIRE(stitched.size() == 600);
  for (std::size_t i = 0; i < stitched.size(); ++i) {
    INFO("bar " << i << " of the stitched backtest");
    CHECK(stitched[i][0] == expected[i][0]);  // timestamp
    CHECK(stitched[i][1] == expected[i][1]);  // fold
    CHECK(stitched[i][2] == expected[i][2]);  // position
    CHECK(std::stod(stitched[i][6]) == Approx(expected_equity[i]).epsilon(1e-12));
  }

  const auto j = nlohmann::json::parse(read_text(dir + "/walk_forward.json"));
  REQUIRE(j["folds"].size() == 2);
  CHECK(j["folds"][0]["dir"] == "fold_0");
  CHECK(j["folds"][0]["train"]["bars"] == 600);
  CHECK(j["folds"][1]["test"]["bars"] == 300);
  CHECK(j["folds"][1]["test"]["first"] == "2017-01-01T15:00:00Z");  // bar 900 of minute bars
  CHECK(j["folds"][1]["test"]["last"] == "2017-01-01T19:59:00Z");
  for (int k = 0; k < 2; ++k) {
    const auto e = nlohmann::json::parse(read_text(dir + "/fold_" + std::to_string(k) + "/evaluation.json"));
    CHECK(j["folds"][k]["agent"]["total_return"] == e["strategies"][0]["total_return"]);
    CHECK(j["folds"][k]["buy_and_hold"]["sharpe"] == e["strategies"][1]["sharpe"]);
  }
  CHECK(j["aggregate"]["bars"] == 600);
  CHECK(j["aggregate"]["agent"]["total_return"].get<double>() == Approx(carried - 1).epsilon(1e-12));

  // A second walk-forward into the same out_dir is refused before it
  // trains, unless it overwrites the first.
  CHECK_THAT(usage_error_of([&] { foxrl::plan_walk_forward(tiny_market(dir), spec); }),
             Contains(dir + "/walk_forward.json") && Contains("--overwrite"));
  fs::remove_all(dir);
}
