// Studies killed at any point resume to the uninterrupted result (issue 50,
// findings 1, 2 and 7): a seed study or walk-forward interrupted by an
// observer that throws (as a kill stops it, after its manifest and before
// a checkpoint) resumes with the config its study_manifest.json recorded,
// not the defaults, and refuses a command line that asks for another
// study; a seed whose evaluation files are missing or damaged is evaluated
// again; a second process is refused by the study's lock; stale
// temporaries and a generation a kill left beyond keep_checkpoints are
// removed; a walk-forward keeps its finished folds and resumes the rest.
#include "core/error.hpp"
#include "study/seed_study.hpp"
#include "study/train_request.hpp"
#include "study/walk_forward.hpp"
#include "support/scoped_environment.hpp"
#include "support/tiny_trainer_config.hpp"
#include "train/checkpoint_store.hpp"
#include "train/training_run.hpp"

#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;

std::string scratch_dir(const std::string& name) {
  const auto dir = fs::temp_directory_path() / ("foxrl_study_resume_" + std::to_string(::getpid()) + "_" + name);
  fs::remove_all(dir);
  return dir.string();
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

/// What a kill does to a study, for a test: the study stops at the first
/// log line that contains `at` (nothing after it is written).
struct Killed : std::runtime_error {
  Killed() : std::runtime_error("killed") {}
};

/// Collects the log; stops the study at a line containing `stop_at`, and at
/// the opening line of a run that is not of the tiny config (4 envs): a
/// resume that fell back to the defaults (64 envs) would train for minutes.
struct Lines : foxrl::TrainingObserver {
  std::string stop_at;
  std::string text;
  void on_log(const std::string& line) override {
    text += line + "\n";
    if (!stop_at.empty() && line.find(stop_at) != std::string::npos) throw Killed();
    if (line.rfind("foxrl ", 0) == 0 && line.find(" train: ") != std::string::npos &&
        line.find(", 4 envs,") == std::string::npos)
      throw std::runtime_error("a run of another config: " + line);
  }
};

std::string usage_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const foxrl::UsageError& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("(not a usage error) ") + e.what();
  }
  return "(no error)";
}

foxrl::SeedStudyOptions options(bool resume = false, bool overwrite = false) {
  foxrl::SeedStudyOptions o;
  o.seeds = {1, 2};
  o.resume = resume;
  o.overwrite = overwrite;
  o.bootstrap.resamples = 300;
  return o;
}

void run_study(const foxrl::TrainConfig& config, const foxrl::SeedStudyOptions& o, Lines& lines) {
  foxrl::SeedStudy study({config, {}, false}, o);
  study.add_observer(lines);
  study.run();
}

/// `foxrl train --seeds 1,2 --resume --set out_dir=<dir>` (plus `overrides`):
/// no --config.
void resume_from_command_line(const std::string& dir, std::vector<std::string> overrides, Lines& lines,
                              const std::string& seeds = "1,2") {
  foxrl::TrainRequest request;
  overrides.push_back("out_dir=" + dir);
  request.overrides = overrides;
  request.start = foxrl::RunStart::resume;
  request.seeds = seeds;
  request.bootstrap = options().bootstrap;
  foxrl::run_train_request(request, lines);
}

/// The pid of a process that has ended (a child that exited at once).
long ended_pid() {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  int status = 0;
  ::waitpid(child, &status, 0);
  return child;
}

foxrl::TrainConfig tiny_market(const std::string& out_dir) {
  return foxrl::test::tiny_trainer_config("market", out_dir, 1);
}

}  // namespace

TEST_CASE("a seed study killed before its first checkpoint resumes with its recorded config, not the defaults",
          "[study_resume]") {
  const foxrl::test::ScopedEnvironment run_id("FOXRL_RUN_ID", "study-resume-test");
  const std::string ref = scratch_dir("config_ref"), dir = scratch_dir("config");
  Lines reference;
  run_study(tiny_market(ref), options(), reference);

  Lines killed;
  killed.stop_at = "=== seed 1 (1 of 2)";
  CHECK_THROWS_AS(run_study(tiny_market(dir), options(), killed), Killed);
  CHECK(foxrl::CheckpointStore(dir + "/seed_1").generations().empty());
  // The plan was recorded before the first seed started.
  const std::string manifest = read_bytes(dir + "/study_manifest.json");
  CHECK_THAT(manifest, Contains("\"seeds\": [\n    1,\n    2\n  ]") && Contains("\"num_envs\": 4"));

  // The README's resume, without --config: the recorded config.
  Lines resumed;
  resume_from_command_line(dir, {}, resumed);
  CHECK_THAT(resumed.text, Contains("=== seed 1 (1 of 2): training") && Contains(", 4 envs, seed 2"));
  CHECK(read_bytes(dir + "/study.json") == read_bytes(ref + "/study.json"));
  for (const char* file : {"seed_1/checkpoints/epoch-00000001/checkpoint.safetensors",
                           "seed_2/checkpoints/epoch-00000001/trainer_state.safetensors", "seed_2/evaluation.json",
                           "seed_1/evaluation_best_backtest.csv"}) {
    INFO(file);
    CHECK(read_bytes(dir + "/" + file) == read_bytes(ref + "/" + file));
  }
  // `foxrl train --resume --set out_dir=<dir>` alone continues the study.
  {
    Lines again;
    foxrl::TrainRequest request;
    request.overrides = {"out_dir=" + dir};
    request.start = foxrl::RunStart::resume;
    request.bootstrap = options().bootstrap;
    foxrl::run_train_request(request, again);
    CHECK_THAT(again.text, Contains("seed 2 (2 of 2): complete"));
  }
  fs::remove_all(ref);
  fs::remove_all(dir);
}

