// TrainingRun from the library: a tiny CartPole run writes the metrics
// records, checkpoint and trainer state `foxrl train` writes for the same
// config, and its observers see every log line and epoch record; a resumed
// run truncates metrics.jsonl to its checkpoint.
#include "train/training_run.hpp"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

std::string scratch_dir(const std::string& name) {
  const auto dir = fs::temp_directory_path() / ("foxrl_training_run_" + std::to_string(::getpid()) + "_" + name);
  fs::remove_all(dir);
  return dir.string();
}

/// --set arguments of the run, also applied to the library's config.
const std::vector<std::string> tiny_run = {"env=cartpole",
                                           "num_envs=4",
                                           "hidden=32",
                                           "batch_size=32",
                                           "buffer_capacity=256",
                                           "learning_starts=64",
                                           "iterations_per_epoch=40",
                                           "seed=3",
                                           "epochs=3",
                                           "checkpoint_every=2"};

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

/// metrics.jsonl without the wall-clock fields (as tests/check_resume.cmake).
std::string records(const std::string& dir) {
  static const std::regex wall_clock("\"(seconds|env_steps_per_s|updates_per_s)\":[^,}]*,?");
  return std::regex_replace(read_bytes(dir + "/metrics.jsonl"), wall_clock, "");
}

struct Recorder : foxrl::TrainingObserver {
  std::vector<std::string> lines;
  std::vector<foxrl::EpochRecord> epochs;
  void on_log(const std::string& line) override { lines.push_back(line); }
  void on_epoch(const foxrl::EpochRecord& record) override { epochs.push_back(record); }
};

/// The checkpoint generation of `epoch` in the run directory `dir`.
std::string generation(const std::string& dir, int epoch) {
  char name[32];
  std::snprintf(name, sizeof name, "/checkpoints/epoch-%08d", epoch);
  return dir + name;
}

/// Runs compared byte for byte share one run id (it is in every file).
void same_run_id_for_every_run() { ::setenv("FOXRL_RUN_ID", "training-run-test", 1); }

foxrl::TrainConfig tiny_config(const std::string& out_dir) {
  foxrl::TrainConfig c;
  c.apply_overrides(tiny_run);
  c.out_dir = out_dir;
  return c;
}

}  // namespace

TEST_CASE("a TrainingRun from the library writes what foxrl train writes", "[training_run]") {
  same_run_id_for_every_run();
  const std::string lib = scratch_dir("library");
  Recorder recorder;
  foxrl::TrainingSummary summary;
  {
    foxrl::TrainingRun run(tiny_config(lib));
    run.add_observer(recorder);
    summary = run.run();
  }
  REQUIRE(summary.epochs.size() == 3);
  CHECK_FALSE(summary.solved);
  CHECK_FALSE(summary.evaluation.has_value());
  REQUIRE(recorder.epochs.size() == 3);
  for (int e = 0; e < 3; ++e) {
    CHECK(recorder.epochs[static_cast<std::size_t>(e)].epoch == e + 1);
    CHECK(foxrl::epoch_json(recorder.epochs[static_cast<std::size_t>(e)]) ==
          foxrl::epoch_json(summary.epochs[static_cast<std::size_t>(e)]));
  }
  // train.log holds the observed lines, one per line.
  std::string observed;
  for (const auto& l : recorder.lines) observed += l + "\n";
  CHECK(read_bytes(lib + "/train.log") == observed);
  CHECK_THAT(observed, Catch::Contains("Epoch 3 complete") && Catch::Contains("outputs in " + lib));
  for (const char* f : {"checkpoint.safetensors", "checkpoint.json", "trainer_state.safetensors"}) {
    INFO(f);
    CHECK(fs::exists(generation(lib, 3) + "/" + f));
    CHECK(fs::exists(generation(lib, 2) + "/" + f));  // keep_checkpoints = 2
  }
  for (const char* f : {"config.json", "learning_curve_return.svg", "learning_curve_loss.svg"}) {
    INFO(f);
    CHECK(fs::exists(lib + "/" + f));
  }

#ifdef FOXRL_CLI_PATH
  const std::string cli = scratch_dir("cli");
  std::string command = std::string("\"") + FOXRL_CLI_PATH + "\" train";
  for (const auto& kv : tiny_run) command += " --set " + kv;
  command += " --set out_dir=" + cli + " > " + cli + ".out 2>&1";
  REQUIRE(std::system(command.c_str()) == 0);
  CHECK(records(lib) == records(cli));
  for (const char* f : {"checkpoint.safetensors", "trainer_state.safetensors"}) {
    INFO(f);
    CHECK(read_bytes(generation(lib, 3) + "/" + f) == read_bytes(generation(cli, 3) + "/" + f));
  }
  // The CLI prints the run's log: its lines are train.log's.
  CHECK_THAT(read_bytes(cli + ".out"), Catch::Contains(read_bytes(cli + "/train.log")));
  fs::remove_all(cli);
  fs::remove(cli + ".out");
#else
  WARN("foxrl_cli is not built: the comparison with `foxrl train` did not run");
#endif
  fs::remove_all(lib);
}

