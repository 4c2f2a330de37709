// The end of an offline run on a market dataset: the greedy policy's
// backtest on the test split next to the baselines, as `foxrl train` ends.
// Checked against the data (flat earns exactly nothing, buy and hold the
// split's price ratio), against the policy's positions recomputed bar by
// bar from the observation kernel, the frozen normaliser and the trained
// learner, priced in float64 here, and against evaluate_market on the same
// learner (the function `foxrl train` calls). Each evaluated epoch adds
// the validation split's backtest to the metrics.
#include "core/compat.hpp"
#include "core/execution_context.hpp"
#include "evaluate/collect_dataset.hpp"
#include "kernels/market/features.hpp"
#include "market/market_evaluation.hpp"
#include "support/env_test_util.hpp"
#include "support/tiny_trainer_config.hpp"
#include "train/checkpoint_store.hpp"
#include "train/offline_training_run.hpp"
#include "train/run_manifest.hpp"
#include "train/training_run.hpp"

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace {

using Exec = foxrl::OfflineTrainingRun::ExecSpace;
using Mem = Exec::memory_space;
using Json = nlohmann::json;

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

/// A dataset of the built-in synthetic market (its train split, 5 bp per
/// unit of position change) from the epsilon-greedy policy of a briefly
/// trained DQN run: a behaviour that trades often, so its clone does too,
/// and a recorded normaliser.
std::string market_dataset(const foxrl::test::TempDir& dir) {
  const std::string run_dir = dir.file("dqn");
  auto config = foxrl::test::tiny_trainer_config("market", run_dir, 2);
  config.cost_bps = 5;
  { foxrl::TrainingRun(config).run(); }
  foxrl::ExecutionContext<> context(5);
  foxrl::CollectOptions o;
  o.config = foxrl::RunManifest::read(foxrl::CheckpointStore::resolve(run_dir)).config;
  o.policy = "epsilon-greedy";
  o.epsilon = 0.1;
  o.run_dir = run_dir;
  o.transitions = 800;
  o.out_path = dir.file("market.safetensors");
  foxrl::collect_dataset(context.space(), o);
  return o.out_path;
}

/// A random-policy CartPole dataset.
std::string cartpole_dataset(const foxrl::test::TempDir& dir) {
  foxrl::ExecutionContext<> context(7);
  foxrl::CollectOptions o;
  o.config.env = "cartpole";
  o.config.num_envs = 4;
  o.transitions = 400;
  o.out_path = dir.file("cartpole.safetensors");
  foxrl::collect_dataset(context.space(), o);
  return o.out_path;
}

foxrl::OfflineTrainConfig small_run(const std::string& dataset, const std::string& out_dir, std::int64_t epochs) {
  foxrl::OfflineTrainConfig c;
  c.algo = "bc";
  c.dataset = dataset;
  c.out_dir = out_dir;
  c.hidden = {16, 8};
  c.batch_size = 32;
  c.updates_per_epoch = 30;
  c.eval_episodes = 2;
  c.epochs = epochs;
  c.seed = 11;
  return c;
}

/// metrics.jsonl without the wall-clock fields.
std::string metrics_without_timing(const std::string& path) {
  std::istringstream in(slurp(path));
  std::string line, out;
  while (std::getline(in, line)) {
    auto j = Json::parse(line);
    j.erase("seconds");
    j.erase("updates_per_s");
    out += j.dump() + "\n";
  }
  return out;
}

/// The strategies of an evaluation.json by name.
std::map<std::string, Json> strategies_of(const Json& evaluation) {
  std::map<std::string, Json> out;
  for (const auto& s : evaluation.at("strategies")) out[s.at("name").get<std::string>()] = s;
  return out;
}

/// The position column of a backtest CSV.
std::vector<double> csv_positions(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  std::getline(in, line);
  std::vector<double> out;
  while (std::getline(in, line)) {
    std::stringstream fields(line);
    std::string bar, timestamp, position;
    std::getline(fields, bar, ',');
    std::getline(fields, timestamp, ',');
    std::getline(fields, position, ',');
    out.push_back(std::strtod(position.c_str(), nullptr));
  }
  return out;
}

/// The trained policy's positions over bars [first, end), decided one bar
/// at a time: the observation of bar t at the position held before it,
/// normalised, the learner's greedy action (0 short, 1 flat, 2 long).
std::vector<double> recompute_positions(foxrl::OfflineTrainer<Exec>& trainer, int first, int end) {
  const Exec& space = trainer.space();
  const auto& spec = trainer.spec().market_env.observation;
  const int dim = spec.obs_dim();
  Kokkos::View<std::int32_t*, Mem> time("test::time", 1), position("test::position", 1), action("test::action", 1);
  Kokkos::View<float**, Kokkos::LayoutRight, Mem> raw("test::raw", 1, dim), normalized("test::normalized", 1, dim);
  auto h_time = Kokkos::create_mirror_view(time);
  auto h_position = Kokkos::create_mirror_view(position);
  auto h_action = Kokkos::create_mirror_view(action);
  std::vector<double> out;
  int p = 0;  // flat before the first bar
  for (int t = first; t < end; ++t) {
    h_time(0) = t;
    h_position(0) = p;
    Kokkos::deep_copy(space, time, h_time);
    Kokkos::deep_copy(space, position, h_position);
    foxrl::kernels::build_observations(space, trainer.market()->features.features(), spec, time, position, raw);
    REQUIRE(trainer.adapter() != nullptr);
    trainer.adapter()->normalize(space, raw, normalized);
    trainer.agent().greedy_actions(space, foxrl::ConstMatrix<Mem>(normalized), action);
    Kokkos::deep_copy(space, h_action, action);
    foxrl::compat::fence(space, "test::recompute_positions");
    p = h_action(0) - 1;
    out.push_back(p);
  }
  return out;
}

}  // namespace

