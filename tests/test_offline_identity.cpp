// The identity of an offline run: its checkpoint files (learner.safetensors,
// guard.safetensors) carry the run id and epoch of their manifest, which
// records the dataset's SHA-256; a resume or an eval refuses a file of
// another run or epoch, or another dataset at the dataset's path, naming
// the file and both values.
#include "core/error.hpp"
#include "core/execution_context.hpp"
#include "evaluate/collect_dataset.hpp"
#include "evaluate/evaluate_run.hpp"
#include "io/sha256.hpp"
#include "support/env_test_util.hpp"
#include "train/offline_manifest.hpp"
#include "train/offline_training_run.hpp"

#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <string>

namespace {

namespace fs = std::filesystem;

/// A random-policy CartPole dataset of 400 transitions at `path`.
void collect_cartpole(const std::string& path, std::uint64_t seed) {
  foxrl::ExecutionContext<> context(seed);
  foxrl::CollectOptions o;
  o.config.env = "cartpole";
  o.config.num_envs = 4;
  o.config.seed = seed;
  o.transitions = 400;
  o.out_path = path;
  foxrl::collect_dataset(context.space(), o);
}

/// A small, quick IQL run on `dataset` into `out_dir`.
foxrl::OfflineTrainConfig small_run(const std::string& dataset, const std::string& out_dir, std::int64_t epochs) {
  foxrl::OfflineTrainConfig c;
  c.dataset = dataset;
  c.out_dir = out_dir;
  c.hidden = {16, 8};
  c.batch_size = 32;
  c.updates_per_epoch = 10;
  c.eval_episodes = 2;
  c.epochs = epochs;
  c.keep_checkpoints = 3;
  return c;
}

std::string generation(const std::string& out_dir, int epoch) {
  char name[32];
  std::snprintf(name, sizeof name, "epoch-%08d", epoch);
  return out_dir + "/checkpoints/" + name;
}

/// The message of the UsageError a resume of `config` throws ("" if none).
std::string resume_error(foxrl::OfflineTrainConfig config) {
  try {
    foxrl::OfflineTrainingRun(config, true).run();
  } catch (const foxrl::UsageError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("offline checkpoint: the manifest records the run id and the dataset's SHA-256, the files the identity",
          "[offline][identity]") {
  foxrl::test::TempDir dir;
  const std::string data = dir.file("data.safetensors");
  collect_cartpole(data, 7);
  const std::string out = dir.file("run");
  { foxrl::OfflineTrainingRun(small_run(data, out, 1)).run(); }
  const foxrl::OfflineManifest m = foxrl::OfflineManifest::read(generation(out, 1));
  CHECK(m.dataset_sha256 == foxrl::sha256_file_hex(data));
  CHECK(m.identity.run_id.size() >= 1);
  CHECK(m.identity.epoch == 1);
  for (const char* file : {foxrl::OfflineManifest::learner_file, foxrl::OfflineManifest::guard_file}) {
    const auto f = foxrl::safetensors::read(generation(out, 1) + "/" + file);
    CHECK(f.metadata.at("foxrl.run_id") == m.identity.run_id);
    CHECK(f.metadata.at("foxrl.epoch") == "1");
    CHECK(f.metadata_checksummed);
  }
}

TEST_CASE("offline resume: a learner.safetensors of another run is refused naming the file and both ids",
          "[offline][identity]") {
  foxrl::test::TempDir dir;
  const std::string data = dir.file("data.safetensors");
  collect_cartpole(data, 7);
  const std::string a = dir.file("a"), b = dir.file("b");
  { foxrl::OfflineTrainingRun(small_run(data, a, 1)).run(); }
  { foxrl::OfflineTrainingRun(small_run(data, b, 1)).run(); }
  const std::string id_a = foxrl::OfflineManifest::read(generation(a, 1)).identity.run_id;
  const std::string id_b = foxrl::OfflineManifest::read(generation(b, 1)).identity.run_id;
  REQUIRE(id_a != id_b);
  const std::string learner = generation(a, 1) + "/" + foxrl::OfflineManifest::learner_file;
  fs::copy_file(generation(b, 1) + "/" + foxrl::OfflineManifest::learner_file, learner,
                fs::copy_options::overwrite_existing);
  const std::string message = resume_error(small_run(data, a, 2));
  INFO(message);
  CHECK_THAT(message, Catch::Contains(learner) && Catch::Contains("another run") && Catch::Contains(id_a) &&
                          Catch::Contains(id_b));
  CHECK(fs::exists(learner));  // nothing set aside: no generation loaded
}

TEST_CASE("offline resume: a guard.safetensors of another epoch is refused naming the file and both epochs",
          "[offline][identity]") {
  foxrl::test::TempDir dir;
  const std::string data = dir.file("data.safetensors");
  collect_cartpole(data, 7);
  const std::string out = dir.file("run");
  { foxrl::OfflineTrainingRun(small_run(data, out, 2)).run(); }
  const std::string guard = generation(out, 2) + "/" + foxrl::OfflineManifest::guard_file;
  fs::copy_file(generation(out, 1) + "/" + foxrl::OfflineManifest::guard_file, guard,
                fs::copy_options::overwrite_existing);
  fs::remove_all(generation(out, 1));
  const std::string message = resume_error(small_run(data, out, 3));
  INFO(message);
  CHECK_THAT(message, Catch::Contains(guard) && Catch::Contains("epoch 1") && Catch::Contains("epoch 2"));
}

TEST_CASE("offline resume: another dataset of the same size at the path is refused naming the path and both hashes",
          "[offline][identity]") {
  foxrl::test::TempDir dir;
  const std::string data = dir.file("data.safetensors");
  collect_cartpole(data, 7);
  const std::string trained_on = foxrl::sha256_file_hex(data);
  const std::string out = dir.file("run");
  { foxrl::OfflineTrainingRun(small_run(data, out, 1)).run(); }
  collect_cartpole(data, 8);  // the same size, other transitions
  const std::string now = foxrl::sha256_file_hex(data);
  REQUIRE(now != trained_on);
  const std::string message = resume_error(small_run(data, out, 2));
  INFO(message);
  CHECK_THAT(message, Catch::Contains(data) && Catch::Contains(trained_on) && Catch::Contains(now));
}

TEST_CASE("offline eval: another dataset of the same size at the path is refused naming the path and both hashes",
          "[offline][identity]") {
  foxrl::test::TempDir dir;
  const std::string data = dir.file("data.safetensors");
  collect_cartpole(data, 7);
  const std::string trained_on = foxrl::sha256_file_hex(data);
  const std::string out = dir.file("run");
  { foxrl::OfflineTrainingRun(small_run(data, out, 1)).run(); }
  collect_cartpole(data, 8);
  const std::string now = foxrl::sha256_file_hex(data);
  foxrl::EvaluateOptions options;
  options.run_dir = generation(out, 1);
  options.episodes = 2;
  std::string message;
  try {
    foxrl::evaluate_run(options);
  } catch (const foxrl::UsageError& e) {
    message = e.what();
  }
  INFO(message);
  CHECK_THAT(message, Catch::Contains(data) && Catch::Contains(trained_on) && Catch::Contains(now));
}
