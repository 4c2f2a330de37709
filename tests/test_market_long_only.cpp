// Long-only market mode (config key positions = long_only): the env's two
// actions hold positions 0 and +1 and pay rewards a float64 host recomputation
// reproduces; the evaluation's baselines never short; the key reaches the
// learner's head, the run's backtest and evaluation.json, and is left out
// of a default config so older runs keep their bytes.
#include "config/train_config.hpp"
#include "core/error.hpp"
#include "core/execution_context.hpp"
#include "io/safetensors.hpp"
#include "market/market_data.hpp"
#include "market/market_env.hpp"
#include "market/market_evaluation.hpp"
#include "offline/dataset_metadata.hpp"
#include "support/env_test_util.hpp"
#include "support/test_spaces.hpp"
#include "train/run_spec.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace {

/// Per-bar net log returns of `positions` over `r`, in float64 (flat before bar 0).
std::vector<double> net_returns_f64(const std::vector<double>& r, const std::vector<double>& positions, double cost) {
  std::vector<double> net(positions.size());
  double previous = 0;
  for (std::size_t i = 0; i < positions.size(); ++i) {
    net[i] = positions[i] * r[i] - cost * std::fabs(positions[i] - previous);
    previous = positions[i];
  }
  return net;
}

}  // namespace

TEST_CASE("positions key: parsed, documented, omitted from a default config, market only", "[market_env][config]") {
  CHECK(foxrl::parse_position_set("long_only") == foxrl::PositionSet::long_only);
  CHECK(foxrl::parse_position_set("long_short") == foxrl::PositionSet::long_short);
  CHECK_THROWS_AS(foxrl::parse_position_set("short_only"), foxrl::UsageError);
  CHECK_THAT(foxrl::TrainConfig::describe(), Catch::Contains("positions"));
  foxrl::TrainConfig config;
  CHECK(config.to_json().find("positions") == std::string::npos);  // older configs keep their bytes
  CHECK(foxrl::run_spec(config).num_actions == 3);
  config.apply_overrides({"positions=long_only"});
  CHECK(nlohmann::json::parse(config.to_json())["positions"] == "long_only");
  const foxrl::RunSpec spec = foxrl::run_spec(config);
  CHECK(spec.num_actions == 2);
  CHECK(foxrl::DqnLearner<Kokkos::DefaultHostExecutionSpace>::config_for(config, spec.spaces()).num_actions == 2);
  CHECK(spec.market_env.min_position() == 0);
  CHECK_THROWS_WITH(config.apply_overrides({"positions=both"}), Catch::Contains("positions"));
  foxrl::TrainConfig cartpole;
  cartpole.env = "cartpole";
  CHECK_THROWS_WITH(cartpole.apply_overrides({"positions=long_only"}), Catch::Contains("market env only"));
  CHECK(std::string(foxrl::position_action_name(foxrl::PositionSet::long_only, 0)) == "flat");
  CHECK(std::string(foxrl::position_action_name(foxrl::PositionSet::long_only, 1)) == "long");
  CHECK(std::string(foxrl::position_action_name(foxrl::PositionSet::long_short, 0)) == "short");
}

TEST_CASE("a long-only dataset's recorded config gives a 2-action learner", "[market_env][offline]") {
  foxrl::TrainConfig config;
  config.window = 16;
  config.num_envs = 4;
  config.positions = "long_only";
  std::map<std::string, std::string> metadata = {
      {"format", "foxrl.dataset"}, {"format_version", "1"}, {"env", "market"},    {"obs_dim", "17"},
      {"num_actions", "2"},        {"num_envs", "4"},       {"transitions", "0"}, {"config", config.to_json()}};
  const auto m = foxrl::parse_dataset_metadata("long_only.safetensors", metadata);
  CHECK(m.num_actions == 2);
  CHECK(m.config.positions == "long_only");
  CHECK(foxrl::run_spec(m.config).num_actions == 2);
  // Three actions recorded against a long-only config: refused, naming the config.
  metadata["num_actions"] = "3";
  CHECK_THROWS_WITH(foxrl::parse_dataset_metadata("long_only.safetensors", metadata),
                    Catch::Contains("config") && Catch::Contains("2 actions"));
}

