// One-stream rule for a whole trainer iteration after learning_starts:
// collector step (forward, selection, env step, n-step, replay insert,
// episode statistics), the update (sample, normalise, learner update),
// the priority update and the metric bookkeeping: every launch on the
// run's instance, no fence, no allocation outside foxrl:: labels. And the
// trainer's Kokkos Tools regions: its phases in order, every kernel inside
// its phase and on the run's instance.
#include "core/kokkos_tools_audit.hpp"
#include "support/scoped_environment.hpp"
#include "support/test_spaces.hpp"
#include "train/online_trainer.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <utility>
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

/// The trainer's regions pushed, in order (libraries such as Kokkos
/// Kernels push their own inside them).
std::vector<std::string> trainer_regions(const foxrl::AuditRecord& r) {
  std::vector<std::string> out;
  for (const auto& name : r.regions_pushed())
    if (name.rfind("foxrl::DqnTrainer::", 0) == 0) out.push_back(name);
  return out;
}

/// The trainer phase a launch ran in ("" if none).
std::string phase_of(const foxrl::AuditRecord::Launch& l) {
  for (const auto& r : l.regions)
    if (r.rfind("foxrl::DqnTrainer::", 0) == 0) return r;
  return "";
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
  const int rounds = GENERATE(1, 2);
  // The work that rides along in other launches (the clock's advance, the
  // replay's insert), all on or all off.
  const char* ride_along = GENERATE("1", "0");
  INFO("env " << env << ", " << rounds << " updates per iteration, riding along " << ride_along);
  const foxrl::test::ScopedEnvironment paths(
      "FOXRL_KERNEL_PATHS_OFF",
      std::string(ride_along) == "1" ? nullptr : "clock_in_update,insert_in_record,normalize_in_sample");
  auto config = audit_config(env);
  config.updates_per_iteration = rounds;
  // Prioritized and uniform replay (the clock rides along in the latter's
  // flat priority update only).
  config.per_alpha = GENERATE(0.6, 0.0);
  foxrl::DqnTrainer<Exec> trainer(config);
  const bool along = trainer.clock_in_priority_update();
  const bool insert_along = trainer.inserts_in_record();
  REQUIRE(along == (std::string(ride_along) == "1" && config.per_alpha == 0));
  // 8 envs: one team records a step, and one team inserts it.
  REQUIRE(insert_along == (std::string(ride_along) == "1"));
  const auto id = foxrl::tools_device_id(trainer.context().space());
  // Past learning_starts (and the n-step warm-up) before the audited one.
  while (trainer.global_step() < trainer.config().learning_starts) trainer.iterate();
  trainer.context().fence("test::warm");
  const auto updates_before = trainer.updates();

  const auto record = foxrl::audit([&] { trainer.iterate(); });
  CHECK(trainer.updates() == updates_before + rounds);
  // Kokkos Kernels' gemm (the blas dense backend on host backends) carries
  // its own labels; it must still run on the run's instance, which
  // violations() checks for every launch.
  std::vector<std::string> violations;
  for (const auto& v : record.violations(id))
    if (v.find("'KokkosBlas::") == std::string::npos) violations.push_back(v);
  INFO("violations: " << violations.size() << (violations.empty() ? "" : ", first: " + violations.front()));
  CHECK(violations.empty());
  // The iteration holds every stage (names from the components).
  // The epsilon-greedy choice runs inside the env's step launch, one
  // launch fewer than selecting first; on CUDA, CartPole's step of a few
  // envs runs inside the fused forward's launch, no Kokkos launch at all.
  const char* env_step = env == "cartpole" ? "foxrl::CartPole::step" : "foxrl::MarketEnv::step";
  const bool step_in_forward = env == "cartpole" && trainer.learner().fuses_env_step(config.num_envs);
  CHECK(launched(record, env_step) == !step_in_forward);
  CHECK_FALSE(launched(record, "foxrl::ActionSelector::select_from_greedy"));
  // 8 envs: the episode statistics and the n-step record are one launch.
  CHECK_FALSE(launched(record, "foxrl::NStep::record_step_and_emit"));
  CHECK_FALSE(launched(record, "foxrl::EpisodeStats::record"));
  for (const char* name :
       {"foxrl::Collector::record_step", "foxrl::Replay::sample", "foxrl::Replay::update_priorities"}) {
    INFO("launch " << name);
    CHECK(launched(record, name));
  }
  // The insert rides along in the record's launch, or takes one of its own.
  CHECK(launched(record, "foxrl::Replay::insert") == !insert_along);
  // The market's batch is normalised by the sample's gather, or in a pass
  // of its own after each sample.
  int batch_normalizations = 0;
  for (const auto& l : record.launches)
    if (l.name == "foxrl::SignalAdapter::normalize" && phase_of(l) == "foxrl::DqnTrainer::sample")
      ++batch_normalizations;
  CHECK(trainer.normalizes_in_sample() == (env == "market" && insert_along));
  CHECK(batch_normalizations == (env == "market" && !insert_along ? rounds : 0));
  CHECK_FALSE(launched(record, "foxrl::Collector::after_record"));
  // The clock's advance rides along in the last priority update's launch,
  // or takes one of its own.
  CHECK(launched(record, "foxrl::IterationClock::advance") == !along);
  // The last update's metrics go into the epoch sums inside the clock's
  // advance; an earlier update of the same iteration adds its own in the
  // update phase, before the next update overwrites them.
  int clock_launches = 0, metric_launches = 0;
  for (const auto& l : record.launches) {
    if (l.name == "foxrl::IterationClock::advance") ++clock_launches;
    if (l.name != "foxrl::DqnTrainer::accumulate_metrics") continue;
    ++metric_launches;
    CHECK(phase_of(l) == "foxrl::DqnTrainer::update");
  }
  CHECK(clock_launches == (along ? 0 : 1));
  CHECK(metric_launches == rounds - 1);
  // Nothing in an iteration waits for the device or allocates, its
  // profiling regions included (the global fences Kokkos 4 adds around
  // every callback of an attached tool exist only because a tool is
  // attached; the audit leaves them out).
  std::vector<std::string> phases{"foxrl::DqnTrainer::collect"};
  if (!insert_along) phases.push_back("foxrl::DqnTrainer::insert");
  for (int u = 0; u < rounds; ++u) {
    phases.push_back("foxrl::DqnTrainer::sample");
    phases.push_back("foxrl::DqnTrainer::update");
  }
  if (!along) phases.push_back("foxrl::DqnTrainer::clock");
  CHECK(trainer_regions(record) == phases);
  CHECK(record.fences.empty());
  CHECK(record.allocations.empty());
  // Nor does it copy a View: in the iteration's graph a copy is a node of
  // its own on the chain, as a launch is (the collector's env step keeps
  // the observations it acted on inside its own launch).
  std::string copies;
  for (const auto& c : record.copies) copies += " " + c.dst_label + " <- " + c.src_label;
  INFO("copies:" << copies);
  CHECK(record.copies.empty());
}

