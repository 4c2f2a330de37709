#include "config/train_config.hpp"
#include "core/error.hpp"

#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <string>

namespace {

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = std::string(P_tmpdir) + "/foxrl_test_" + name;
  std::ofstream(path) << text;
  return path;
}

template <class F>
std::string usage_error_of(F&& f) {
  try {
    f();
  } catch (const foxrl::UsageError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("config file and overrides set typed keys", "[config]") {
  const auto path = write_temp("good.json", R"({"env": "cartpole", "num_envs": 8, "lr": 0.001,
      "hidden": [120, 84], "skip_bad_rows": true, "seed": 7})");
  auto config = foxrl::TrainConfig::from_json_file(path);
  CHECK(config.env == foxrl::EnvKind::cartpole);
  CHECK(config.num_envs == 8);
  CHECK(config.lr == Approx(0.001));
  CHECK(config.hidden == std::vector<std::int64_t>{120, 84});
  CHECK(config.skip_bad_rows);
  CHECK(config.seed == 7);
  config.apply_overrides({"num_envs=16", "hidden=64,64,32", "loss=mse", "gamma=0.9"});
  CHECK(config.num_envs == 16);
  CHECK(config.hidden == std::vector<std::int64_t>{64, 64, 32});
  CHECK(config.loss == "mse");
  CHECK(config.gamma == Approx(0.9));
  std::remove(path.c_str());
}

TEST_CASE("config rejects bad keys and values, naming the key", "[config]") {
  foxrl::TrainConfig config;
  CHECK_THAT(usage_error_of([&] { config.apply_overrides({"num_env=3"}); }),
             Catch::Contains("'num_env'") && Catch::Contains("unknown key"));
  CHECK_THAT(usage_error_of([&] { config.apply_overrides({"gamma=1.5"}); }),
             Catch::Contains("'gamma'") && Catch::Contains("out of range"));
  CHECK_THAT(usage_error_of([&] { config.apply_overrides({"num_envs=0"}); }),
             Catch::Contains("'num_envs'") && Catch::Contains("out of range"));
  CHECK_THAT(usage_error_of([&] { config.apply_overrides({"num_envs=2.5"}); }),
             Catch::Contains("'num_envs'") && Catch::Contains("integer"));
  CHECK_THAT(usage_error_of([&] { config.apply_overrides({"loss=l1"}); }),
             Catch::Contains("'loss'") && Catch::Contains("not one of"));
  CHECK_THAT(usage_error_of([&] { config.apply_overrides({"lr=abc"}); }),
             Catch::Contains("'lr'") && Catch::Contains("cannot parse"));
  CHECK_THAT(usage_error_of([&] { config.apply_overrides({"seed=-1"}); }), Catch::Contains("'seed'"));
  CHECK_THAT(usage_error_of([&] { config.apply_overrides({"novalue"}); }), Catch::Contains("key=value"));
  CHECK_THAT(usage_error_of([&] {
               config.apply_overrides({"batch_size=1000", "buffer_capacity=100"});
             }),
             Catch::Contains("batch_size"));

  const auto unknown = write_temp("unknown.json", R"({"env": "market", "use_per": true})");
  CHECK_THAT(usage_error_of([&] { foxrl::TrainConfig::from_json_file(unknown); }),
             Catch::Contains(unknown) && Catch::Contains("'use_per'"));
  const auto wrong_type = write_temp("type.json", R"({"hidden": "big"})");
  CHECK_THAT(usage_error_of([&] { foxrl::TrainConfig::from_json_file(wrong_type); }), Catch::Contains("'hidden'"));
  const auto broken = write_temp("broken.json", R"({"env": )");
  CHECK_THAT(usage_error_of([&] { foxrl::TrainConfig::from_json_file(broken); }), Catch::Contains("not valid JSON"));
  CHECK_THAT(usage_error_of([&] { foxrl::TrainConfig::from_json_file("/nonexistent/x.json"); }),
             Catch::Contains("cannot open"));
  for (const auto& p : {unknown, wrong_type, broken}) std::remove(p.c_str());
}

TEST_CASE("config round-trips through its JSON form and documents every key", "[config]") {
  foxrl::TrainConfig config;
  config.apply_overrides({"env=cartpole", "hidden=[32]", "polyak_tau=0.01"});
  const auto path = write_temp("roundtrip.json", config.to_json());
  const auto again = foxrl::TrainConfig::from_json_file(path);
  CHECK(again.to_json() == config.to_json());
  const auto doc = foxrl::TrainConfig::describe();
  CHECK_THAT(doc, Catch::Contains("per_alpha") && Catch::Contains("target_update_every"));
  std::remove(path.c_str());
}

TEST_CASE("integer keys are range-checked against what the components hold", "[config]") {
  foxrl::TrainConfig config;
  // The learner counts target-copy intervals in an int: 2^32 + 500 used to
  // wrap to 500.
  const auto wrapped = usage_error_of([&] { config.apply_overrides({"target_update_every=4294967796"}); });
  CHECK(wrapped.find("target_update_every") != std::string::npos);
  CHECK(wrapped.find("value 4294967796 is out of range [1, 2147483647]") != std::string::npos);
  // The replay buffer preallocates at most 65536 rows a batch: the config
  // says so, instead of a message from inside the buffer after setup.
  const auto batch = usage_error_of([&] { config.apply_overrides({"batch_size=65537"}); });
  CHECK(batch.find("value 65537 is out of range [1, 65536]") != std::string::npos);
  config.apply_overrides({"target_update_every=2147483647", "batch_size=65536"});
  CHECK(config.target_update_every == 2147483647);
  CHECK(config.batch_size == 65536);
}
