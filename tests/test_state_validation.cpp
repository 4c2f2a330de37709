// Loaded state is validated before it reaches a kernel: a trainer state or
// a learner checkpoint with one value out of range (an index past its
// buffer, a time outside the series, an action past the action count, a
// guard state outside its enum, a NaN weight or statistic) is refused with
// a UsageError naming the file, the tensor and the value. Each case writes
// a valid checkpoint, changes one element and re-writes the file as a whole
// through safetensors::write (so the container itself stays valid).
#include "core/error.hpp"
#include "evaluate/policy.hpp"
#include "io/safetensors.hpp"
#include "support/reference_dqn.hpp"
#include "train/online_trainer.hpp"

#include "support/tiny_trainer_config.hpp"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <string>
#include <vector>

namespace {

using Exec = Kokkos::DefaultHostExecutionSpace;
using Trainer = foxrl::DqnTrainer<Exec>;
namespace fs = std::filesystem;

const double not_a_number = std::numeric_limits<double>::quiet_NaN();
const double inf = std::numeric_limits<double>::infinity();

std::string scratch_dir(const std::string& name) {
  const auto dir = fs::temp_directory_path() / ("foxrl_state_" + std::to_string(::getpid()) + "_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

/// A small run that wraps the replay ring (capacity 96: 96 leaves, one
/// level of 3 nodes above them), hands out (the market) or writes per slot
/// (CartPole) boundary rows and updates the learner.
foxrl::TrainConfig tiny_config(const std::string& env, const std::string& out_dir) {
  return foxrl::test::tiny_trainer_config(env, out_dir, 2);
}

/// The directory of a checkpoint after one epoch of `env` (written once
/// per test process).
const std::string& valid_run(const std::string& env) {
  static std::map<std::string, std::string> dirs;
  auto it = dirs.find(env);
  if (it == dirs.end()) {
    const std::string dir = scratch_dir(env + "_valid");
    Trainer t(tiny_config(env, dir));
    t.run_epoch();
    t.save_checkpoint(dir);
    it = dirs.emplace(env, dir).first;
  }
  return it->second;
}

/// A copy of the valid checkpoint of `env` to corrupt.
std::string copy_of_valid_run(const std::string& env, const std::string& name) {
  const std::string dir = scratch_dir(name);
  fs::copy(valid_run(env), dir, fs::copy_options::overwrite_existing | fs::copy_options::recursive);
  return dir;
}

/// Sets element `index` of tensor `name` in the safetensors file `path` to
/// `value` (converted to the tensor's dtype) and writes the file again.
void set_element(const std::string& path, const std::string& name, std::int64_t index, double value) {
  auto file = foxrl::safetensors::read(path);
  foxrl::safetensors::Tensor* t = nullptr;
  for (auto& x : file.tensors)
    if (x.name == name) t = &x;
  INFO("tensor " << name << " in " << path);
  REQUIRE(t != nullptr);
  REQUIRE(index < t->numel());
  auto put = [&](auto v) { std::memcpy(t->data.data() + index * sizeof(v), &v, sizeof(v)); };
  if (t->dtype == "F32") {
    put(static_cast<float>(value));
  } else if (t->dtype == "F64") {
    put(value);
  } else if (t->dtype == "I32") {
    put(static_cast<std::int32_t>(value));
  } else if (t->dtype == "I64") {
    put(static_cast<std::int64_t>(value));
  } else if (t->dtype == "U8") {
    put(static_cast<std::uint8_t>(value));
  } else {
    FAIL("no test conversion to " << t->dtype);
  }
  foxrl::safetensors::write(path, file);
}

/// One corrupted element of a trainer state and a piece of the message.
struct Corruption {
  std::string env;
  std::string tensor;
  std::int64_t index;
  double value;
  std::string says;
};

}  // namespace

TEST_CASE("the test checkpoint has the sum tree shape the corruptions assume", "[state]") {
  Trainer t(tiny_config("cartpole", scratch_dir("shape")));
  const auto& shape = t.replay().layout().tree_shape;
  CHECK(shape.levels == 2);
  CHECK(shape.offset[1] == 96);
  CHECK(t.learner().guard().snapshot_buffers().size() == 4);
}

TEST_CASE("a valid trainer state loads", "[state]") {
  for (const std::string env : {"cartpole", "market"}) {
    INFO("env " << env);
    const std::string dir = copy_of_valid_run(env, env + "_ok");
    Trainer t(tiny_config(env, dir));
    CHECK_NOTHROW(t.resume(dir));
    fs::remove_all(dir);
  }
}

TEST_CASE("a trainer state with a value out of range is refused, naming the file and the tensor", "[state]") {
  // Indices into foxrl::GuardState (views/nn/guard_state.hpp).
  const auto slot = [](int s) { return static_cast<std::int64_t>(s); };
  const auto c = GENERATE_COPY(values<Corruption>({
      // Envs: the market's decision bar indexes the series.
      {"market", "env.market.time", 0, 1e6, "is 1000000: must be a start bar in ["},
      {"market", "env.market.time", 3, -5, "element [3] is -5"},
      {"market", "env.market.position", 1, 2, "must be -1, 0 or 1"},
      {"market", "env.market.episode_steps", 0, -1, "must be in [0, episode_length = 30)"},
      {"market", "env.market.episode_steps", 2, 30, "must be in [0, episode_length = 30)"},
      {"cartpole", "env.cartpole.theta", 1, not_a_number, "is nan: must be finite"},
      {"cartpole", "env.cartpole.episode_steps", 0, 500, "must be in [0, max_episode_steps = 500)"},
      // Replay: slots, boundary rows, priorities, the sum tree.
      {"market", "replay.next_ref", 5, 9000, "is 9000: must be -1 (successor), -2 (evicted) or a boundary row below"},
      {"cartpole", "replay.next_ref", 0, -3, "is -3"},
      {"market", "replay.actions", 7, 3, "must be an action in [0, 3)"},
      {"cartpole", "replay.actions", 7, 2, "must be an action in [0, 2)"},
      {"cartpole", "replay.actions", 0, -1, "is -1"},
      {"market", "replay.rewards", 4, inf, "is inf: must be finite"},
      {"cartpole", "replay.discounts", 4, not_a_number, "must be in [0, 1]"},
      // (CartPole's boundary rows are one per slot: no owners.)
      {"market", "replay.boundary_owner", 0, 1e12, "must be -1 (free) or a transition below replay.inserted"},
      {"cartpole", "replay.next_ref", 3, 9000, "or a boundary row below the 96 rows in use"},
      {"cartpole", "replay.boundary_head", 0, 1e6, "must equal replay.boundary_rows"},
      {"cartpole", "replay.boundary_evictions", 0, -1, "must be in [0, replay.inserted"},
      {"market", "replay.max_priority", 0, not_a_number, "must be finite and > 0"},
      {"market", "replay.max_priority", 0, 0, "must be finite and > 0"},
      {"cartpole", "replay.teams_done", 0, 1, "must be 0 between launches"},
      {"cartpole", "replay.batch_min_mass", 0, 0, "between launches"},
      {"cartpole", "replay.tree", 10, -1, "a leaf must be finite and >= 0"},
      {"market", "replay.tree", 10, not_a_number, "a leaf must be finite and >= 0"},
      {"cartpole", "replay.tree", 96, 1e6, "must be the sum of its children"},
      {"cartpole", "replay.tree", 100, 1, "must be the sum of its children"},  // padding above the 3 nodes
      // N-step windows and episode statistics.
      {"market", "nstep.actions", 0, 7, "is 7: must be an action in [0, 3)"},
      {"cartpole", "nstep.actions", 5, -1, "must be an action in [0, 2)"},
      {"cartpole", "nstep.rewards", 2, not_a_number, "must be finite"},
      {"cartpole", "nstep.episode_end", 1, 9, "must be 0-3"},
      {"cartpole", "episodes.running", 0, inf, "must be finite"},
      {"cartpole", "episodes.ring", 3, not_a_number, "must be finite"},
      {"cartpole", "episodes.count", 0, -1, "must be >= 0"},
      // The signal normaliser (market runs).
      {"market", "normalizer.count", 0, -1, "must be finite and >= 0"},
      {"market", "normalizer.count", 2, inf, "must be finite and >= 0"},
      {"market", "normalizer.mean", 1, not_a_number, "must be finite"},
      {"market", "normalizer.m2", 0, -0.5, "must be finite and >= 0"},
      // The training guard: its enum, counters, loss window and snapshots.
      {"cartpole", "guard.state", slot(foxrl::GuardState::verdict), 7, "the verdict must be 0 (apply)"},
      {"cartpole", "guard.state", slot(foxrl::GuardState::verdict), 0.5, "the verdict must be 0 (apply)"},
      {"cartpole", "guard.state", slot(foxrl::GuardState::lr_scale), 2, "the learning-rate scale must be in [0, 1]"},
      {"cartpole", "guard.state", slot(foxrl::GuardState::rejected), -1, "a counter must be a whole number >= 0"},
      {"cartpole", "guard.state", slot(foxrl::GuardState::losses), 33, "the window's loss count"},
      {"cartpole", "guard.state", slot(foxrl::GuardState::ring_next), 1e9, "the ring position"},
      {"cartpole", "guard.state", slot(foxrl::GuardState::weights_nonfinite), 3, "the flag must be 0 or 1"},
      {"cartpole", "guard.state", slot(foxrl::GuardState::ring), not_a_number, "a loss must be finite"},
      {"cartpole", "guard.state", slot(foxrl::GuardState::sorted), 1e30,
       "the sorted losses must be finite and ascending"},
      {"cartpole", "guard.snapshot_online", 3, not_a_number, "is nan: must be finite"},
      {"cartpole", "guard.snapshot_adam_v", 0, -1, "must be finite and >= 0"},
      {"cartpole", "guard.snapshot_adam_step", 0, -1, "must be >= 0"},
  }));
  INFO(c.env << ": " << c.tensor << "[" << c.index << "] = " << c.value);
  const std::string dir = copy_of_valid_run(c.env, "corrupt");
  const std::string state = dir + "/" + foxrl::trainer_state_file;
  set_element(state, c.tensor, c.index, c.value);
  Trainer t(tiny_config(c.env, dir));
  CHECK_THROWS_AS(t.resume(dir), foxrl::UsageError);
  CHECK_THROWS_WITH(t.resume(dir),
                    Catch::Contains(state) && Catch::Contains("tensor '" + c.tensor + "'") && Catch::Contains(c.says));
  fs::remove_all(dir);
}

TEST_CASE("the guard's loss window must hold losses and a sorted copy only in use", "[state]") {
  // Past the window's count the ring is not read: a value there loads.
  const std::string dir = copy_of_valid_run("cartpole", "guard_unused");
  const std::string state = dir + "/" + foxrl::trainer_state_file;
  const auto file = foxrl::safetensors::read(state);
  const auto* s = file.find("guard.state");
  REQUIRE(s != nullptr);
  double losses = 0;
  std::memcpy(&losses, s->data.data() + foxrl::GuardState::losses * sizeof(double), sizeof(double));
  REQUIRE(losses < foxrl::GuardState::window);
  set_element(state, "guard.state", foxrl::GuardState::ring + foxrl::GuardState::window - 1, not_a_number);
  Trainer t(tiny_config("cartpole", dir));
  CHECK_NOTHROW(t.resume(dir));
  fs::remove_all(dir);
}

TEST_CASE("a learner checkpoint with a non-finite weight or moment is refused and changes nothing",
          "[state][checkpoint]") {
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  foxrl::DqnLearnerConfig cfg;
  cfg.obs_dim = 5;
  cfg.hidden = {8, 8};
  cfg.num_actions = 3;
  cfg.max_batch = 16;
  cfg.seed = 3;
  const std::string dir = scratch_dir("learner");
  const std::string path = dir + "/checkpoint.safetensors";
  {
    foxrl::DqnLearner<Exec> saved(space, cfg);
    saved.save(space, path);
  }
  struct Case {
    std::string tensor;
    std::int64_t index;
    double value;
    std::string says;
  };
  const auto c = GENERATE(values<Case>({
      {"online.trunk.0.weight", 7, not_a_number, "element [1, 2] is nan: must be finite"},  // [8, 5]
      {"online.head.bias", 1, inf, "element [1] is inf: must be finite"},
      {"target.trunk.2.weight", 0, -inf, "is -inf: must be finite"},
      {"adam_m.head.weight", 2, not_a_number, "must be finite"},
      {"adam_v.trunk.0.bias", 3, -0.5, "is -0.5: must be finite and >= 0"},
      {"adam_v.head.weight", 0, not_a_number, "must be finite and >= 0"},
      {"adam.step", 0, -1, "negative counter -1"},
      {"learner.updates", 0, -4, "negative counter -4"},
  }));
  INFO(c.tensor << "[" << c.index << "] = " << c.value);
  const std::string bad = dir + "/bad.safetensors";
  fs::copy_file(path, bad, fs::copy_options::overwrite_existing);
  set_element(bad, c.tensor, c.index, c.value);

  cfg.seed = 4;  // other weights than the file's
  foxrl::DqnLearner<Exec> learner(space, cfg);
  const auto before = foxrl::test::flat_host(space, learner.online().flat);
  CHECK_THROWS_AS(learner.load(space, bad), foxrl::UsageError);
  CHECK_THROWS_WITH(learner.load(space, bad),
                    Catch::Contains(bad) && Catch::Contains("tensor '" + c.tensor + "'") && Catch::Contains(c.says));
  CHECK(foxrl::test::flat_host(space, learner.online().flat) == before);
  CHECK_NOTHROW(learner.load(space, path));
  fs::remove_all(dir);
}

TEST_CASE("a Policy refuses a run whose checkpoint holds a NaN weight", "[state][checkpoint]") {
  foxrl::ExecutionContext<Exec> context;
  const std::string dir = copy_of_valid_run("market", "policy");
  const std::string checkpoint = dir + "/checkpoint.safetensors";
  CHECK_NOTHROW(foxrl::Policy<Exec>(context.space(), dir));
  set_element(checkpoint, "online.head.weight", 4, not_a_number);
  CHECK_THROWS_AS(foxrl::Policy<Exec>(context.space(), dir), foxrl::UsageError);
  CHECK_THROWS_WITH(foxrl::Policy<Exec>(context.space(), dir), Catch::Contains(checkpoint) &&
                                                                   Catch::Contains("tensor 'online.head.weight'") &&
                                                                   Catch::Contains("is nan: must be finite"));
  fs::remove_all(dir);
}
