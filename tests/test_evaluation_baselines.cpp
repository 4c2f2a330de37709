// The evaluation's baselines (random with the agent's number of trades, a
// moving-average crossover without look-ahead) and its run record in
// evaluation.json (version, data hash, rows, splits, cost model,
// annualisation); SHA-256 against the standard's test vectors.
#include "core/build_info.hpp"
#include "core/error.hpp"
#include "io/sha256.hpp"
#include "market/market_evaluation.hpp"
#include "market/market_setup.hpp"
#include "support/env_test_util.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

namespace {

long trades_of(const std::vector<double>& positions) {
  long trades = 0;
  double previous = 0;
  for (double p : positions) {
    trades += p != previous;
    previous = p;
  }
  return trades;
}

std::string daily_csv(int bars) {
  std::ostringstream out;
  out << "timestamp,open,high,low,close,volume\n";
  double close = 100;
  for (int i = 0; i < bars; ++i) {
    const double open = close;
    close = open * std::exp(0.01 * std::sin(0.3 * i));
    out << (1577836800 + std::int64_t(i) * 86400) << "," << open << "," << std::max(open, close) * 1.001 << ","
        << std::min(open, close) * 0.999 << "," << close << ",1\n";
  }
  return out.str();
}

}  // namespace

TEST_CASE("random baseline makes exactly the agent's number of trades", "[eval]") {
  for (const long trades : {0L, 1L, 7L, 150L, 400L}) {
    INFO(trades);
    const auto p = foxrl::random_positions_with_trades(400, trades, 11);
    REQUIRE(p.size() == 400);
    CHECK(trades_of(p) == trades);
    for (double x : p) CHECK((x == -1 || x == 0 || x == 1));
  }
  // More trades than bars: one per bar.
  CHECK(trades_of(foxrl::random_positions_with_trades(10, 50, 3)) == 10);
  // Seeded: the same draw each time, another seed another draw.
  CHECK(foxrl::random_positions_with_trades(200, 30, 5) == foxrl::random_positions_with_trades(200, 30, 5));
  CHECK(foxrl::random_positions_with_trades(200, 30, 5) != foxrl::random_positions_with_trades(200, 30, 6));
}

TEST_CASE("crossover baseline follows its moving averages without look-ahead", "[eval]") {
  // Closes 1..8 then falling: fast (2) vs slow (4) means of the closes
  // before each bar.
  const std::vector<double> closes = {1, 2, 3, 4, 5, 6, 7, 8, 4, 2, 1, 1};
  const auto p = foxrl::crossover_positions(closes, 2, 10, 2, 4);
  // By hand: bars 2, 3 have fewer than 4 closes before them -> flat. Bar 4
  // (closes 1 2 3 4 before it): fast 3.5 > slow 2.5 -> long, and so on to
  // bar 8 (5 6 7 8). Bar 9 (6 7 8 4): fast 6 < slow 6.25 -> short; bar 10
  // (7 8 4 2): 3 < 5.25; bar 11 (8 4 2 1): 1.5 < 3.75.
  const double expected[] = {0, 0, 1, 1, 1, 1, 1, -1, -1, -1};
  for (std::size_t i = 0; i < 10; ++i) {
    INFO("bar " << i + 2);
    CHECK(p[i] == expected[i]);
  }
  // Equal means give flat.
  CHECK(foxrl::crossover_positions({5, 5, 5, 5, 5, 5}, 4, 2, 2, 4) == std::vector<double>{0, 0});
  // A change of the current bar's close does not change its position.
  std::vector<double> changed = closes;
  changed[6] = 1000;
  CHECK(foxrl::crossover_positions(changed, 6, 1, 2, 4) == foxrl::crossover_positions(closes, 6, 1, 2, 4));
  CHECK_THROWS_AS(foxrl::crossover_positions(closes, 0, 3, 4, 4), foxrl::LogicError);
}

