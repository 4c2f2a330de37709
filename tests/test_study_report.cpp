// A study report (src/study/study_report.hpp) over run directories whose
// evaluation files are written from known positions on one series: the
// seeds traded the same bars, so the seed-averaged returns are tested, and
// files that disagree with each other are refused by name.
#include "study/study_report.hpp"

#include "core/error.hpp"
#include "io/atomic_file.hpp"
#include "market/market_data.hpp"
#include "market/market_evaluation.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

/// A run directory holding the evaluation of `positions` over bars
/// [first, first + positions.size()) of `series`, as TrainingRun writes it.
std::string write_run(const std::string& dir, const foxrl::MarketSeries& series, int first,
                      const std::vector<double>& positions) {
  fs::create_directories(dir);
  const auto report = foxrl::build_evaluation_report(series, first, positions, 0.0005, 252, 1);
  foxrl::write_file_atomically(dir + "/evaluation.json", report.json() + "\n");
  foxrl::write_file_atomically(dir + "/evaluation_backtest.csv", report.backtest_csv());
  return dir;
}

/// As write_run, plus best weights that took `best_positions` (their
/// epoch `best_epoch`), as TrainingRun writes them beside the last ones:
/// evaluation.json's "best" section and evaluation_best_backtest.csv.
std::string write_run_with_best(const std::string& dir, const foxrl::MarketSeries& series, int first,
                                const std::vector<double>& positions, const std::vector<double>& best_positions,
                                int best_epoch) {
  write_run(dir, series, first, positions);
  const auto last = foxrl::build_evaluation_report(series, first, positions, 0.0005, 252, 1);
  const auto best = foxrl::build_evaluation_report(series, first, best_positions, 0.0005, 252, 1);
  nlohmann::json j = nlohmann::json::parse(last.json());
  j["weights"] = "last";
  j["best"] = {{"weights", "best"}, {"epoch", best_epoch}, {"test", nlohmann::json::parse(best.json())}};
  foxrl::write_file_atomically(dir + "/evaluation.json", j.dump(2) + "\n");
  foxrl::write_file_atomically(dir + "/evaluation_best_backtest.csv", best.backtest_csv());
  return dir;
}

/// Independent reference of per-bar net log returns of `positions` held
/// over bars [first, first + positions.size()), cost 5 bp per unit change.
std::vector<double> net_returns(const foxrl::MarketSeries& series, int first, const std::vector<double>& positions) {
  std::vector<double> net(positions.size());
  double previous = 0;
  for (std::size_t t = 0; t < positions.size(); ++t) {
    const double r = std::log(series.close[first + t] / series.close[first + t - 1]);
    net[t] = positions[t] * r - 0.0005 * std::abs(positions[t] - previous);
    previous = positions[t];
  }
  return net;
}

/// Overwrites the first bar's net log return of the backtest CSV at `path`
/// with 0.5, so that it no longer compounds to its evaluation.json.
void break_first_net_return(const std::string& path) {
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto row = text.find('\n', text.find('\n') + 1);             // end of the first bar's row
  const auto comma = text.rfind(',', text.rfind(',', row - 1) - 1);  // before its net return
  text.replace(comma + 1, text.rfind(',', row - 1) - comma - 1, "0.5");
  foxrl::write_file_atomically(path, text);
}

std::vector<double> random_positions(std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<double> p(n);
  double current = 0;
  for (auto& x : p) {
    if (rng() % 20 == 0) current = static_cast<double>(static_cast<int>(rng() % 3) - 1);  // a trade every ~20 bars
    x = current;
  }
  return p;
}

}  // namespace

