// The validation backtest and best model of a market TrainingRun: every
// epoch's metrics carry the val_* fields, the best model holds the weights
// of the epoch with the highest validation score (the weights a run that
// stops at that epoch ends with, and they reproduce that score), it
// survives the pruning of checkpoint generations, a resumed run keeps it,
// the validation backtest does not change the training trajectory, and
// evaluation.json keeps the last weights' report at its top level.
#include "support/tiny_trainer_config.hpp"
#include "train/saved_model_evaluation.hpp"
#include "train/training_run.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
using Exec = Kokkos::DefaultExecutionSpace;

std::string scratch_dir(const std::string& name) {
  const auto dir = fs::temp_directory_path() / ("foxrl_best_" + std::to_string(::getpid()) + "_" + name);
  fs::remove_all(dir);
  return dir.string();
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::vector<nlohmann::json> metrics(const std::string& dir) {
  std::vector<nlohmann::json> lines;
  std::ifstream in(dir + "/metrics.jsonl");
  std::string line;
  while (std::getline(in, line)) lines.push_back(nlohmann::json::parse(line));
  return lines;
}

/// metrics.jsonl without the wall-clock fields.
std::string records(const std::string& dir) {
  static const std::regex wall_clock("\"(seconds|env_steps_per_s|updates_per_s)\":[^,}]*,?");
  return std::regex_replace(read_bytes(dir + "/metrics.jsonl"), wall_clock, "");
}

std::string generation(const std::string& dir, std::int64_t epoch) {
  char name[40];
  std::snprintf(name, sizeof name, "/checkpoints/epoch-%08lld", static_cast<long long>(epoch));
  return dir + name;
}

std::string best_dir(const std::string& dir, std::int64_t epoch) {
  char name[40];
  std::snprintf(name, sizeof name, "/best/epoch-%08lld", static_cast<long long>(epoch));
  return dir + name;
}

foxrl::TrainConfig market_config(const std::string& dir, std::int64_t epochs) {
  foxrl::TrainConfig c = foxrl::test::tiny_trainer_config("market", dir, epochs);
  c.keep_checkpoints = 1;  // generations are pruned every epoch; the best model must stay
  c.eps_decay_env_steps = 2000;
  return c;
}

/// Every log line of a run, one after the other.
struct LogText : foxrl::TrainingObserver {
  std::string all;
  void on_log(const std::string& line) override { all += line + "\n"; }
};

foxrl::TrainingSummary run(const foxrl::TrainConfig& c, bool resume = false) {
  foxrl::TrainingRun r(c, resume);
  return r.run();
}

}  // namespace