TEST_CASE("offline market run: the test split's table and files, baselines and the policy's row recomputed",
          "[offline][train-offline][eval]") {
  foxrl::test::TempDir dir;
  const std::string data = market_dataset(dir);
  const std::string out = dir.file("run");
  foxrl::OfflineTrainingRun run(small_run(data, out, 2));
  std::vector<std::string> lines;
  run.on_log([&](const std::string& line) { lines.push_back(line); });
  const auto summary = run.run();
  REQUIRE(summary.evaluation);

  // The table on the log, every strategy `foxrl train` prints in it.
  std::string table;
  for (const auto& line : lines)
    if (line.rfind("Evaluation on ", 0) == 0) table = line;
  REQUIRE(!table.empty());
  for (const char* row :
       {"agent (greedy BC)", "buy and hold", "always flat", "random, same trades", "MA crossover 20/100"})
    CHECK_THAT(table, Catch::Contains(std::string("\n") + row));
  CHECK_THAT(lines.back(), Catch::Contains("evaluation.json, evaluation_backtest.csv, equity.svg"));
  for (const char* f : {"evaluation.json", "evaluation_backtest.csv", "equity.svg", "evaluation_episodes.json"})
    CHECK(std::filesystem::exists(out + "/" + f));

  foxrl::OfflineTrainer<Exec>& trainer = run.trainer();
  REQUIRE(trainer.market() != nullptr);
  const foxrl::MarketSetup& market = trainer.market()->data;
  const foxrl::MarketSeries& series = market.series;
  const foxrl::MarketSplit test = market.splits.test;
  const int lookback = trainer.spec().market_env.observation.min_decision_bar();
  const int first = std::max(test.begin, lookback), end = test.end;
  REQUIRE(first > 0);
  REQUIRE(end - first > 100);
  const double cost = trainer.spec().market_env.cost;
  CHECK(cost == Approx(5e-4).epsilon(1e-12));

  const std::string text = slurp(out + "/evaluation.json");
  const Json evaluation = Json::parse(text);
  CHECK(evaluation.at("evaluated_bars") == Json({first, end}));
  auto rows = strategies_of(evaluation);
  REQUIRE(rows.size() == 5);

  // Always flat: no position, no trade, exactly nothing earned or paid.
  CHECK(rows.at("always flat").at("total_return").get<double>() == 0.0);
  CHECK(rows.at("always flat").at("gross_total_return").get<double>() == 0.0);
  CHECK(rows.at("always flat").at("cost_paid").get<double>() == 0.0);
  CHECK(rows.at("always flat").at("trades").get<long>() == 0);
  // Buy and hold: the close of the split's last bar over the close before
  // its first, less one entry cost (a sum of ~300 float64 log returns:
  // rounding ~1e-14 relative).
  const double ratio = series.close[std::size_t(end - 1)] / series.close[std::size_t(first - 1)];
  const auto& hold = rows.at("buy and hold");
  CHECK(hold.at("gross_total_return").get<double>() == Approx(ratio - 1).margin(1e-12 * ratio));
  CHECK(hold.at("total_return").get<double>() == Approx(ratio * std::exp(-cost) - 1).margin(1e-12 * ratio));
  CHECK(hold.at("cost_paid").get<double>() == Approx(cost).epsilon(1e-15));

  // The policy, recomputed: its positions bar by bar, priced here.
  const std::vector<double> positions = recompute_positions(trainer, first, end);
  CHECK(csv_positions(slurp(out + "/evaluation_backtest.csv")) == positions);
  double gross = 0, paid = 0, previous = 0;
  long in_market = 0, changes = 0;
  for (int t = first; t < end; ++t) {
    const double p = positions[std::size_t(t - first)];
    gross += p * std::log(series.close[std::size_t(t)] / series.close[std::size_t(t - 1)]);
    paid += cost * std::fabs(p - previous);
    in_market += p != 0 ? 1 : 0;
    changes += p != previous ? 1 : 0;
    previous = p;
  }
  INFO("positions changed " << changes << " times, " << in_market << " bars in the market");
  const auto& agent = rows.at("agent (greedy BC)");
  CHECK(agent.at("gross_total_return").get<double>() == Approx(std::expm1(gross)).margin(1e-12));
  CHECK(agent.at("total_return").get<double>() == Approx(std::expm1(gross - paid)).margin(1e-12));
  CHECK(agent.at("cost_paid").get<double>() == Approx(paid).margin(1e-14));
  CHECK(agent.at("bars_in_market").get<long>() == in_market);
  CHECK(agent.at("trades").get<long>() == changes);
  // The row is the report of those positions, and the random baseline has
  // the policy's number of trades.
  const auto priced = foxrl::build_evaluation_report(series, first, positions, cost, market.annualisation.bars_per_year,
                                                     11 + 1, trainer.agent_name());
  for (const auto& s : priced.strategies) {
    INFO(s.name);
    const Json& row = rows.at(s.name);
    CHECK(row.at("total_return").get<double>() == s.metrics.total_return);
    CHECK(row.at("gross_total_return").get<double>() == s.metrics.gross_total_return);
    CHECK(row.at("sharpe").get<double>() == s.metrics.sharpe);
    CHECK(row.at("trades").get<long>() == s.metrics.trades);
    CHECK(row.at("max_drawdown").get<double>() == s.metrics.max_drawdown);
  }
  CHECK(rows.at("random, same trades").at("trades") == agent.at("trades"));

  // evaluate_market on the trained learner (what `foxrl train` calls) writes
  // the same record.
  const auto again =
      foxrl::evaluate_market(trainer.space(), trainer.agent(), trainer.adapter(), trainer.market()->features, market,
                             test, trainer.spec().market_env, 11 + 1, trainer.agent_name());
  CHECK(again.json() + "\n" == text);

  // Each evaluated epoch's metrics hold the validation backtest; the last
  // is the trained learner's (the validation split, never the test split).
  std::istringstream metrics(slurp(out + "/metrics.jsonl"));
  std::string line;
  Json last;
  while (std::getline(metrics, line)) {
    last = Json::parse(line);
    CHECK(last.contains("val_total_return"));
  }
  REQUIRE(last.at("epoch") == 2);
  const auto validation =
      foxrl::evaluate_market(trainer.space(), trainer.agent(), trainer.adapter(), trainer.market()->features, market,
                             market.splits.validation, trainer.spec().market_env, 11 + 1, trainer.agent_name());
  CHECK(validation.first_bar >= market.splits.validation.begin);
  CHECK(validation.first_bar + validation.bars == market.splits.validation.end);
  CHECK(last.at("val_total_return").get<double>() == validation.strategies.at(0).metrics.total_return);
  CHECK(last.at("val_sharpe").get<double>() == validation.strategies.at(0).metrics.sharpe);
  CHECK(last.at("val_trades").get<long>() == validation.strategies.at(0).metrics.trades);
  CHECK(last.at("val_buy_and_hold_return").get<double>() == validation.strategies.at(1).metrics.total_return);
  REQUIRE(summary.epochs.size() == 2);
  REQUIRE(summary.epochs.back().validation);
  bool logged = false;
  for (const auto& l : lines) logged = logged || l.find("\nvalidation backtest: net return ") != std::string::npos;
  CHECK(logged);
}

