// A seed study (src/study/seed_study.hpp) on the built-in synthetic market
// with a tiny config: one complete run directory per seed, each the run a
// lone TrainingRun with that seed writes, and study.json whose per-seed
// numbers are each seed's own evaluation.json; a resumed study trains only
// what is unfinished and reproduces study.json byte for byte.
#include "study/seed_study.hpp"

#include "core/error.hpp"
#include "io/strict_json.hpp"
#include "support/tiny_trainer_config.hpp"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

std::string scratch_dir(const std::string& name) {
  const auto dir = fs::temp_directory_path() / ("foxrl_seed_study_" + std::to_string(::getpid()) + "_" + name);
  fs::remove_all(dir);
  return dir.string();
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

nlohmann::json read_json(const std::string& path) { return foxrl::parse_strict_json(read_bytes(path), path); }

struct Lines : foxrl::TrainingObserver {
  std::string text;
  void on_log(const std::string& line) override { text += line + "\n"; }
};

foxrl::TrainConfig study_config(const std::string& out_dir) {
  auto c = foxrl::test::tiny_trainer_config("market", out_dir, 1);
  return c;
}

foxrl::SeedStudyOptions options(bool resume = false) {
  foxrl::SeedStudyOptions o;
  o.seeds = {1, 2};
  o.resume = resume;
  o.bootstrap.resamples = 300;
  return o;
}

}  // namespace

TEST_CASE("seed lists and ranges of the seeds option", "[seed_study]") {
  using V = std::vector<std::uint64_t>;
  CHECK(foxrl::parse_seed_list("1,2,3") == V{1, 2, 3});
  CHECK(foxrl::parse_seed_list("1-5") == V{1, 2, 3, 4, 5});
  CHECK(foxrl::parse_seed_list("7,10-12") == V{7, 10, 11, 12});
  // The config key `seed`'s bound: each seed's run stores its seed there.
  CHECK(foxrl::parse_seed_list("18000000000000000000") == V{18000000000000000000ull});
  CHECK(foxrl::seed_list_text({3, 4}) == "3,4");
  for (const char* bad : {"", "1,", ",1", "1,,2", "a", "1,1", "1-3,2", "3-1", "-1", "1.5", "18000000000000000001",
                          "18446744073709551615", "18446744073709551616"}) {
    INFO(bad);
    CHECK_THROWS_AS(foxrl::parse_seed_list(bad), foxrl::UsageError);
  }
  CHECK_THROWS_WITH(foxrl::parse_seed_list("1,x"), Catch::Contains("--seeds") && Catch::Contains("'x'"));
}