TEMPLATE_TEST_CASE("long-only market env never shorts and pays position x return minus cost", "[market_env]",
                   FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  const auto series = foxrl::generate_benchmark_market(3000, 5);
  const auto r = foxrl::host_log_returns(series);
  foxrl::MarketFeatures<Exec> market(space, series, 64);
  foxrl::MarketEnvConfig config;
  config.positions = foxrl::PositionSet::long_only;
  config.episode_length = 25;
  config.cost = foxrl::MarketEnvConfig::cost_from_bps(4.0, 1.0);
  const int n = 24, W = 64;
  foxrl::MarketEnv<Exec> env(space, market, {0, market.size()}, n, 9, config);
  REQUIRE(env.num_actions() == 2);
  std::mt19937 rng(12);
  std::uniform_int_distribution<int> pick(0, 1);
  std::vector<std::int32_t> actions(n);
  long longs = 0, flats = 0;
  for (int step = 0; step < 120; ++step) {
    const auto time = foxrl::test::to_host(space, env.state().time);
    const auto pos = foxrl::test::to_host(space, env.state().position);
    const auto obs = foxrl::test::to_host(space, env.observations());
    for (auto& a : actions) a = pick(rng);
    env.step(space, foxrl::test::to_device(space, actions));
    const auto reward = foxrl::test::to_host(space, env.step_result().rewards);
    const auto next = foxrl::test::to_host(space, env.step_result().next_observations);
    const auto held = foxrl::test::to_host(space, env.state().position);
    for (int i = 0; i < n; ++i) {
      const int t = time(i), p = pos(i), q = actions[static_cast<std::size_t>(i)];  // long-only: position = action
      INFO("env " << i << " step " << step << " t " << t);
      CHECK((p == 0 || p == 1));
      CHECK((held(i) == 0 || held(i) == 1));
      CHECK(obs(i, W) == static_cast<float>(p));   // the position feature
      CHECK(next(i, W) == static_cast<float>(q));  // holds the new position
      const double expect = q * r[static_cast<std::size_t>(t)] - config.cost * std::abs(q - p);
      // float32 reward of a float64 expression: one rounding of the float32 return and one of the result.
      CHECK(std::fabs(reward(i) - expect) <= 2e-7 * (std::fabs(r[static_cast<std::size_t>(t)]) + config.cost) + 1e-12);
      (q == 1 ? longs : flats) += 1;
    }
  }
  CHECK(longs > 0);
  CHECK(flats > 0);
}

TEST_CASE("long-only baselines never short and price like a float64 recomputation", "[eval]") {
  // Random with the agent's trades: positions in {0, 1}, exactly `trades` changes.
  for (const long trades : {0L, 1L, 9L, 120L, 300L}) {
    const auto p = foxrl::random_positions_with_trades(300, trades, 4, foxrl::PositionSet::long_only);
    long changes = 0;
    double previous = 0;
    for (double x : p) {
      CHECK((x == 0.0 || x == 1.0));
      changes += x != previous;
      previous = x;
    }
    CHECK(changes == trades);
  }

  // Crossover: long while the fast mean is above the slow one, else flat.
  const auto series = foxrl::generate_benchmark_market(1200, 3);
  const int first = 300, count = 600, fast = 20, slow = 100;
  const auto crossover =
      foxrl::crossover_positions(series.close, first, count, fast, slow, foxrl::PositionSet::long_only);
  const auto both = foxrl::crossover_positions(series.close, first, count, fast, slow);
  long longs = 0;
  for (int i = 0; i < count; ++i) {
    const int t = first + i;
    double f = 0, s = 0;
    for (int k = t - fast; k < t; ++k) f += series.close[static_cast<std::size_t>(k)];
    for (int k = t - slow; k < t; ++k) s += series.close[static_cast<std::size_t>(k)];
    const double expect = f / fast > s / slow ? 1.0 : 0.0;
    INFO("bar " << t);
    CHECK(crossover[static_cast<std::size_t>(i)] == expect);
    CHECK(crossover[static_cast<std::size_t>(i)] == (both[static_cast<std::size_t>(i)] > 0 ? 1.0 : 0.0));
    longs += expect == 1.0;
  }
  CHECK(longs > 0);
  CHECK(longs < count);

  // The report: every strategy in {0, 1}, priced bar by bar as a float64 recomputation.
  const double cost = 0.0007;
  std::vector<double> agent(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) agent[static_cast<std::size_t>(i)] = (i / 7) % 2;
  const auto report =
      foxrl::build_evaluation_report(series, first, agent, cost, 252, 11, "agent", foxrl::PositionSet::long_only);
  const auto all = foxrl::host_log_returns(series);
  const std::vector<double> r(all.begin() + first, all.begin() + first + count);
  REQUIRE(report.strategies.size() == 5);
  for (const auto& s : report.strategies) {
    INFO(s.name);
    REQUIRE(s.positions.size() == static_cast<std::size_t>(count));
    const auto net = net_returns_f64(r, s.positions, cost);
    double log_total = 0;
    for (std::size_t i = 0; i < net.size(); ++i) {
      CHECK((s.positions[i] == 0.0 || s.positions[i] == 1.0));
      CHECK(std::fabs(s.returns.net[i] - net[i]) <= 1e-15);
      log_total += net[i];
    }
    CHECK(s.metrics.total_return == Approx(std::expm1(log_total)).epsilon(1e-12).margin(1e-14));
  }
  CHECK(report.strategies[1].positions == std::vector<double>(static_cast<std::size_t>(count), 1.0));  // buy and hold
  CHECK(report.strategies[2].positions == std::vector<double>(static_cast<std::size_t>(count), 0.0));  // flat
  CHECK(report.strategies[3].metrics.trades == report.strategies[0].metrics.trades);
  CHECK(report.strategies[4].positions == crossover);
  CHECK(nlohmann::json::parse(report.json())["positions"] == "long_only");
  CHECK_THAT(report.table(), Catch::Contains("long only"));
  // A long-short report keeps its bytes: no positions entry.
  const auto default_report = foxrl::build_evaluation_report(series, first, agent, cost, 252, 11, "agent");
  CHECK(!nlohmann::json::parse(default_report.json()).contains("positions"));
}