TEST_CASE("a resumed seed study refuses another config or other seeds, naming the key", "[study_resume]") {
  const std::string dir = scratch_dir("refuse");
  Lines killed;
  killed.stop_at = "=== seed 1 (1 of 2)";
  CHECK_THROWS_AS(run_study(tiny_market(dir), options(), killed), Killed);
  const std::string manifest = read_bytes(dir + "/study_manifest.json");
  Lines lines;
  CHECK_THAT(usage_error_of([&] { resume_from_command_line(dir, {"num_envs=8"}, lines); }),
             Contains("config key 'num_envs'") && Contains(dir + "/study_manifest.json"));
  CHECK_THAT(usage_error_of([&] { resume_from_command_line(dir, {}, lines, "2,1"); }),
             Contains("field 'seeds'") && Contains("--seeds 1,2"));
  // A fresh start (no --resume, no --overwrite) is refused too.
  CHECK_THAT(usage_error_of([&] { run_study(tiny_market(dir), options(), lines); }),
             Contains("already holds a seed study") && Contains("study_manifest.json"));
  CHECK(read_bytes(dir + "/study_manifest.json") == manifest);
  CHECK(foxrl::CheckpointStore(dir + "/seed_1").generations().empty());
  fs::remove_all(dir);
}

TEST_CASE("a seed study whose evaluation files are missing or damaged evaluates the seed again", "[study_resume]") {
  const std::string dir = scratch_dir("evaluation");
  Lines first;
  run_study(tiny_market(dir), options(), first);
  const std::string study = read_bytes(dir + "/study.json");
  const std::string best = read_bytes(dir + "/seed_2/evaluation_best_backtest.csv");
  const std::string last = read_bytes(dir + "/seed_1/evaluation_backtest.csv");
  // Killed while seed 2 wrote its best weights' backtest; seed 1's backtest
  // cut short.
  fs::remove(dir + "/seed_2/evaluation_best_backtest.csv");
  { std::ofstream(dir + "/seed_1/evaluation_backtest.csv", std::ios::binary) << last.substr(0, last.size() / 2); }
  Lines resumed;
  run_study(tiny_market(dir), options(true), resumed);
  CHECK_THAT(resumed.text, Contains("seed 1 (1 of 2): resuming from its checkpoint of epoch 1") &&
                               Contains("seed 2 (2 of 2): resuming from its checkpoint of epoch 1"));
  CHECK(read_bytes(dir + "/seed_2/evaluation_best_backtest.csv") == best);
  CHECK(read_bytes(dir + "/seed_1/evaluation_backtest.csv") == last);
  CHECK(read_bytes(dir + "/study.json") == study);
  fs::remove_all(dir);
}

TEST_CASE("a study holds a lock on its directory: a second study there is refused naming the holder's pid",
          "[study_resume]") {
  const std::string dir = scratch_dir("lock");
  fs::create_directories(dir);
  {
    // What a running study holds: an flock on out_dir.
    const foxrl::RunDirectoryLock holder(dir);
    Lines lines;
    for (const bool overwrite : {false, true}) {
      CHECK_THAT(usage_error_of([&] { run_study(tiny_market(dir), options(false, overwrite), lines); }),
                 Contains("'" + dir + "' is in use by process " + std::to_string(::getpid())));
    }
    CHECK(fs::is_empty(dir));
  }
  fs::remove_all(dir);
}

TEST_CASE("a resumed study removes stale temporaries and a generation a kill left beyond keep_checkpoints",
          "[study_resume]") {
  const std::string dir = scratch_dir("tidy");
  auto config = tiny_market(dir);
  config.keep_checkpoints = 1;
  Lines first;
  run_study(config, options(), first);
  const std::string generation = dir + "/seed_1/checkpoints/epoch-00000001";
  // Killed between publishing a generation and pruning the older one.
  fs::copy(generation, dir + "/seed_1/checkpoints/epoch-00000000");
  const std::string dead = std::to_string(ended_pid()), alive = std::to_string(::getppid());
  const std::vector<std::string> stale = {
      "study.json.tmp." + dead,           "study_manifest.json.tmp." + dead,
      ".foxrl-write-test." + dead,        "seed_1/config.json.tmp." + dead,
      "seed_2/.foxrl-write-test." + dead, "seed_2/checkpoints/.staging-epoch-00000002." + dead};
  for (const auto& name : stale) {
    if (name.find(".staging-") != std::string::npos) {
      fs::create_directories(dir + "/" + name);
    } else {
      std::ofstream(dir + "/" + name) << "partial";
    }
  }
  const std::string live = dir + "/walk_forward.json.tmp." + alive;  // a live process's: kept
  std::ofstream(live) << "being written";
  Lines resumed;
  run_study(config, options(true), resumed);
  for (const auto& name : stale) {
    INFO(name);
    CHECK_FALSE(fs::exists(dir + "/" + name));
  }
  CHECK(fs::exists(live));
  CHECK_FALSE(fs::exists(dir + "/seed_1/checkpoints/epoch-00000000"));
  CHECK(fs::exists(generation));
  fs::remove_all(dir);
}

