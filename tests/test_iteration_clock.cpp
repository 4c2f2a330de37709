// The trainer's iteration reads its per-iteration counters from the device
// clock (train/iteration_clock.hpp): the env step behind epsilon and
// the exploration draws, the n-step push count, the replay's insert count
// and sample calls, the update count behind beta. The reference here is
// the same components driven the way they were before the clock existed:
// every counter a host value, epsilon and beta evaluated on the host. Both
// runs must leave the same bytes in every tensor of their checkpoints
// (weights, Adam state, replay, envs, n-step windows, episode statistics,
// normaliser), through iterations that collect only, insert, update twice
// (train_every 2), copy the target (every 3 updates), wrap the replay ring
// and evict boundary rows (the tiny config).
#include "io/safetensors.hpp"
#include "kernels/envs/episode_stats_kernels.hpp"
#include "support/env_test_util.hpp"
#include "support/scoped_environment.hpp"
#include "support/test_spaces.hpp"
#include "support/tiny_trainer_config.hpp"
#include "train/online_trainer.hpp"
#include "train/trainer_state.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

namespace {

/// One iteration of `t`'s components with host counters, as DqnTrainer
/// iterated before its counters moved to the device.
template <class Exec>
void host_counter_iteration(foxrl::DqnTrainer<Exec>& t, std::int64_t& global_step, std::int64_t iteration,
                            std::int64_t& updates) {
  const auto& c = t.config();
  const auto& space = t.context().space();
  if (t.collector().step(space, t.learner(), global_step)) t.replay().insert(space, t.collector().nstep().output());
  global_step += c.num_envs;
  const bool due =
      global_step >= c.learning_starts && iteration % c.train_every == 0 && t.replay().size() >= c.batch_size;
  if (!due) return;
  for (std::int64_t u = 0; u < c.updates_per_iteration; ++u) {
    const double b = c.per_beta_start + (1.0 - c.per_beta_start) * static_cast<double>(updates) /
                                            static_cast<double>(c.per_beta_anneal_updates);
    auto batch = t.replay().sample(space, static_cast<int>(c.batch_size), static_cast<float>(std::min(b, 1.0)));
    if (t.adapter() != nullptr) t.adapter()->normalize_in_place(space, batch.states, batch.next_states);
    t.learner().update(space, batch);
    t.replay().update_priorities(space, batch.indices, t.learner().td_errors());
    ++updates;
  }
}

/// Every tensor of the two checkpoints but the trainer's own counters (the
/// reference run does not advance them).
void check_same_tensors(const std::string& dir_a, const std::string& dir_b) {
  for (const char* file : {"checkpoint.safetensors", foxrl::trainer_state_file}) {
    const auto a = foxrl::safetensors::read(dir_a + "/" + file);
    const auto b = foxrl::safetensors::read(dir_b + "/" + file);
    REQUIRE(a.tensors.size() == b.tensors.size());
    for (std::size_t i = 0; i < a.tensors.size(); ++i) {
      const auto& name = a.tensors[i].name;
      INFO(file << ": tensor " << name);
      CHECK(name == b.tensors[i].name);
      if (name.rfind("trainer.", 0) == 0) continue;
      CHECK(a.tensors[i].data == b.tensors[i].data);
    }
  }
}

}  // namespace

TEMPLATE_TEST_CASE("the clock-driven iteration equals the components driven by host counters", "[trainer][clock]",
                   FOXRL_TEST_SPACES) {
  using Exec = TestType;
  const std::string env = GENERATE(std::string("cartpole"), std::string("market"));
  INFO("env " << env);
  const foxrl::test::TempDir clocked_dir, reference_dir;
  const std::string clocked = clocked_dir.path(), reference = reference_dir.path();
  auto config = foxrl::test::tiny_iteration_shapes_config(env, clocked, 1);
  const std::int64_t iterations = 90;  // past learning_starts (64 env steps) and around the 96-slot ring

  {
    foxrl::DqnTrainer<Exec> t(config);
    for (std::int64_t i = 0; i < iterations; ++i) t.iterate();
    REQUIRE(t.updates() > 20);
    t.save_checkpoint(clocked);
  }
  {
    config.out_dir = reference;
    foxrl::DqnTrainer<Exec> t(config);
    std::int64_t global_step = 0, updates = 0;
    for (std::int64_t i = 0; i < iterations; ++i) host_counter_iteration(t, global_step, i, updates);
    REQUIRE(updates > 20);
    t.save_checkpoint(reference);
  }
  check_same_tensors(clocked, reference);
}

