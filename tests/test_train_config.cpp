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
  CHECK(config.env == "cartpole");
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
             Catch::StartsWith("--set lr:1:1: syntax error") && Catch::Contains("last read: 'a'"));
  CHECK_THAT(usage_error_of([&] { config.apply_overrides({"hidden=64,x4"}); }),
             Catch::StartsWith("--set hidden entry 2:1:1: syntax error"));
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
  CHECK_THAT(usage_error_of([&] { foxrl::TrainConfig::from_json_file(broken); }),
             Catch::StartsWith(broken + ":1:9: syntax error") && Catch::Contains("unexpected end of input"));
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

TEST_CASE("start_date and bars_per_year: read, range-checked, left out of the JSON at their defaults", "[config]") {
  foxrl::TrainConfig config;
  // At their defaults they are not in the JSON form, so the config hash of
  // runs saved before the keys existed stays the same.
  CHECK_THAT(config.to_json(), !Catch::Contains("start_date") && !Catch::Contains("bars_per_year"));
  config.apply_overrides({"start_date=1962-01-02", "bars_per_year=365"});
  CHECK(config.start_date == "1962-01-02");
  CHECK(config.bars_per_year == 365.0);
  CHECK_THAT(config.to_json(),
             Catch::Contains("\"start_date\": \"1962-01-02\"") && Catch::Contains("\"bars_per_year\": 365.0"));
  const auto path = write_temp("new_keys.json", config.to_json());
  const auto again = foxrl::TrainConfig::from_json_file(path);
  CHECK(again.to_json() == config.to_json());
  std::remove(path.c_str());
  foxrl::TrainConfig bad;
  CHECK_THROWS_WITH(bad.apply_overrides({"bars_per_year=-1"}),
                    Catch::Contains("bars_per_year") && Catch::Contains("out of range"));
  CHECK_THAT(foxrl::TrainConfig::describe(), Catch::Contains("start_date") && Catch::Contains("bars_per_year"));
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

TEST_CASE("config JSON is parsed strictly: depth, duplicate keys, line and column, BOM", "[config]") {
  // 100,000 nested arrays: a clean UsageError at the 65th bracket, no
  // recursion over the depth (this used to overflow the stack).
  const std::string deep = "{\"hidden\": " + std::string(100000, '[') + std::string(100000, ']') + "}";
  const auto deep_path = write_temp("deep.json", deep);
  CHECK_THAT(usage_error_of([&] { foxrl::TrainConfig::from_json_file(deep_path); }),
             Catch::StartsWith(deep_path + ":1:75: ") && Catch::Contains("deeper than 64 levels"));
  foxrl::TrainConfig config;
  CHECK_THAT(usage_error_of([&] { config.apply_overrides({"hidden=" + std::string(100000, '[')}); }),
             Catch::StartsWith("--set hidden:1:65: ") && Catch::Contains("deeper than 64"));

  const auto twice = write_temp("twice.json", "{\"env\": \"cartpole\",\n  \"gamma\": 0.9,\n  \"gamma\": 0.5}");
  CHECK_THAT(usage_error_of([&] { foxrl::TrainConfig::from_json_file(twice); }),
             Catch::StartsWith(twice + ":3:3: key 'gamma' appears twice"));

  const auto bad = write_temp("syntax.json", "{\n  \"env\": \"cartpole\",\n  \"gamma\": 0.9x\n}");
  CHECK_THAT(usage_error_of([&] { foxrl::TrainConfig::from_json_file(bad); }),
             Catch::StartsWith(bad + ":3:15: syntax error"));

  // A long bad token is quoted shortened, a NUL escaped.
  const auto junk = write_temp("junk.json", "{\"env\": " + std::string(5000, 'x') + "}");
  const auto junk_message = usage_error_of([&] { foxrl::TrainConfig::from_json_file(junk); });
  CHECK_THAT(junk_message, Catch::StartsWith(junk + ":1:9: syntax error"));
  CHECK(junk_message.size() < junk.size() + 400);
  const auto nul = write_temp("nul.json", std::string("{\"env\": \"cartpole\"\0, \"lr\": 1}", 29));
  CHECK_THAT(usage_error_of([&] { foxrl::TrainConfig::from_json_file(nul); }),
             Catch::StartsWith(nul + ":1:19: syntax error") && Catch::Contains("U+0000"));

  // A UTF-8 BOM, as some editors write it, is skipped.
  const auto bom = write_temp("bom.json", "\xEF\xBB\xBF{\"env\": \"cartpole\"}");
  CHECK(foxrl::TrainConfig::from_json_file(bom).env == "cartpole");

  // Numbers beyond double are refused by the parser, not read as inf.
  CHECK_THAT(usage_error_of([&] { config.apply_overrides({"max_grad_norm=1e999"}); }),
             Catch::StartsWith("--set max_grad_norm:1:") && Catch::Contains("overflow"));
  CHECK_THAT(usage_error_of([&] { foxrl::TrainConfig::from_json_text("[1]", "inline"); }),
             Catch::Contains("inline: expected a JSON object of keys, got '[1]'"));
  for (const auto& p : {deep_path, twice, bad, junk, nul, bom}) std::remove(p.c_str());
}

TEST_CASE("integer keys are compared exactly before narrowing, and --help-config shows what is accepted", "[config]") {
  foxrl::TrainConfig config;
  // 1.8e19 + 500 rounds to the bound 1.8e19 as a double.
  CHECK_THAT(usage_error_of([&] { config.apply_overrides({"seed=18000000000000000500"}); }),
             Catch::Contains("key 'seed': value 18000000000000000500 is out of range [0, 18000000000000000000]"));
  config.apply_overrides({"seed=18000000000000000000"});
  CHECK(config.seed == 18000000000000000000ULL);
  CHECK_THAT(usage_error_of([&] { config.apply_overrides({"num_envs=-9223372036854775808"}); }),
             Catch::Contains("key 'num_envs': value -9223372036854775808 is out of range [1, 16777216]"));
  CHECK_THAT(usage_error_of([&] { config.apply_overrides({"hidden=64,99999999999999999999"}); }),
             Catch::Contains("key 'hidden'"));
  CHECK_THAT(usage_error_of([&] { config.apply_overrides({"hidden=[64, 65537]"}); }),
             Catch::Contains("key 'hidden': value 65537 is out of range [1, 65536]"));
  // Every integer key: one past its documented upper bound is refused
  // naming the key, the bound itself is accepted (up to cross-key checks).
  const std::string doc = foxrl::TrainConfig::describe();
  CHECK_THAT(doc, Catch::Contains("batch_size = 256  [1, 65536]"));
  CHECK_THAT(doc, Catch::Contains("max_grad_norm = 10.0  [0, inf)"));
  for (const char* key :
       {"num_envs", "episode_length", "window", "n_step", "buffer_capacity", "batch_size", "learning_starts",
        "updates_per_iteration", "train_every", "target_update_every", "eps_decay_env_steps", "per_beta_anneal_updates",
        "guard_max_bad", "epochs", "iterations_per_epoch", "checkpoint_every", "synthetic_bars"}) {
    const std::string pattern = std::string(key) + " = ";
    const std::size_t at = doc.find("  " + pattern);
    REQUIRE(at != std::string::npos);
    const std::size_t comma = doc.find(", ", at);
    const std::size_t close = doc.find(']', comma);
    const std::string max = doc.substr(comma + 2, close - comma - 2);
    const std::string above = std::to_string(std::stoull(max) + 1);
    CAPTURE(key, max);
    CHECK_THAT(usage_error_of([&] { foxrl::TrainConfig().apply_overrides({std::string(key) + "=" + above}); }),
               Catch::Contains("key '" + std::string(key) + "': value " + above + " is out of range"));
  }
}