TEST_CASE("a seed study of 2 seeds on the synthetic market writes each seed's run and study.json", "[seed_study]") {
  ::setenv("FOXRL_RUN_ID", "seed-study-test", 1);
  const std::string dir = scratch_dir("market");
  Lines lines;
  {
    foxrl::SeedStudy study({study_config(dir), {}, false}, options());
    study.add_observer(lines);
    const auto report = study.run();
    CHECK(report.market.size() == 2);
  }
  CHECK_THAT(lines.text, Catch::Contains("=== seed 1 (1 of 2): training in " + dir + "/seed_1") &&
                             Catch::Contains("=== seed 2 (2 of 2): training in " + dir + "/seed_2") &&
                             Catch::Contains("Epoch 1 complete") && Catch::Contains("across seeds (the agent)") &&
                             Catch::Contains("wrote " + dir + "/study.json"));
  for (const char* seed : {"seed_1", "seed_2"}) {
    for (const char* f : {"train.log", "metrics.jsonl", "config.json", "evaluation.json", "evaluation_backtest.csv",
                          "checkpoints/epoch-00000001/checkpoint.json"}) {
      INFO(seed << "/" << f);
      CHECK(fs::exists(dir + "/" + seed + "/" + f));
    }
  }
  CHECK(read_json(dir + "/seed_2/config.json").at("seed") == 2);

  // Each seed's numbers in study.json are its own evaluation.json's.
  const auto study = read_json(dir + "/study.json");
  REQUIRE(study.at("per_seed").size() == 2);
  CHECK(study.at("bootstrap").at("seed") == foxrl::kDefaultBootstrapSeed);
  CHECK(study.at("bootstrap").at("resamples") == 300);
  std::vector<double> net_returns;
  for (int k = 0; k < 2; ++k) {
    const auto& row = study.at("per_seed").at(static_cast<std::size_t>(k));
    CHECK(row.at("seed") == k + 1);
    const auto evaluation = read_json(dir + "/seed_" + std::to_string(k + 1) + "/evaluation.json");
    const auto& agent = evaluation.at("strategies").at(0);
    nlohmann::json hold;
    for (const auto& s : evaluation.at("strategies"))
      if (s.at("name") == "buy and hold") hold = s;
    REQUIRE(hold.is_object());
    for (const auto& [side, strategy] : {std::pair{"agent", agent}, std::pair{"buy_and_hold", hold}}) {
      const auto& got = row.at(side);
      INFO("seed " << k + 1 << " " << side);
      CHECK(got.at("net_total_return").get<double>() == strategy.at("total_return").get<double>());
      CHECK(got.at("gross_total_return").get<double>() == strategy.at("gross_total_return").get<double>());
      CHECK(got.at("sharpe").get<double>() == strategy.at("sharpe").get<double>());
      CHECK(got.at("max_drawdown").get<double>() == strategy.at("max_drawdown").get<double>());
      CHECK(got.at("trades").get<long>() == strategy.at("trades").get<long>());
      CHECK(got.at("cost_paid").get<double>() == strategy.at("cost_paid").get<double>());
    }
    // The test's Sharpe ratios come from the per-bar series of
    // evaluation_backtest.csv: they must be the reported ones.
    const auto& test = row.at("sharpe_versus_buy_and_hold");
    CHECK(test.at("difference").get<double>() ==
          Approx(agent.at("sharpe").get<double>() - hold.at("sharpe").get<double>()).epsilon(1e-9).margin(1e-9));
    CHECK(test.at("bars") == evaluation.at("bars"));
    const double p = test.at("p_value").get<double>();
    CHECK((p > 0 && p <= 1));
    net_returns.push_back(agent.at("total_return").get<double>());
  }
  // Two seeds: the median is their mean, the spread their range.
  const auto& net = study.at("aggregate").at("agent").at("net_total_return");
  CHECK(net.at("median").get<double>() == Approx((net_returns[0] + net_returns[1]) / 2));
  CHECK(net.at("mean").get<double>() == Approx((net_returns[0] + net_returns[1]) / 2));
  CHECK(net.at("min").get<double>() == std::min(net_returns[0], net_returns[1]));
  CHECK(net.at("max").get<double>() == std::max(net_returns[0], net_returns[1]));
  // The synthetic market is generated from the seed: no seed-averaged test.
  CHECK(study.at("seed_averaged").at("same_bars") == false);
  CHECK_THAT(lines.text, Catch::Contains("The seeds evaluated different bars"));
  // Each seed kept its best weights (a validation split): their report
  // follows, its numbers each seed's evaluation.json "best" section.
  REQUIRE(study.contains("best_weights"));
  const auto& best = study.at("best_weights");
  for (int k = 0; k < 2; ++k) {
    const auto evaluation = read_json(dir + "/seed_" + std::to_string(k + 1) + "/evaluation.json");
    const auto& row = best.at("per_seed").at(static_cast<std::size_t>(k));
    CHECK(row.at("best_epoch") == evaluation.at("best").at("epoch"));
    CHECK(row.at("agent").at("net_total_return").get<double>() ==
          evaluation.at("best").at("test").at("strategies").at(0).at("total_return").get<double>());
  }
  CHECK_THAT(lines.text, Catch::Contains("the best weights of each seed's run"));

  // A seed's run is the run a lone TrainingRun with that seed writes.
  const std::string alone = scratch_dir("alone");
  {
    auto c = study_config(alone);
    c.seed = 2;
    foxrl::TrainingRun run(c);
    run.run();
  }
  CHECK(read_bytes(alone + "/evaluation.json") == read_bytes(dir + "/seed_2/evaluation.json"));
  CHECK(read_bytes(alone + "/evaluation_backtest.csv") == read_bytes(dir + "/seed_2/evaluation_backtest.csv"));
  CHECK(read_bytes(alone + "/checkpoints/epoch-00000001/checkpoint.safetensors") ==
        read_bytes(dir + "/seed_2/checkpoints/epoch-00000001/checkpoint.safetensors"));
  fs::remove_all(alone);

  // Started again without --resume: refused before anything changes.
  const std::string study_bytes = read_bytes(dir + "/study.json");
  {
    foxrl::SeedStudy again({study_config(dir), {}, false}, options());
    CHECK_THROWS_WITH(again.run(), Catch::Contains("already holds a seed study") && Catch::Contains("--resume"));
  }

  // Resumed with both seeds complete: nothing is trained, and the same
  // bootstrap seed gives the same study.json.
  {
    Lines resumed;
    foxrl::SeedStudy study({study_config(dir), {}, false}, options(true));
    study.add_observer(resumed);
    study.run();
    CHECK_THAT(resumed.text, Catch::Contains("seed 1 (1 of 2): complete") &&
                                 Catch::Contains("seed 2 (2 of 2): complete") && !Catch::Contains("Epoch 1 complete"));
  }
  CHECK(read_bytes(dir + "/study.json") == study_bytes);

  // A seed whose evaluation is missing (stopped after its last
  // checkpoint) is resumed: evaluated again, to the same numbers.
  fs::remove(dir + "/seed_2/evaluation.json");
  {
    Lines resumed;
    foxrl::SeedStudy study({study_config(dir), {}, false}, options(true));
    study.add_observer(resumed);
    study.run();
    CHECK_THAT(resumed.text, Catch::Contains("seed 1 (1 of 2): complete") &&
                                 Catch::Contains("seed 2 (2 of 2): resuming from its checkpoint of epoch 1"));
  }
  CHECK(read_bytes(dir + "/study.json") == study_bytes);

  // Another bootstrap seed: the same per-seed numbers, other intervals.
  {
    auto o = options(true);
    o.bootstrap.seed = 5;
    foxrl::SeedStudy study({study_config(dir), {}, false}, o);
    study.run();
  }
  const auto reseeded = read_json(dir + "/study.json");
  CHECK(reseeded.at("per_seed").at(0).at("agent") == study.at("per_seed").at(0).at("agent"));
  CHECK(reseeded.at("per_seed").at(0).at("sharpe_versus_buy_and_hold").at("interval_95") !=
        study.at("per_seed").at(0).at("sharpe_versus_buy_and_hold").at("interval_95"));
  fs::remove_all(dir);
}