TEST_CASE("a walk-forward killed in its second fold resumes fold by fold to the uninterrupted result",
          "[study_resume]") {
  const foxrl::test::ScopedEnvironment run_id("FOXRL_RUN_ID", "walk-forward-resume-test");
  const std::string ref = scratch_dir("wf_ref"), dir = scratch_dir("wf");
  const auto spec = foxrl::parse_walk_forward_spec("train=600,test=300,step=300");
  const auto config = [](const std::string& out_dir) {
    auto c = tiny_market(out_dir);
    c.synthetic_bars = 1200;
    return c;
  };
  Lines reference;
  foxrl::run_walk_forward(foxrl::plan_walk_forward(config(ref), spec), reference);

  Lines killed;
  killed.stop_at = "walk-forward fold 2 of 2";
  CHECK_THROWS_AS(foxrl::run_walk_forward(foxrl::plan_walk_forward(config(dir), spec), killed), Killed);
  const std::string fold_0_log = read_bytes(dir + "/fold_0/train.log");

  // A resume that asks for another walk-forward is refused, naming it.
  Lines lines;
  foxrl::TrainRequest request;
  request.overrides = {"out_dir=" + dir};
  request.start = foxrl::RunStart::resume;
  request.walk_forward = "train=600,test=300,step=200";
  CHECK_THAT(usage_error_of([&] { foxrl::run_train_request(request, lines); }),
             Contains("field 'walk_forward'") && Contains("train=600,test=300,step=300"));
  request.walk_forward = spec.text();
  request.overrides.push_back("seed=3");
  CHECK_THAT(usage_error_of([&] { foxrl::run_train_request(request, lines); }), Contains("config key 'seed'"));

  // `foxrl train --walk-forward ... --resume --set out_dir=<dir>`.
  request.overrides.pop_back();
  Lines resumed;
  foxrl::run_train_request(request, resumed);
  CHECK_THAT(resumed.text,
             Contains("fold 0: complete (checkpoint of epoch 1, evaluated)") && Contains("walk-forward fold 2 of 2"));
  CHECK(read_bytes(dir + "/fold_0/train.log") == fold_0_log);  // kept as it was
  for (const char* file : {"walk_forward.json", "walk_forward_backtest.csv", "walk_forward_equity.svg",
                           "fold_1/evaluation.json", "fold_1/checkpoints/epoch-00000001/checkpoint.safetensors"}) {
    INFO(file);
    CHECK(read_bytes(dir + "/" + file) == read_bytes(ref + "/" + file));
  }
  fs::remove_all(ref);
  fs::remove_all(dir);
}

TEST_CASE("a resumed run removes the write probes of killed runs and a generation beyond keep_checkpoints",
          "[study_resume]") {
  const std::string dir = scratch_dir("single_run");
  auto config = tiny_market(dir);
  config.keep_checkpoints = 1;
  {
    foxrl::TrainingRun run(config);
    run.run();
  }
  // Killed between publishing epoch 1 and pruning the generation before it;
  // another attempt killed while it probed the directory.
  fs::copy(dir + "/checkpoints/epoch-00000001", dir + "/checkpoints/epoch-00000000");
  const std::string probe = dir + "/.foxrl-write-test." + std::to_string(ended_pid());
  std::ofstream(probe).close();
  {
    foxrl::TrainingRun run(config, foxrl::RunStart::resume);
    run.run();
  }
  CHECK_FALSE(fs::exists(probe));
  CHECK_FALSE(fs::exists(dir + "/checkpoints/epoch-00000000"));
  CHECK(fs::exists(dir + "/checkpoints/epoch-00000001/checkpoint.json"));
  fs::remove_all(dir);
}

TEST_CASE("a resumed run with no epoch left removes a best model that its kept checkpoints no longer name",
          "[study_resume]") {
  const std::string dir = scratch_dir("single_run_best");
  auto config = tiny_market(dir);
  config.keep_checkpoints = 1;
  {
    foxrl::TrainingRun run(config);
    run.run();
  }
  const auto best = foxrl::CheckpointStore(dir, "best").generations();
  REQUIRE(best.size() == 1);
  // Killed after publishing the last checkpoint and before pruning the best
  // model it replaced: an older best model that no kept checkpoint names.
  const std::string stale = dir + "/best/epoch-00000000";
  fs::copy(best.front().path, stale);
  {
    foxrl::TrainingRun run(config, foxrl::RunStart::resume);
    run.run();
  }
  CHECK_FALSE(fs::exists(stale));
  CHECK(fs::exists(best.front().path + "/best.json"));
  fs::remove_all(dir);
}