TEMPLATE_TEST_CASE("the trainer's profiling regions mark its phases in order, on the run's instance",
                   "[audit][trainer][regions]", FOXRL_TEST_SPACES) {
  using Exec = TestType;
  const std::string env = GENERATE(std::string("cartpole"), std::string("market"));
  const char* ride_along = GENERATE("1", "0");
  INFO("env " << env << ", riding along " << ride_along);
  const foxrl::test::ScopedEnvironment paths(
      "FOXRL_KERNEL_PATHS_OFF", std::string(ride_along) == "1" ? nullptr : "clock_in_update,insert_in_record");
  auto config = audit_config(env);
  config.iterations_per_epoch = 2;
  foxrl::DqnTrainer<Exec> trainer(config);
  const bool along = trainer.clock_in_priority_update();
  const bool insert_along = trainer.inserts_in_record();
  const auto id = foxrl::tools_device_id(trainer.context().space());
  while (trainer.global_step() < trainer.config().learning_starts) trainer.iterate();
  trainer.context().fence("test::warm");
  const auto updates_before = trainer.updates();

  const auto record = foxrl::audit([&] { trainer.run_epoch(); });
  REQUIRE(trainer.updates() == updates_before + 2);
  const std::string p = "foxrl::DqnTrainer::";
  std::vector<std::string> iteration = {p + "collect"};
  if (!insert_along) iteration.push_back(p + "insert");
  iteration.push_back(p + "sample");
  iteration.push_back(p + "update");
  if (!along) iteration.push_back(p + "clock");
  std::vector<std::string> expected = {p + "epoch_bookkeeping"};
  for (int it = 0; it < 2; ++it) expected.insert(expected.end(), iteration.begin(), iteration.end());
  expected.push_back(p + "epoch_bookkeeping");
  CHECK(trainer_regions(record) == expected);

  // Regions nest: every pop closes the region pushed last, none stays open.
  std::vector<std::string> open;
  bool nested = true;
  for (const auto& r : record.regions) {
    if (r.kind == foxrl::AuditRecord::RegionEvent::Kind::push) {
      open.push_back(r.name);
    } else {
      nested = nested && !open.empty() && open.back() == r.name;
      if (!open.empty()) open.pop_back();
    }
  }
  CHECK(nested);
  CHECK(open.empty());

  // Every launch runs on the run's instance, inside a phase, and the
  // components' kernels inside theirs.
  const auto off = record.launches_off(id);
  INFO("launches off the instance: " << off.size() << (off.empty() ? "" : ", first: " + off.front()));
  CHECK(off.empty());
  const auto fences_off = record.fences_off(id);
  CHECK(fences_off.empty());
  for (const auto& l : record.launches) {
    INFO("launch " << l.name);
    CHECK(phase_of(l) != "");
  }
  // CartPole's step has no launch of its own where the fused forward runs it.
  const bool step_in_forward = env == "cartpole" && trainer.learner().fuses_env_step(config.num_envs);
  const char* env_step = step_in_forward     ? "foxrl::Collector::record_step"
                         : env == "cartpole" ? "foxrl::CartPole::step"
                                             : "foxrl::MarketEnv::step";
  const std::pair<const char*, std::string> homes[] = {
      {env_step, p + "collect"},
      {"foxrl::Collector::record_step", p + "collect"},
      {insert_along ? "foxrl::Collector::record_step" : "foxrl::Replay::insert",
       insert_along ? p + "collect" : p + "insert"},
      {"foxrl::Replay::sample", p + "sample"},
      {"foxrl::Replay::update_priorities", p + "update"},
      {along ? "foxrl::Replay::update_priorities" : "foxrl::IterationClock::advance",
       along ? p + "update" : p + "clock"}};
  for (const auto& [kernel, region] : homes) {
    INFO("launch " << kernel << " in " << region);
    int found = 0;
    for (const auto& l : record.launches) {
      if (l.name != kernel) continue;
      ++found;
      CHECK(phase_of(l) == region);
    }
    CHECK(found > 0);
  }
}