TEST_CASE("SHA-256 matches the standard's test vectors, of strings and files", "[io]") {
  CHECK(foxrl::sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(foxrl::sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(foxrl::sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  CHECK(foxrl::sha256_hex(std::string(1000000, 'a')) ==
        "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  foxrl::test::TempDir dir;
  // Longer than one read block (64 KiB) and not a multiple of 64 bytes.
  const std::string text(200003, 'a');
  CHECK(foxrl::sha256_file_hex(dir.write("a.txt", text)) == foxrl::sha256_hex(text));
  CHECK_THROWS_WITH(foxrl::sha256_file_hex(dir.file("none.txt")), Catch::Contains("none.txt"));
}

TEST_CASE("evaluation.json records the version, data hash, rows, splits, cost model and annualisation", "[eval]") {
  foxrl::test::TempDir dir;
  const std::string csv = daily_csv(400);
  foxrl::TrainConfig config;
  config.data = dir.write("daily.csv", csv);
  config.start_date = "2020-01-11";  // drops bars 0 .. 9
  config.train_end = "2020-09-30";
  config.test_start = "2020-11-01";
  const foxrl::MarketSetup market = foxrl::prepare_market(config);
  REQUIRE(market.first_row == 10);
  const foxrl::MarketSplit test = market.splits.test;
  std::vector<double> agent(static_cast<std::size_t>(test.size()), 1.0);
  auto report =
      foxrl::build_evaluation_report(market.series, test.begin, agent, 0.0005, market.annualisation.bars_per_year, 1);
  report.record = foxrl::evaluation_record(market);
  const auto j = nlohmann::json::parse(report.json());
  CHECK(j["foxrl_version"].get<std::string>().size() > 0);
  CHECK(j["foxrl_commit"] == std::string(foxrl::build_commit()));
  CHECK(j["data"]["sha256"] == foxrl::sha256_hex(csv));
  CHECK(j["data"]["origin"] == config.data);
  CHECK(j["data"]["rows_loaded"] == 400);
  CHECK(j["data"]["bars_before_start_date"] == 10);
  CHECK(j["data"]["median_bar_seconds"] == 86400);
  CHECK(j["splits"]["train"]["first"] == "2020-01-11T00:00:00Z");
  CHECK(j["splits"]["train"]["last"] == "2020-09-30T00:00:00Z");
  CHECK(j["splits"]["test"]["first"] == "2020-11-01T00:00:00Z");
  CHECK(j["splits"]["test"]["last"] == "2021-02-03T00:00:00Z");  // bar 399
  CHECK(j["splits"]["test"]["bars"] == nlohmann::json({test.begin, test.end}));
  CHECK(j["evaluated_bars"] == nlohmann::json({test.begin, test.end}));
  CHECK(j["cost_model"]["cost_bps"].get<double>() == Approx(5));
  CHECK(j["annualisation"]["basis"] == "measured");
  CHECK(j["annualisation"]["bars_per_year"].get<double>() == Approx(365.2425));
  REQUIRE(j["strategies"].size() == 5);
  CHECK(j["strategies"][3]["name"] == "random, same trades");
  CHECK(j["strategies"][3]["trades"] == j["strategies"][0]["trades"]);
  CHECK(j["strategies"][4]["name"] == "MA crossover 20/100");
  // A built-in market names its generator, with no file hash.
  foxrl::TrainConfig synthetic;
  synthetic.synthetic_bars = 2000;
  const auto generated = foxrl::evaluation_record(foxrl::prepare_market(synthetic));
  CHECK(generated.data_sha256.empty());
  CHECK(generated.data_origin == "synthetic:regime, 2000 bars, seed 1");
}

TEST_CASE("the build's commit is the source checkout's HEAD, or unknown outside git", "[eval][record]") {
  // Asked of git independently of the build's script; a checkout with
  // uncommitted changes to tracked files carries "+dirty".
  const std::string command = std::string("git -C \"") + FOXRL_SOURCE_DIR + "\" rev-parse --short=12 HEAD 2>/dev/null";
  std::string head;
  if (FILE* pipe = popen(command.c_str(), "r")) {
    char line[64] = {};
    if (std::fgets(line, sizeof line, pipe) != nullptr) head = line;
    pclose(pipe);
  }
  while (!head.empty() && (head.back() == '\n' || head.back() == '\r')) head.pop_back();
  const std::string commit = foxrl::build_commit();
  if (head.empty()) {
    CHECK(commit == "unknown");
  } else {
    INFO("git HEAD " << head << ", build_commit " << commit);
    CHECK((commit == head || commit == head + "+dirty"));
  }
}