TEST_CASE("a resumed TrainingRun drops metrics after its checkpoint and continues bit for bit",
          "[training_run][resume]") {
  same_run_id_for_every_run();
  const std::string whole = scratch_dir("whole"), split = scratch_dir("split");
  {
    foxrl::TrainingRun run(tiny_config(whole));
    run.run();
  }
  {
    // checkpoint_every = 2: after 3 epochs the last checkpoint is epoch 3 (the
    // last epoch); a run of 2 epochs checkpoints epoch 2.
    auto c = tiny_config(split);
    c.epochs = 2;
    foxrl::TrainingRun run(c);
    run.run();
  }
  // An interrupted third epoch left a record after the checkpoint.
  {
    std::ofstream metrics(split + "/metrics.jsonl", std::ios::app);
    metrics << "{\"epoch\": 3, \"loss\": 1.0}\n";
  }
  Recorder recorder;
  {
    foxrl::TrainingRun run(tiny_config(split), /*resume=*/true);
    run.add_observer(recorder);
    const auto summary = run.run();
    CHECK(summary.epochs.size() == 3);  // two kept, one new
  }
  REQUIRE(recorder.epochs.size() == 1);
  CHECK(recorder.epochs[0].epoch == 3);
  CHECK_THAT(recorder.lines.at(1), Catch::Contains("resumed from the checkpoint of epoch 2"));
  CHECK(records(whole) == records(split));
  for (const char* f : {"checkpoint.safetensors", "trainer_state.safetensors"}) {
    INFO(f);
    CHECK(read_bytes(generation(whole, 3) + "/" + f) == read_bytes(generation(split, 3) + "/" + f));
  }

  // A changed key is refused before anything is written.
  auto changed = tiny_config(split);
  changed.gamma = 0.9;
  foxrl::TrainingRun refused(changed, /*resume=*/true);
  CHECK_THROWS_AS(refused.run(), foxrl::UsageError);
  fs::remove_all(whole);
  fs::remove_all(split);
}

TEST_CASE("a fresh TrainingRun refuses a directory that holds a run, and overwrite replaces it", "[training_run]") {
  const std::string dir = scratch_dir("occupied");
  {
    foxrl::TrainingRun run(tiny_config(dir));
    run.run();
  }
  const std::string first_log = read_bytes(dir + "/train.log");
  const std::string first_records = records(dir);
  // A second fresh run would append to train.log and metrics.jsonl and
  // replace the checkpoint: refused before anything is written.
  std::string message;
  try {
    foxrl::TrainingRun again(tiny_config(dir));
    again.run();
  } catch (const foxrl::UsageError& e) {
    message = e.what();
  }
  CHECK_THAT(message, Catch::Contains(dir) && Catch::Contains("--resume") && Catch::Contains("--overwrite"));
  CHECK(read_bytes(dir + "/train.log") == first_log);
  // A file that is not the run's stays; the run's files are replaced.
  std::ofstream(dir + "/notes.txt") << "mine\n";
  {
    foxrl::TrainingRun replace(tiny_config(dir), /*resume=*/false, /*overwrite=*/true);
    replace.run();
  }
  // The same run again, not appended to the first: the same records, and
  // train.log with one "Epoch 3 complete".
  CHECK(records(dir) == first_records);
  const std::string log = read_bytes(dir + "/train.log");
  CHECK(log.find("Epoch 3 complete") != std::string::npos);
  CHECK(log.find("Epoch 3 complete") == log.rfind("Epoch 3 complete"));
  CHECK(read_bytes(dir + "/notes.txt") == "mine\n");
  CHECK_THROWS_AS(foxrl::TrainingRun(tiny_config(dir), true, true), foxrl::UsageError);
  fs::remove_all(dir);
}
