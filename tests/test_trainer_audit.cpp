// One-stream rule for a whole trainer iteration after learning_starts:
// collector step (forward, selection, env step, n-step, replay insert,
// episode statistics), the update (sample, normalise, learner update),
// the priority update and the metric bookkeeping: every launch on the
// run's instance, no fence, no allocation outside foxrl:: labels.
#include "agents/dqn/dqn_trainer.hpp"
#include "core/kokkos_tools_audit.hpp"
#include "support/test_spaces.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

namespace {

foxrl::TrainConfig audit_config(const std::string& env) {
  foxrl::TrainConfig c;
  c.env = env;
  c.num_envs = 8;
  c.hidden = {32, 32};
  c.batch_size = 32;
  c.buffer_capacity = 512;
  c.learning_starts = 64;
  c.iterations_per_epoch = 1;
  c.out_dir = "unused";
  if (env == "market") {
    c.synthetic_bars = 2000;
    c.episode_length = 30;
    c.window = 16;
  }
  return c;
}

bool launched(const foxrl::AuditRecord& r, const std::string& name) {
  for (const auto& l : r.launches)
    if (l.name == name) return true;
  return false;
}

}  // namespace

TEMPLATE_TEST_CASE("a full trainer iteration stays on the run's instance", "[audit][trainer]", FOXRL_TEST_SPACES) {
  using Exec = TestType;
  const std::string env = GENERATE(std::string("cartpole"), std::string("market"));
  INFO("env " << env);
  foxrl::DqnTrainer<Exec> trainer(audit_config(env));
  const auto id = foxrl::tools_device_id(trainer.context().space());
  // Past learning_starts (and the n-step warm-up) before the audited one.
  while (trainer.global_step() < trainer.config().learning_starts) trainer.iterate();
  trainer.context().fence("test::warm");
  const auto updates_before = trainer.updates();

  const auto record = foxrl::audit([&] { trainer.iterate(); });
  CHECK(trainer.updates() == updates_before + 1);
  // Kokkos Kernels' gemm (the blas dense backend on host backends) carries
  // its own labels; it must still run on the run's instance, which
  // violations() checks for every launch.
  std::vector<std::string> violations;
  for (const auto& v : record.violations(id))
    if (v.find("'KokkosBlas::") == std::string::npos) violations.push_back(v);
  INFO("violations: " << violations.size() << (violations.empty() ? "" : ", first: " + violations.front()));
  CHECK(violations.empty());
  // The iteration holds every stage (names from the components).
  for (const char* name : {"foxrl::ActionSelector::select_from_greedy", "foxrl::NStep::record_step_and_emit", "foxrl::Replay::insert", "foxrl::Replay::sample",
                           "foxrl::Replay::update_priorities", "foxrl::DqnTrainer::accumulate_metrics",
                           "foxrl::EpisodeStats::record"}) {
    INFO("launch " << name);
    CHECK(launched(record, name));
  }
  // Nothing in an iteration waits for the device or allocates.
  CHECK(record.fences.empty());
  CHECK(record.allocations.empty());
}