TEST_CASE("a market run logs the validation backtest each epoch and keeps the best epoch's weights",
          "[training_run][best_model]") {
  ::setenv("FOXRL_RUN_ID", "best-model-test", 1);
  const std::string dir = scratch_dir("run");
  const auto summary = run(market_config(dir, 5));

  // val_* in every epoch's metrics; the best epoch is the first with the
  // highest validation Sharpe ratio (computed here from the metrics).
  const auto lines = metrics(dir);
  REQUIRE(lines.size() == 5);
  std::int64_t best = 0;
  double best_sharpe = 0;
  for (const auto& j : lines) {
    REQUIRE(j.contains("val_total_return"));
    REQUIRE(j.contains("val_sharpe"));
    REQUIRE(j.contains("val_trades"));
    REQUIRE(j.contains("val_buy_and_hold_return"));
    const double s = j.at("val_sharpe").get<double>();
    const bool improves = best == 0 || s > best_sharpe;
    CHECK(j.at("val_best").get<bool>() == improves);
    if (improves) {
      best = j.at("epoch").get<std::int64_t>();
      best_sharpe = s;
    }
  }
  // Buy and hold on the validation bars does not depend on the policy.
  for (const auto& j : lines)
    CHECK(j.at("val_buy_and_hold_return").get<double>() == lines[0].at("val_buy_and_hold_return").get<double>());
  INFO("best epoch " << best);
  REQUIRE(summary.best);
  CHECK(summary.best->epoch == best);
  CHECK(summary.best->score == best_sharpe);
  CHECK(summary.best->select_by == "sharpe");

  // Only the newest generation is kept, the best model stays beside it.
  CHECK(fs::exists(generation(dir, 5)));
  CHECK(!fs::exists(generation(dir, 4)));
  REQUIRE(fs::exists(best_dir(dir, best) + "/checkpoint.safetensors"));
  CHECK(foxrl::BestModel::read(best_dir(dir, best)).epoch == best);
  CHECK(foxrl::BestModelStore::resolve(dir) == best_dir(dir, best));
  std::size_t best_models = 0;
  for (const auto& e : fs::directory_iterator(dir + "/best")) best_models += e.is_directory() ? 1 : 0;
  CHECK(best_models == 1);
  // The newest generation records the best model for a resume.
  CHECK(foxrl::BestModel::read(generation(dir, 5)).epoch == best);

  // The best weights are those a run stopped at that epoch ends with.
  const std::string until_best = scratch_dir("until_best");
  run(market_config(until_best, best));
  CHECK(read_bytes(best_dir(dir, best) + "/checkpoint.safetensors") ==
        read_bytes(generation(until_best, best) + "/checkpoint.safetensors"));

  // Evaluated again on the validation split, the best model reproduces its score.
  {
    foxrl::ExecutionContext<Exec> context(7);
    const auto& space = context.space();
    const foxrl::RunManifest manifest = foxrl::RunManifest::read(best_dir(dir, best));
    CHECK(manifest.epoch == best);
    const foxrl::RunSpec spec = foxrl::run_spec(manifest.config);
    const auto market = foxrl::MarketEnv<Exec>::make_data(space, manifest.config);
    const auto report = foxrl::evaluate_saved_model(space, best_dir(dir, best), manifest, spec, market,
                                                    market.data.splits.validation, manifest.config.seed + 1);
    CHECK(report.strategies.at(0).metrics.sharpe == best_sharpe);
  }

  // evaluation.json: the last weights' report at the top level (what the
  // summary's report writes), labelled, and the best model's beside it.
  const auto evaluation = nlohmann::json::parse(read_bytes(dir + "/evaluation.json"));
  auto top = evaluation;
  CHECK(top.at("weights") == "last");
  top.erase("weights");
  top.erase("best");
  REQUIRE(summary.evaluation);
  CHECK(top == nlohmann::json::parse(summary.evaluation->json()));
  REQUIRE(summary.best_evaluation);
  const auto& b = evaluation.at("best");
  CHECK(b.at("epoch").get<std::int64_t>() == best);
  CHECK(b.at("validation_score").get<double>() == best_sharpe);
  CHECK(b.at("test") == nlohmann::json::parse(summary.best_evaluation->json()));
  CHECK(fs::exists(dir + "/evaluation_best_backtest.csv"));
  CHECK(fs::exists(dir + "/equity_best.svg"));
  {
    std::ifstream chart(dir + "/equity_best.svg");
    const std::string svg((std::istreambuf_iterator<char>(chart)), std::istreambuf_iterator<char>());
    CHECK_THAT(svg, Catch::Contains("(best weights, epoch "));  // told apart from equity.svg (the last weights)
  }
  // The best model's test evaluation is the one-epoch run's, whose last
  // epoch is its best: its evaluation.json holds the same test metrics.
  if (best < 5) {
    const auto until = nlohmann::json::parse(read_bytes(until_best + "/evaluation.json"));
    CHECK(until.at("strategies") == b.at("test").at("strategies"));
  }
  fs::remove_all(dir);
  fs::remove_all(until_best);
}