TEST_CASE("seeds on the same bars: the seed-averaged returns are tested against buy and hold and zero",
          "[seed_study]") {
  const std::string root = (fs::temp_directory_path() / ("foxrl_study_report_" + std::to_string(::getpid()))).string();
  fs::remove_all(root);
  const auto series = foxrl::make_synthetic_market("regime", 1200, 3);
  const int first = 200;
  const std::size_t bars = 1000;
  std::vector<std::string> dirs;
  std::vector<std::vector<double>> nets;
  for (std::uint32_t s = 1; s <= 5; ++s) {
    const auto positions = random_positions(bars, s);
    dirs.push_back(write_run(root + "/seed_" + std::to_string(s), series, first, positions));
    // Independent reference of the agent's per-bar net log returns.
    std::vector<double> net(bars);
    double previous = 0;
    for (std::size_t t = 0; t < bars; ++t) {
      const double r = std::log(series.close[first + t] / series.close[first + t - 1]);
      net[t] = positions[t] * r - 0.0005 * std::abs(positions[t] - previous);
      previous = positions[t];
    }
    nets.push_back(net);
  }
  foxrl::BootstrapSettings settings;
  settings.resamples = 300;
  const auto report = foxrl::build_study_report("market", root, {1, 2, 3, 4, 5}, dirs, settings);
  REQUIRE(report.same_bars);
  REQUIRE(report.market.size() == 5);
  for (std::size_t k = 0; k < 5; ++k) {
    REQUIRE(report.market[k].agent_net.size() == bars);
    for (std::size_t t = 0; t < bars; t += 97) CHECK(report.market[k].agent_net[t] == Approx(nets[k][t]).margin(1e-12));
  }
  std::vector<double> averaged(bars, 0.0), hold(bars);
  for (std::size_t t = 0; t < bars; ++t) {
    for (const auto& n : nets) averaged[t] += n[t] / 5;
    hold[t] = std::log(series.close[first + t] / series.close[first + t - 1]) - (t == 0 ? 0.0005 : 0.0);
  }
  CHECK(report.averaged_versus_buy_and_hold.sharpe_a == Approx(foxrl::annualised_sharpe(averaged, 252)).epsilon(1e-9));
  CHECK(report.averaged_versus_buy_and_hold.sharpe_b == Approx(foxrl::annualised_sharpe(hold, 252)).epsilon(1e-9));
  CHECK(report.averaged_versus_zero.sharpe_b == 0);
  CHECK(report.averaged_versus_buy_and_hold.mean_block_length == 10);  // round(1000^(1/3))
  const std::string table = report.table();
  CHECK_THAT(table, Catch::Contains(foxrl::sharpe_difference_sentence(
                        report.averaged_versus_buy_and_hold, "The seed-averaged agent's Sharpe", "buy-and-hold's")));
  CHECK_THAT(table, Catch::Contains(foxrl::sharpe_difference_sentence(report.averaged_versus_zero,
                                                                      "The seed-averaged agent's Sharpe", "zero")));
  CHECK_THAT(table, Catch::Contains("seeds' agents have a Sharpe that differs from buy-and-hold's"));
  CHECK_THAT(report.json(), Catch::Contains("\"sharpe_versus_zero\""));
  CHECK(report.best_weights == nullptr);  // no run kept best weights

  // A backtest that does not compound to its evaluation.json is refused.
  break_first_net_return(dirs[0] + "/evaluation_backtest.csv");
  CHECK_THROWS_WITH(foxrl::build_study_report("market", root, {1, 2, 3, 4, 5}, dirs, settings),
                    Catch::Contains(dirs[0] + "/evaluation_backtest.csv") && Catch::Contains("compound"));
  fs::remove_all(root);
}