TEMPLATE_TEST_CASE("work riding along in another launch equals its own launch", "[trainer][clock]", FOXRL_TEST_SPACES) {
  using Exec = TestType;
  using foxrl::test::ScopedEnvironment;
  const std::string env = GENERATE(std::string("cartpole"), std::string("market"));
  // The clock's advance in the last priority update's last team; the
  // replay's insert in the collector's one-team record; the batch's
  // normalisation in the replay sample (the market's signal adapter).
  // The one-step record aliased to the step's buffers (n_step 1), its flags
  // in the episode statistics' launch: in one team (4 envs) and across
  // teams (more envs than one team records).
  const std::string lever = GENERATE(std::string("clock_in_update"), std::string("insert_in_record"),
                                     std::string("normalize_in_sample"), std::string("one_step_aliased"));
  const int envs = GENERATE(4, foxrl::kernels::episode_stats_one_team_envs + 52);
  INFO("env " << env << ", " << lever << ", " << envs << " envs");
  if (lever == "normalize_in_sample" && env != "market") return;  // no adapter
  if (lever != "one_step_aliased" && envs != 4) return;
  const auto rides_along = [&](foxrl::DqnTrainer<Exec>& t) {
    if (lever == "normalize_in_sample") return t.normalizes_in_sample();
    if (lever == "one_step_aliased") return t.collector().nstep().aliases_step();
    return lever == "insert_in_record" ? t.inserts_in_record() : t.clock_in_priority_update();
  };
  const foxrl::test::TempDir along_dir, own_dir;
  // Two epochs of every iteration shape (collect only, insert, no update,
  // two updates; the metrics of the second go into the epoch sums with the
  // clock), around the ring with boundary evictions.
  auto config = foxrl::test::tiny_iteration_shapes_config(env, along_dir.path(), 2);
  // The clock rides along in uniform replay's flat priority update.
  if (lever == "clock_in_update") config.per_alpha = 0;
  if (lever == "one_step_aliased") {
    config.n_step = 1;
    config.num_envs = envs;
    // The ring still wraps, after learning starts.
    config.buffer_capacity = std::max<std::int64_t>(config.buffer_capacity, 4 * envs);
    config.learning_starts = std::max<std::int64_t>(config.learning_starts, 2 * envs);
  }
  std::vector<foxrl::EpochRecord> along, own;
  {
    ScopedEnvironment on("FOXRL_KERNEL_PATHS_OFF", nullptr);
    foxrl::DqnTrainer<Exec> t(config);
    REQUIRE(rides_along(t));
    for (int e = 0; e < 2; ++e) along.push_back(t.run_epoch());
    REQUIRE(t.updates() > 20);
    t.save_checkpoint(along_dir.path());
  }
  {
    config.out_dir = own_dir.path();
    ScopedEnvironment off("FOXRL_KERNEL_PATHS_OFF", lever.c_str());
    foxrl::DqnTrainer<Exec> t(config);
    REQUIRE_FALSE(rides_along(t));
    for (int e = 0; e < 2; ++e) own.push_back(t.run_epoch());
    t.save_checkpoint(own_dir.path());
  }
  // The device clock drives epsilon, beta, the draws and the replay's
  // positions, and the replay holds every insert: any difference shows in
  // the tensors.
  check_same_tensors(along_dir.path(), own_dir.path());
  for (int e = 0; e < 2; ++e) {
    INFO("epoch " << e + 1);
    // The epoch sums: the same bits through the same float-to-double adds.
    CHECK(along[e].updates == own[e].updates);
    CHECK(along[e].experiences == own[e].experiences);
    CHECK(along[e].loss == own[e].loss);
    CHECK(along[e].mean_q == own[e].mean_q);
    CHECK(along[e].td_error == own[e].td_error);
    CHECK(along[e].grad_norm == own[e].grad_norm);
    CHECK(along[e].rejected_updates == own[e].rejected_updates);
    CHECK(along[e].episodes == own[e].episodes);
  }
  CHECK(along[1].loss > 0.0);
}