TEST_CASE("select_by net_return picks the epoch of the highest validation net return", "[training_run][best_model]") {
  ::setenv("FOXRL_RUN_ID", "best-model-test", 1);
  const std::string dir = scratch_dir("net_return");
  foxrl::TrainConfig c = market_config(dir, 5);
  c.select_by = "net_return";
  c.seed = 4;  // on the host backend its best net return (epoch 5) and best Sharpe ratio (epoch 1) differ
  const auto summary = run(c);
  std::int64_t best = 0;
  double best_return = 0;
  for (const auto& j : metrics(dir)) {
    const double r = j.at("val_total_return").get<double>();
    if (best == 0 || r > best_return) {
      best = j.at("epoch").get<std::int64_t>();
      best_return = r;
    }
  }
  REQUIRE(summary.best);
  CHECK(summary.best->epoch == best);
  CHECK(summary.best->score == best_return);
  const auto record = foxrl::BestModel::read(foxrl::BestModelStore::resolve(dir));
  CHECK(record.select_by == "net_return");
  CHECK(record.epoch == best);
  // The key is left out of a default config (older runs keep their config
  // hash) and written when set.
  CHECK(foxrl::TrainConfig{}.to_json().find("select_by") == std::string::npos);
  CHECK(foxrl::TrainConfig{}.to_json().find("validation_fraction") == std::string::npos);
  CHECK(c.to_json().find("\"select_by\": \"net_return\"") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("a run whose last epoch is the best keeps its evaluation files' fields", "[training_run][best_model]") {
  ::setenv("FOXRL_RUN_ID", "best-model-test", 1);
  const std::string dir = scratch_dir("one_epoch");
  const auto summary = run(market_config(dir, 1));  // one epoch: the last is the best
  REQUIRE(summary.best);
  CHECK(summary.best->epoch == 1);
  const auto evaluation = nlohmann::json::parse(read_bytes(dir + "/evaluation.json"));
  const auto last = nlohmann::json::parse(summary.evaluation->json());
  for (const auto& [key, value] : last.items()) CHECK(evaluation.at(key) == value);
  // Same weights, same normaliser: the best model's test report is the last one's.
  CHECK(evaluation.at("best").at("test").at("strategies") == last.at("strategies"));
  CHECK(read_bytes(dir + "/evaluation_best_backtest.csv") == read_bytes(dir + "/evaluation_backtest.csv"));
  fs::remove_all(dir);
}

TEST_CASE("the validation backtest leaves the training trajectory unchanged", "[training_run][best_model]") {
  ::setenv("FOXRL_RUN_ID", "best-model-test", 1);
  const std::string dir = scratch_dir("trajectory");
  run(market_config(dir, 3));
  // The same epochs without any validation backtest, checkpointed by hand.
  const std::string plain = scratch_dir("trajectory_plain");
  fs::create_directories(plain);
  foxrl::DqnTrainer<Exec> trainer(market_config(plain, 3));
  for (int e = 0; e < 3; ++e) trainer.run_epoch();
  trainer.save_checkpoint(plain);
  for (const char* file : {"checkpoint.safetensors", "trainer_state.safetensors"})
    CHECK(read_bytes(generation(dir, 3) + "/" + file) == read_bytes(plain + "/" + file));
  fs::remove_all(dir);
  fs::remove_all(plain);
}

TEST_CASE("a resumed market run keeps its best model and goes on selecting as the uninterrupted run",
          "[training_run][best_model]") {
  ::setenv("FOXRL_RUN_ID", "best-model-test", 1);
  const std::string whole = scratch_dir("whole"), resumed = scratch_dir("resumed");
  const auto uninterrupted = run(market_config(whole, 5));
  // A resume that forgot the best model would mark its first epoch best.
  run(market_config(resumed, 3));
  const auto second = run(market_config(resumed, 5), true);
  CHECK(records(resumed) == records(whole));
  REQUIRE(uninterrupted.best);
  REQUIRE(second.best);
  CHECK(second.best->epoch == uninterrupted.best->epoch);
  CHECK(second.best->score == uninterrupted.best->score);
  CHECK(foxrl::BestModelStore::resolve(resumed).substr(resumed.size()) ==
        foxrl::BestModelStore::resolve(whole).substr(whole.size()));
  CHECK(read_bytes(foxrl::BestModelStore::resolve(resumed) + "/checkpoint.safetensors") ==
        read_bytes(foxrl::BestModelStore::resolve(whole) + "/checkpoint.safetensors"));
  CHECK(nlohmann::json::parse(read_bytes(resumed + "/evaluation.json")).at("best") ==
        nlohmann::json::parse(read_bytes(whole + "/evaluation.json")).at("best"));

  // A run stopped after publishing the best model of epoch 3 but before its
  // checkpoint: the resume from epoch 2 discards that best model, redoes
  // epoch 3 and ends as the uninterrupted run.
  const std::string interrupted = scratch_dir("interrupted");
  foxrl::TrainConfig keep_two = market_config(interrupted, 3);
  keep_two.keep_checkpoints = 2;
  run(keep_two);
  REQUIRE(fs::exists(best_dir(interrupted, 3)));
  REQUIRE(foxrl::BestModel::read(generation(interrupted, 2)).epoch == 2);
  fs::remove_all(generation(interrupted, 3));
  keep_two.epochs = 5;
  const auto after_crash = run(keep_two, true);
  CHECK(records(interrupted) == records(whole));
  REQUIRE(after_crash.best);
  CHECK(after_crash.best->epoch == uninterrupted.best->epoch);
  CHECK(read_bytes(foxrl::BestModelStore::resolve(interrupted) + "/checkpoint.safetensors") ==
        read_bytes(foxrl::BestModelStore::resolve(whole) + "/checkpoint.safetensors"));
  fs::remove_all(whole);
  fs::remove_all(resumed);
  fs::remove_all(interrupted);
}

TEST_CASE("a resume refuses a generation whose best model record is damaged or of another run",
          "[training_run][best_model]") {
  ::setenv("FOXRL_RUN_ID", "best-model-test", 1);
  const std::string dir = scratch_dir("damaged");
  foxrl::TrainConfig c = market_config(dir, 3);
  c.keep_checkpoints = 2;
  run(c);
  const std::string record = generation(dir, 3) + "/" + foxrl::BestModel::file;
  const std::string text = read_bytes(record);
  foxrl::BestModel other = foxrl::BestModel::read(generation(dir, 3));
  other.run_id = "another-run";
  other.write(generation(dir, 3));
  c.epochs = 4;
  {
    foxrl::TrainingRun resumed(c, true);
    LogText lines;
    resumed.add_observer(lines);
    resumed.run();
    // The older generation is used; the newer one is set aside, naming why.
    CHECK_THAT(lines.all, Catch::Contains("resumed from the older checkpoint") &&
                              Catch::Contains("the best model of run another-run"));
  }
  // Not JSON: refused by name as well.
  fs::remove_all(dir);
  c.epochs = 3;
  run(c);
  { std::ofstream(record) << text.substr(0, text.size() / 2); }
  c.epochs = 4;
  {
    foxrl::TrainingRun resumed(c, true);
    LogText lines;
    resumed.add_observer(lines);
    resumed.run();
    CHECK_THAT(lines.all, Catch::Contains("resumed from the older checkpoint") && Catch::Contains("best.json"));
  }
  fs::remove_all(dir);
}

TEST_CASE("a resume refuses a best model directory of another run, naming the file and both run ids",
          "[training_run][best_model]") {
  const std::string mine = scratch_dir("mine"), other = scratch_dir("other");
  ::setenv("FOXRL_RUN_ID", "best-of-run-a", 1);
  foxrl::TrainConfig c = market_config(mine, 3);
  const auto summary = run(c);
  ::setenv("FOXRL_RUN_ID", "best-of-run-b", 1);
  const auto theirs = run(market_config(other, 3));
  REQUIRE(summary.best);
  REQUIRE(theirs.best);
  // Their best model, copied over the one this run's checkpoint names.
  const std::string target = best_dir(mine, summary.best->epoch);
  fs::remove_all(target);
  fs::copy(best_dir(other, theirs.best->epoch), target, fs::copy_options::recursive);
  c.epochs = 4;
  std::string message;
  try {
    run(c, true);
  } catch (const foxrl::UsageError& e) {
    message = e.what();
  }
  INFO(message);
  CHECK_THAT(message, Catch::Contains(target + "/best.json") && Catch::Contains("best-of-run-a") &&
                          Catch::Contains("best-of-run-b"));
  fs::remove_all(mine);
  fs::remove_all(other);
}

TEST_CASE("a CartPole run has no validation fields and no best model", "[training_run][best_model]") {
  const std::string dir = scratch_dir("cartpole");
  const auto summary = run(foxrl::test::tiny_trainer_config("cartpole", dir, 2));
  CHECK(!summary.best);
  CHECK(!summary.best_evaluation);
  for (const auto& j : metrics(dir)) CHECK(!j.contains("val_sharpe"));
  CHECK(!fs::exists(dir + "/best"));
  for (const auto& g : fs::directory_iterator(dir + "/checkpoints"))
    CHECK(!fs::exists(g.path() / foxrl::BestModel::file));
  fs::remove_all(dir);
}
