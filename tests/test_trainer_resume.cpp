// Resume: 1 epoch + checkpoint + resume + 1 epoch is the 2-epoch run, bit
// for bit (learner checkpoint, trainer state, epoch metrics), on the host
// backend for CartPole and the market; and a damaged or mismatched run
// directory is refused with a message naming the file, tensor or key.
#include "core/error.hpp"
#include "io/safetensors.hpp"
#include "train/online_trainer.hpp"

#include "support/same_checkpoint.hpp"
#include "support/tiny_trainer_config.hpp"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace {

using Exec = Kokkos::DefaultHostExecutionSpace;
using Trainer = foxrl::DqnTrainer<Exec>;
namespace fs = std::filesystem;

std::string scratch_dir(const std::string& name) {
  const auto dir = fs::temp_directory_path() / ("foxrl_resume_" + std::to_string(::getpid()) + "_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

/// A run small enough for a unit test that still wraps the replay ring,
/// evicts boundary rows, copies the target and crosses learning_starts in
/// the first epoch.
foxrl::TrainConfig tiny_config(const std::string& env, const std::string& out_dir, std::int64_t epochs) {
  return foxrl::test::tiny_trainer_config(env, out_dir, epochs);
}

using foxrl::test::read_bytes;

void check_same_epoch(const foxrl::EpochRecord& a, const foxrl::EpochRecord& b) {
  // Everything but the wall-clock fields (seconds and the rates).
  CHECK(a.epoch == b.epoch);
  CHECK(a.env_steps == b.env_steps);
  CHECK(a.experiences == b.experiences);
  CHECK(a.updates == b.updates);
  CHECK(a.loss == b.loss);
  CHECK(a.mean_q == b.mean_q);
  CHECK(a.td_error == b.td_error);
  CHECK(a.grad_norm == b.grad_norm);
  CHECK(a.epsilon == b.epsilon);
  CHECK(a.beta == b.beta);
  CHECK(a.episodes == b.episodes);
  CHECK(a.mean_return_last_100 == b.mean_return_last_100);
}

/// Runs 1 epoch into `dir` and checkpoints it.
void one_epoch_run(const std::string& env, const std::string& dir) {
  Trainer t(tiny_config(env, dir, 1));
  t.run_epoch();
  t.save_checkpoint(dir);
}

}  // namespace

TEST_CASE("resumed run matches the uninterrupted run bit for bit", "[resume]") {
  const std::string env = GENERATE(std::string("cartpole"), std::string("market"));
  // n_step 1: the collector's n-step ring is the env step's own buffers
  // (NStepAccumulator::alias_one_step), so resuming writes the saved ring
  // through them.
  const std::int64_t n_step = GENERATE(3, 1);
  INFO("env " << env << ", n_step " << n_step);
  const std::string tag = env + "_n" + std::to_string(n_step);
  const std::string whole = scratch_dir(tag + "_whole"), split = scratch_dir(tag + "_split");
  const auto config = [&](const std::string& dir, std::int64_t epochs) {
    auto c = tiny_config(env, dir, epochs);
    c.n_step = n_step;
    return c;
  };

  foxrl::EpochRecord whole_1, whole_2;
  {
    Trainer t(config(whole, 2));
    t.set_run_id("resume-test");  // the id is in every file, compared byte for byte
    whole_1 = t.run_epoch();
    whole_2 = t.run_epoch();
    REQUIRE(whole_1.updates > 0);  // learning started in the first epoch
    t.save_checkpoint(whole);
  }
  foxrl::EpochRecord split_1, split_2;
  {
    Trainer t(config(split, 1));
    t.set_run_id("resume-test");
    split_1 = t.run_epoch();
    t.save_checkpoint(split);
  }
  {
    Trainer t(config(split, 2));
    t.resume(split);
    CHECK(t.collector().nstep().aliases_step() == (n_step == 1));
    CHECK(t.run_id() == "resume-test");  // the checkpoint's
    CHECK(t.epoch() == 1);
    CHECK(t.updates() == split_1.updates);
    split_2 = t.run_epoch();
    t.save_checkpoint(split);
  }
  check_same_epoch(whole_1, split_1);
  check_same_epoch(whole_2, split_2);
  foxrl::test::check_same_checkpoint(whole, split);
  fs::remove_all(whole);
  fs::remove_all(split);
}

TEST_CASE("resume refuses missing, damaged and mismatched checkpoints", "[resume]") {
  const std::string dir = scratch_dir("errors");
  one_epoch_run("cartpole", dir);
  const std::string state = dir + "/" + foxrl::trainer_state_file;
  const std::string saved = read_bytes(state);
  auto restore = [&] { std::ofstream(state, std::ios::binary | std::ios::trunc) << saved; };

  SECTION("config key changed") {
    auto c = tiny_config("cartpole", dir, 2);
    c.gamma = 0.9;
    Trainer t(c);
    CHECK_THROWS_AS(t.resume(dir), foxrl::UsageError);
    CHECK_THROWS_WITH(t.resume(dir), Catch::Contains("'gamma'"));
  }
  SECTION("epochs grow") {
    Trainer t(tiny_config("cartpole", dir, 5));
    CHECK_NOTHROW(t.resume(dir));
  }
  SECTION("missing trainer state") {
    fs::remove(state);
    Trainer t(tiny_config("cartpole", dir, 2));
    CHECK_THROWS_WITH(t.resume(dir), Catch::Contains(state));
    restore();
  }
  SECTION("truncated trainer state") {
    std::ofstream(state, std::ios::binary | std::ios::trunc) << saved.substr(0, saved.size() / 2);
    Trainer t(tiny_config("cartpole", dir, 2));
    CHECK_THROWS_WITH(t.resume(dir), Catch::Contains(state));
    restore();
  }
  SECTION("tensor missing or of the wrong shape") {
    auto file = foxrl::safetensors::read(state);
    const std::string victim = GENERATE(std::string("replay.tree"), std::string("episodes.ring"));
    for (auto it = file.tensors.begin(); it != file.tensors.end(); ++it) {
      if (it->name != victim) continue;
      if (victim == "replay.tree") {
        file.tensors.erase(it);
      } else {
        const std::vector<float> shorter(7, 0.0f);
        *it = foxrl::safetensors::make_f32(victim, {7}, shorter.data());
      }
      break;
    }
    foxrl::safetensors::write(state, file);
    Trainer t(tiny_config("cartpole", dir, 2));
    CHECK_THROWS_WITH(t.resume(dir), Catch::Contains(state) && Catch::Contains("'" + victim + "'"));
    restore();
  }
  SECTION("files of another epoch or another run") {
    // A later trainer state (of the same run, or of another) beside the
    // epoch-1 learner checkpoint.
    const bool same_run = GENERATE(true, false);
    const std::string other = scratch_dir("errors_other");
    {
      Trainer t(tiny_config("cartpole", other, 2));
      t.set_run_id(same_run ? foxrl::RunManifest::read(dir).identity.run_id : std::string("another-run"));
      t.run_epoch();
      t.run_epoch();
      t.save_checkpoint(other);
    }
    for (const char* f : {foxrl::trainer_state_file, "checkpoint.safetensors"}) {
      INFO(f);
      fs::copy_file(other + "/" + f, dir + "/" + f, fs::copy_options::overwrite_existing);
      Trainer t(tiny_config("cartpole", dir, 2));
      CHECK_THROWS_AS(t.resume(dir), foxrl::UsageError);
      CHECK_THROWS_WITH(t.resume(dir), Catch::Contains(dir + "/" + f) &&
                                           Catch::Contains(same_run ? "from the checkpoint of epoch 2, not of epoch 1"
                                                                    : "from another run"));
      restore();
    }
    fs::remove_all(other);
  }
  SECTION("a flipped bit in a tensor") {
    // Bytes near the end of the file: data, not header.
    std::string damaged = saved;
    damaged[damaged.size() - 5] = static_cast<char>(damaged[damaged.size() - 5] ^ 0x10);
    std::ofstream(state, std::ios::binary | std::ios::trunc) << damaged;
    Trainer t(tiny_config("cartpole", dir, 2));
    CHECK_THROWS_AS(t.resume(dir), foxrl::UsageError);
    CHECK_THROWS_WITH(t.resume(dir), Catch::Contains(state) && Catch::Contains("checksum mismatch"));
    restore();
  }
  SECTION("a manifest nested 100,000 deep") {
    // Refused by the strict reader with its line and column, not a stack
    // overflow.
    const std::string manifest = dir + "/checkpoint.json";
    const std::string text = read_bytes(manifest);
    std::ofstream(manifest, std::ios::binary | std::ios::trunc)
        << "{\"config\": " << std::string(100000, '[') << std::string(100000, ']') << "}";
    Trainer t(tiny_config("cartpole", dir, 2));
    CHECK_THROWS_AS(t.resume(dir), foxrl::UsageError);
    CHECK_THROWS_WITH(t.resume(dir), Catch::Contains(manifest + ":1:") && Catch::Contains("nest"));
    std::ofstream(manifest, std::ios::binary | std::ios::trunc) << text;
  }
  SECTION("an edited manifest") {
    const std::string manifest = dir + "/checkpoint.json";
    const std::string text = read_bytes(manifest);
    std::string edited = text;
    const auto at = edited.find("\"gamma\": 0.99");
    REQUIRE(at != std::string::npos);
    edited.replace(at, 13, "\"gamma\": 0.98");
    std::ofstream(manifest, std::ios::binary | std::ios::trunc) << edited;
    Trainer t(tiny_config("cartpole", dir, 2));
    CHECK_THROWS_WITH(t.resume(dir), Catch::Contains(manifest) && Catch::Contains("checksum mismatch"));
    std::ofstream(manifest, std::ios::binary | std::ios::trunc) << text;
  }
  fs::remove_all(dir);
}

TEST_CASE("resume config check names the key and lets only epochs grow", "[resume]") {
  foxrl::TrainConfig saved;
  auto now = saved;
  now.epochs = saved.epochs + 5;
  now.out_dir = "moved";
  CHECK_NOTHROW(foxrl::check_resume_compatible(saved, now, "run/checkpoint.json"));
  now.epochs = saved.epochs - 1;
  CHECK_THROWS_WITH(foxrl::check_resume_compatible(saved, now, "run/checkpoint.json"),
                    Catch::Contains("'epochs'") && Catch::Contains("only grow"));
  now = saved;
  now.hidden = {64};
  CHECK_THROWS_WITH(foxrl::check_resume_compatible(saved, now, "run/checkpoint.json"),
                    Catch::Contains("'hidden'") && Catch::Contains("run/checkpoint.json"));
}
