// The run setup (train/run_spec.hpp) is the one path from a TrainConfig to the
// components: the trainer, the Policy of `foxrl infer` / `foxrl collect`
// and the spec `foxrl eval` rebuilds from checkpoint.json agree on the
// observation size, the feature window and the normaliser's mask.
#include "evaluate/policy.hpp"
#include "train/online_trainer.hpp"
#include "train/run_manifest.hpp"
#include "train/run_spec.hpp"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <string>

namespace {

using Exec = Kokkos::DefaultHostExecutionSpace;
namespace fs = std::filesystem;

foxrl::TrainConfig small_config(std::string env, const std::string& features, const std::string& out_dir) {
  foxrl::TrainConfig c;
  c.env = env;
  c.features = features;
  c.num_envs = 4;
  c.hidden = {16};
  c.batch_size = 16;
  c.buffer_capacity = 256;
  c.learning_starts = 32;
  c.iterations_per_epoch = 12;
  c.epochs = 1;
  c.out_dir = out_dir;
  c.synthetic_bars = 2000;
  c.episode_length = 30;
  c.window = 12;
  return c;
}

}  // namespace

TEST_CASE("the run setup gives train, policy and eval the same components", "[setup]") {
  const std::string env = GENERATE(std::string("cartpole"), std::string("market"));
  const std::string features = GENERATE(std::string("returns"), std::string("ohlcv"));
  if (env == "cartpole" && features == "ohlcv") return;  // features are the market's
  INFO(env << ", features " << features);
  const auto dir =
      (fs::temp_directory_path() / ("foxrl_setup_" + std::to_string(::getpid()) + "_" + env + "_" + features)).string();
  fs::remove_all(dir);
  fs::create_directories(dir);

  foxrl::DqnTrainer<Exec> trainer(small_config(env, features, dir));
  trainer.run_epoch();
  trainer.save_checkpoint(dir);
  const foxrl::RunSpec& train = trainer.spec();
  CHECK(train.env == env);
  CHECK(train.obs_dim == trainer.env().obs_dim());
  CHECK(train.num_actions == trainer.env().num_actions());
  CHECK(trainer.learner().config().obs_dim == train.obs_dim);
  CHECK(train.replay.obs_dim == train.obs_dim);

  foxrl::ExecutionContext<Exec> context;
  foxrl::Policy<Exec> policy(context.space(), dir);
  const foxrl::RunSpec& served = policy.spec();
  // What `foxrl eval` rebuilds from the manifest.
  const foxrl::RunSpec evaluated = foxrl::run_spec(foxrl::RunManifest::read(dir).config);
  for (const foxrl::RunSpec* other : {&served, &evaluated}) {
    CHECK(other->env == train.env);
    CHECK(other->obs_dim == train.obs_dim);
    CHECK(other->num_actions == train.num_actions);
    CHECK(other->feature_window == train.feature_window);
    CHECK(other->normalizes == train.normalizes);
    CHECK(other->normalize_mask == train.normalize_mask);
    CHECK(other->market_env.observation.set == train.market_env.observation.set);
    CHECK(other->market_env.observation.window == train.market_env.observation.window);
    CHECK(other->market_env.cost == train.market_env.cost);
  }
  CHECK(policy.obs_dim() == trainer.env().obs_dim());
  CHECK(policy.num_actions() == trainer.env().num_actions());

  if (env == "market") {
    REQUIRE(trainer.market() != nullptr);
    REQUIRE(trainer.adapter() != nullptr);
    // The features were computed over the observation's rolling window,
    // the one the policy and eval compute them over.
    CHECK(trainer.market()->features.stats_window() == train.feature_window);
    CHECK(train.feature_window == train.market_env.observation.rolling_window());
    CHECK(trainer.adapter()->dim() == train.obs_dim);
    CHECK(train.normalize_mask == foxrl::market_normalize_mask(train.market_env.observation));
    CHECK(train.normalize_mask.size() == static_cast<std::size_t>(train.obs_dim));
  } else {
    CHECK(trainer.market() == nullptr);
    CHECK(trainer.adapter() == nullptr);
    CHECK_FALSE(train.normalizes);
    CHECK(train.normalize_mask.empty());
  }
  fs::remove_all(dir);
}

TEST_CASE("the env is a registered name, refused where a run is set up", "[setup][config]") {
  foxrl::TrainConfig c;
  CHECK(c.env == "market");
  c.apply_overrides({"env=cartpole"});
  CHECK(c.env == "cartpole");
  CHECK_THAT(c.to_json(), Catch::Contains("\"env\": \"cartpole\""));
  CHECK(foxrl::TrainConfig::from_json_text(c.to_json(), "test").env == "cartpole");
  // The config layer knows no env; the registry refuses an unknown one,
  // naming the registered ones.
  c.apply_overrides({"env=pendulum"});
  CHECK_THROWS_AS(foxrl::run_spec(c), foxrl::UsageError);
  CHECK_THROWS_WITH(foxrl::run_spec(c), Catch::Contains("env 'pendulum': not a registered env (cartpole, market"));
  CHECK_THROWS_AS(foxrl::env_info("Market"), foxrl::UsageError);
  for (const auto& e : foxrl::registered_envs()) {
    CHECK(foxrl::env_info(e.name).name == e.name);
    CHECK(foxrl::env_index(e.name) < foxrl::registered_envs().size());
  }
}