TEST_CASE("seeds that kept best weights: the study reports them the same way, beside the last ones", "[seed_study]") {
  const std::string root =
      (fs::temp_directory_path() / ("foxrl_study_report_best_" + std::to_string(::getpid()))).string();
  fs::remove_all(root);
  const auto series = foxrl::make_synthetic_market("regime", 1200, 4);
  const int first = 200;
  const std::size_t bars = 1000;
  std::vector<std::string> dirs;
  std::vector<std::vector<double>> best_nets;
  std::vector<double> best_returns;
  for (std::uint32_t s = 1; s <= 3; ++s) {
    const auto positions = random_positions(bars, s), best_positions = random_positions(bars, 100 + s);
    dirs.push_back(write_run_with_best(root + "/seed_" + std::to_string(s), series, first, positions, best_positions,
                                       static_cast<int>(s) + 1));
    best_nets.push_back(net_returns(series, first, best_positions));
    double sum = 0;
    for (const double x : best_nets.back()) sum += x;
    best_returns.push_back(std::expm1(sum));
  }
  foxrl::BootstrapSettings settings;
  settings.resamples = 300;
  const auto report = foxrl::build_study_report("market", root, {1, 2, 3}, dirs, settings);
  REQUIRE(report.best_weights != nullptr);
  const auto& best = *report.best_weights;
  CHECK(best.weights == foxrl::StudyWeights::best);
  CHECK(best.best_weights == nullptr);
  REQUIRE(best.market.size() == 3);
  for (std::size_t k = 0; k < 3; ++k) {
    INFO("seed " << k + 1);
    CHECK(best.market[k].best_epoch == static_cast<std::int64_t>(k) + 2);
    REQUIRE(best.market[k].agent_net.size() == bars);
    for (std::size_t t = 0; t < bars; t += 89)
      CHECK(best.market[k].agent_net[t] == Approx(best_nets[k][t]).margin(1e-12));
    CHECK(best.market[k].agent.total_return == Approx(best_returns[k]).epsilon(1e-9));
    // The last weights' rows stay the last weights'.
    CHECK(report.market[k].agent.total_return != best.market[k].agent.total_return);
    CHECK(best.versus_buy_and_hold[k].sharpe_a == Approx(foxrl::annualised_sharpe(best_nets[k], 252)).epsilon(1e-9));
  }
  std::vector<double> averaged(bars, 0.0);
  for (std::size_t t = 0; t < bars; ++t)
    for (const auto& n : best_nets) averaged[t] += n[t] / 3;
  REQUIRE(best.same_bars);
  CHECK(best.averaged_versus_buy_and_hold.sharpe_a == Approx(foxrl::annualised_sharpe(averaged, 252)).epsilon(1e-9));

  const auto j = nlohmann::json::parse(report.json());
  CHECK(j.at("weights") == "last");
  const auto& b = j.at("best_weights");
  CHECK(b.at("weights") == "best");
  CHECK_FALSE(b.contains("bootstrap"));  // shared with the last weights' report
  REQUIRE(b.at("per_seed").size() == 3);
  for (std::size_t k = 0; k < 3; ++k) {
    CHECK(b.at("per_seed").at(k).at("best_epoch") == static_cast<int>(k) + 2);
    CHECK(b.at("per_seed").at(k).at("agent").at("net_total_return").get<double>() ==
          Approx(best_returns[k]).epsilon(1e-9));
  }
  REQUIRE_FALSE(b.at("conclusions").empty());
  // Each of the best weights' sentences says which weights it is about; the
  // last weights' do not.
  for (const auto& c : b.at("conclusions")) CHECK(c.get<std::string>().rfind("With the best weights, ", 0) == 0);
  for (const auto& c : j.at("conclusions")) CHECK(c.get<std::string>().find("best weights") == std::string::npos);
  CHECK(b.at("conclusions").size() == j.at("conclusions").size());
  const std::string table = report.table();
  CHECK_THAT(table, Catch::Contains("the best weights of each seed's run (by its validation score; epoch 2 3 4)") &&
                        Catch::Contains("), best weights\n"));

  // One seed without best weights: no best report (the seeds are compared alike or not at all).
  write_run(dirs[1], series, first, random_positions(bars, 2));
  CHECK(foxrl::build_study_report("market", root, {1, 2, 3}, dirs, settings).best_weights == nullptr);

  // A best backtest that disagrees with its evaluation is refused by name.
  break_first_net_return(dirs[0] + "/evaluation_best_backtest.csv");
  CHECK_THROWS_WITH(foxrl::read_seed_market_result(1, dirs[0], foxrl::StudyWeights::best),
                    Catch::Contains(dirs[0] + "/evaluation_best_backtest.csv") && Catch::Contains("compound"));
  fs::remove_all(root);
}