#ifdef FOXRL_CLI_PATH
TEST_CASE("foxrl train --set positions=long_only: a 2-action learner and a backtest without shorts",
          "[market_env][cli]") {
  foxrl::test::TempDir dir;
  const std::string out = dir.file("run");
  std::string command = std::string("\"") + FOXRL_CLI_PATH + "\" train";
  for (const char* kv : {"positions=long_only", "synthetic_bars=2000", "episode_length=30", "window=16", "num_envs=4",
                         "hidden=16,16", "batch_size=16", "buffer_capacity=256", "learning_starts=64",
                         "iterations_per_epoch=40", "eps_decay_env_steps=100", "seed=7", "epochs=1"}) {
    command += std::string(" --set ") + kv;
  }
  command += " --set out_dir=" + out + " > " + dir.file("train.out") + " 2>&1";
  REQUIRE(std::system(command.c_str()) == 0);

  const auto checkpoint = foxrl::safetensors::read(out + "/checkpoints/epoch-00000001/checkpoint.safetensors");
  const auto* head = checkpoint.find("online.head.weight");
  REQUIRE(head != nullptr);
  CHECK(head->shape == std::vector<std::int64_t>{1 + 2, 16});  // dueling head: [V, A_flat, A_long]
  CHECK(checkpoint.metadata.at("num_actions") == "2");

  std::ifstream csv(out + "/evaluation_backtest.csv");
  std::string line;
  REQUIRE(std::getline(csv, line));
  REQUIRE(line.rfind("bar,timestamp,position,", 0) == 0);
  long rows = 0;
  while (std::getline(csv, line)) {
    std::stringstream fields(line);
    std::string bar, timestamp, position;
    std::getline(fields, bar, ',');
    std::getline(fields, timestamp, ',');
    std::getline(fields, position, ',');
    INFO(line);
    CHECK((position == "0" || position == "1"));
    ++rows;
  }
  CHECK(rows > 10);
  std::ifstream evaluation(out + "/evaluation.json");
  const auto j = nlohmann::json::parse(evaluation);
  CHECK(j["positions"] == "long_only");

  // infer names the two actions and refuses a short position.
  const std::string infer =
      std::string("\"") + FOXRL_CLI_PATH + "\" infer --run " + out + " --data " + FOXRL_TEST_DATA_DIR + "/bars_200.csv";
  REQUIRE(std::system((infer + " > " + dir.file("infer.csv") + " 2>&1").c_str()) == 0);
  std::ifstream decisions(dir.file("infer.csv"));
  REQUIRE(std::getline(decisions, line));
  CHECK(line == "bar,timestamp,q_flat,q_long,action,position");
  long decided = 0;
  while (std::getline(decisions, line)) {
    INFO(line);
    const bool flat = line.size() >= 7 && line.compare(line.size() - 7, 7, ",flat,0") == 0;
    const bool long_ = line.size() >= 7 && line.compare(line.size() - 7, 7, ",long,1") == 0;
    CHECK((flat || long_));
    ++decided;
  }
  CHECK(decided > 0);
  CHECK(std::system((infer + " --position -1 > " + dir.file("refused.out") + " 2>&1").c_str()) != 0);
}
#endif
