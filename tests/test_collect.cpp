// foxrl collect: a recorded dataset is what stepping the env with the
// recorded actions gives (the rollout reference), loads as safetensors with
// its metadata, and a greedy dataset's actions are the checkpoint's argmax.
#include "core/execution_context.hpp"
#include "envs/rollout.hpp"
#include "evaluate/collect_dataset.hpp"
#include "io/safetensors.hpp"
#include "support/test_spaces.hpp"
#include "train/online_trainer.hpp"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

std::string scratch_path(const std::string& name) {
  return (fs::temp_directory_path() / ("foxrl_collect_" + std::to_string(::getpid()) + "_" + name)).string();
}

template <class T>
std::vector<T> values(const foxrl::safetensors::Tensor& t) {
  std::vector<T> out(t.data.size() / sizeof(T));
  std::memcpy(out.data(), t.data.data(), t.data.size());
  return out;
}

const foxrl::safetensors::Tensor& tensor(const foxrl::safetensors::File& f, const std::string& name) {
  const auto* t = f.find(name);
  INFO("tensor " << name);
  REQUIRE(t != nullptr);
  return *t;
}

}  // namespace

TEMPLATE_TEST_CASE("collected CartPole dataset matches the rollout of its actions", "[collect]", FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context;
  foxrl::CollectOptions o;
  o.config.env = "cartpole";
  o.config.num_envs = 3;
  o.config.seed = 5;
  o.transitions = 301;  // the last iteration records one env only
  o.out_path = scratch_path("random.safetensors");
  const auto summary = foxrl::collect_dataset(context.space(), o);
  CHECK(summary.iterations == 101);

  const auto file = foxrl::safetensors::read(o.out_path);
  CHECK(file.metadata.at("format") == "foxrl.dataset");
  CHECK(file.metadata.at("env") == "cartpole");
  CHECK(file.metadata.at("policy") == "random");
  CHECK(file.metadata.at("num_envs") == "3");
  const auto& obs_t = tensor(file, "observations");
  CHECK(obs_t.dtype == "F32");
  CHECK(obs_t.shape == std::vector<std::int64_t>{301, 4});
  CHECK(tensor(file, "next_observations").shape == std::vector<std::int64_t>{301, 4});
  CHECK(tensor(file, "actions").dtype == "I32");
  CHECK(tensor(file, "terminated").dtype == "U8");
  const auto obs = values<float>(obs_t);
  const auto next = values<float>(tensor(file, "next_observations"));
  const auto actions = values<std::int32_t>(tensor(file, "actions"));
  const auto rewards = values<float>(tensor(file, "rewards"));
  const auto term = values<std::uint8_t>(tensor(file, "terminated"));
  const auto trunc = values<std::uint8_t>(tensor(file, "truncated"));

  // Env 0's rows, replayed by the rollout tool (one env, same seed: the
  // same reset draws).
  const int N = 3;
  std::vector<std::int32_t> env0;
  for (int row = 0; row < 301; row += N) env0.push_back(actions[row]);
  int explored[2] = {0, 0};
  for (auto a : actions) ++explored[a];
  CHECK(explored[0] > 100);  // uniform random actions
  CHECK(explored[1] > 100);
  foxrl::RolloutOptions ro;
  ro.config.env = "cartpole";
  ro.config.seed = 5;
  const auto trace = foxrl::rollout(context.space(), ro, env0);
  REQUIRE(trace.size() == env0.size());
  int episodes = 0;
  for (std::size_t k = 0; k < trace.size(); ++k) {
    const std::size_t row = k * N;
    INFO("env 0, step " << k);
    for (int j = 0; j < 4; ++j) REQUIRE(obs[row * 4 + j] == trace.observations[k * 4 + j]);
    REQUIRE(rewards[row] == trace.rewards[k]);
    REQUIRE(term[row] == trace.terminated[k]);
    REQUIRE(trunc[row] == trace.truncated[k]);
    // Without an episode end, the next observation is the next row's state.
    if (k + 1 < trace.size() && !term[row] && !trunc[row]) {
      for (int j = 0; j < 4; ++j) REQUIRE(next[row * 4 + j] == obs[(row + N) * 4 + j]);
    }
    episodes += term[row] | trunc[row];
  }
  CHECK(episodes > 0);  // the comparison crossed resets
  fs::remove(o.out_path);
}

TEST_CASE("greedy dataset takes the checkpoint's argmax actions", "[collect]") {
  using Exec = Kokkos::DefaultHostExecutionSpace;
  const std::string dir = scratch_path("run");
  fs::create_directories(dir);
  foxrl::TrainConfig c;
  c.env = "market";
  c.num_envs = 4;
  c.hidden = {16};
  c.batch_size = 16;
  c.buffer_capacity = 256;
  c.learning_starts = 32;
  c.iterations_per_epoch = 20;
  c.synthetic_bars = 2000;
  c.episode_length = 30;
  c.window = 16;
  c.out_dir = dir;
  {
    foxrl::DqnTrainer<Exec> trainer(c);
    trainer.run_epoch();
    trainer.save_checkpoint(dir);
  }
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  foxrl::CollectOptions o;
  o.config = c;
  o.policy = "greedy";
  o.run_dir = dir;
  o.transitions = 40;
  o.out_path = scratch_path("greedy.safetensors");
  foxrl::collect_dataset(space, o);

  const auto file = foxrl::safetensors::read(o.out_path);
  CHECK(file.metadata.at("policy") == "greedy");
  CHECK(file.metadata.at("split") == "train");
  CHECK(file.find("normalizer.mean") != nullptr);  // the market run's normaliser travels along
  const auto& obs_t = tensor(file, "observations");
  const int D = static_cast<int>(obs_t.shape[1]);
  const auto obs = values<float>(obs_t);
  const auto actions = values<std::int32_t>(tensor(file, "actions"));

  foxrl::Policy<Exec> policy(space, dir, 40);
  Kokkos::View<float**, Kokkos::LayoutRight, Kokkos::HostSpace> raw("foxrl::test::raw", 40, D),
      q("foxrl::test::q", 40, 3);
  for (int i = 0; i < 40; ++i)
    for (int j = 0; j < D; ++j) raw(i, j) = obs[static_cast<std::size_t>(i * D + j)];
  policy.q_values(space, raw, q);
  context.fence("test::q");
  for (int i = 0; i < 40; ++i) {
    int best = 0;
    for (int a = 1; a < 3; ++a)
      if (q(i, a) > q(i, best)) best = a;
    INFO("row " << i);
    CHECK(actions[static_cast<std::size_t>(i)] == best);
  }

  SECTION("options are checked") {
    o.run_dir.clear();
    CHECK_THROWS_AS(foxrl::collect_dataset(space, o), foxrl::UsageError);
    o.policy = "random";
    o.run_dir = dir;
    CHECK_THROWS_AS(foxrl::collect_dataset(space, o), foxrl::UsageError);
  }
  fs::remove(o.out_path);
  fs::remove_all(dir);
}