TEST_CASE("offline market run: resumed, the same evaluation, and --overwrite removes it",
          "[offline][train-offline][eval]") {
  foxrl::test::TempDir dir;
  const std::string data = market_dataset(dir);
  const std::string full = dir.file("full"), part = dir.file("part");
  { foxrl::OfflineTrainingRun(small_run(data, full, 2)).run(); }
  { foxrl::OfflineTrainingRun(small_run(data, part, 1)).run(); }
  { foxrl::OfflineTrainingRun(small_run(data, part, 2), true).run(); }
  CHECK(slurp(part + "/evaluation.json") == slurp(full + "/evaluation.json"));
  CHECK(slurp(part + "/evaluation_backtest.csv") == slurp(full + "/evaluation_backtest.csv"));
  CHECK(metrics_without_timing(part + "/metrics.jsonl") == metrics_without_timing(full + "/metrics.jsonl"));

  // A CartPole run replacing the market run leaves none of its evaluation.
  { foxrl::OfflineTrainingRun(small_run(cartpole_dataset(dir), full, 1), false, true).run(); }
  for (const char* f : {"evaluation.json", "evaluation_backtest.csv", "equity.svg"})
    CHECK(!std::filesystem::exists(full + "/" + f));
  CHECK(std::filesystem::exists(full + "/evaluation_episodes.json"));
}
