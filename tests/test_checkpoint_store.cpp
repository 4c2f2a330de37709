// Crash-safe checkpoints: CRC-32C against published check values, per-tensor
// checksums in safetensors files, checkpoint generations (publish, keep K,
// resolve, set aside, stale temporaries, the directory lock), and a resumed
// TrainingRun that falls back to an older generation when the newest is
// damaged, while a resume that cannot succeed changes nothing on disk.
#include "core/error.hpp"
#include "io/crc32c.hpp"
#include "io/safetensors.hpp"
#include "train/checkpoint_store.hpp"
#include "train/training_run.hpp"

#include <catch2/catch.hpp>

#include <unistd.h>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

std::string scratch_dir(const std::string& name) {
  const auto dir = fs::temp_directory_path() / ("foxrl_store_" + std::to_string(::getpid()) + "_" + name);
  fs::remove_all(dir);
  return dir.string();
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

std::string generation(const std::string& dir, int epoch) {
  char name[32];
  std::snprintf(name, sizeof name, "/checkpoints/epoch-%08d", epoch);
  return dir + name;
}

/// Every file under `dir` with its contents: what "nothing changed" means.
std::map<std::string, std::string> snapshot(const std::string& dir) {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    files[e.path().string()] = e.is_regular_file() ? read_bytes(e.path().string()) : std::string("<dir>");
  }
  return files;
}

foxrl::TrainConfig tiny_config(const std::string& out_dir, int epochs) {
  foxrl::TrainConfig c;
  c.apply_overrides({"env=cartpole", "num_envs=4", "hidden=32", "batch_size=32", "buffer_capacity=256",
                     "learning_starts=64", "iterations_per_epoch=40", "seed=3"});
  c.epochs = epochs;
  c.out_dir = out_dir;
  return c;
}

struct Recorder : foxrl::TrainingObserver {
  std::vector<std::string> lines;
  void on_log(const std::string& line) override { lines.push_back(line); }
};

}  // namespace

TEST_CASE("crc32c gives the published check values", "[checkpoint]") {
  // The check value of the CRC catalogue and RFC 3720's test vectors.
  CHECK(foxrl::crc32c("123456789", 9) == 0xE3069283u);
  const std::vector<unsigned char> zeros(32, 0x00), ones(32, 0xff);
  std::vector<unsigned char> ascending(32);
  for (int i = 0; i < 32; ++i) ascending[static_cast<std::size_t>(i)] = static_cast<unsigned char>(i);
  CHECK(foxrl::crc32c(zeros.data(), zeros.size()) == 0x8A9136AAu);
  CHECK(foxrl::crc32c(ones.data(), ones.size()) == 0x62A8AB43u);
  CHECK(foxrl::crc32c(ascending.data(), ascending.size()) == 0x46DD794Eu);
  CHECK(foxrl::crc32c("", 0) == 0u);
  // Continuation: any split of the input gives the same value.
  const std::string text = "The quick brown fox jumps over the lazy dog, twice over: 0123456789";
  const auto whole = foxrl::crc32c(text.data(), text.size());
  for (std::size_t cut = 0; cut <= text.size(); cut += 7) {
    CHECK(foxrl::crc32c(text.data() + cut, text.size() - cut, foxrl::crc32c(text.data(), cut)) == whole);
  }
  CHECK(foxrl::crc32c_hex(0xE3069283u) == "e3069283");
}

TEST_CASE("safetensors files carry a checksum per tensor, verified on read", "[checkpoint]") {
  const std::string dir = scratch_dir("checksums");
  fs::create_directories(dir);
  const std::string path = dir + "/t.safetensors";
  const std::vector<float> a = {1, 2, 3, 4}, b = {5, 6};
  foxrl::safetensors::File file;
  file.tensors.push_back(foxrl::safetensors::make_f32("a", {2, 2}, a.data()));
  file.tensors.push_back(foxrl::safetensors::make_f32("b", {2}, b.data()));
  file.metadata["note"] = "kept";
  foxrl::safetensors::write(path, file);
  const std::string bytes = read_bytes(path);
  CHECK(bytes.find("\"crc32c.a\"") != std::string::npos);

  const auto back = foxrl::safetensors::read(path);
  CHECK(back.checksummed);
  CHECK(back.metadata == std::map<std::string, std::string>{{"note", "kept"}});  // checksum keys are not metadata
  CHECK(back.tensors.at(1).data == file.tensors.at(1).data);

  // One flipped bit in each tensor's data: the error names that tensor.
  for (const auto& [offset_from_end, tensor] : std::vector<std::pair<std::size_t, std::string>>{{1, "b"}, {12, "a"}}) {
    std::string damaged = bytes;
    damaged[damaged.size() - offset_from_end] = static_cast<char>(damaged[damaged.size() - offset_from_end] ^ 0x01);
    write_bytes(path, damaged);
    CHECK_THROWS_AS(foxrl::safetensors::read(path), foxrl::UsageError);
    CHECK_THROWS_WITH(foxrl::safetensors::read(path), Catch::Contains(path) &&
                                                          Catch::Contains("tensor '" + tensor + "'") &&
                                                          Catch::Contains("checksum mismatch"));
  }
  // A checksum dropped from the header (same length, other key): refused.
  std::string renamed = bytes;
  const auto at = renamed.find("\"crc32c.b\"");
  REQUIRE(at != std::string::npos);
  renamed.replace(at, 10, "\"crc32c_b\"");
  write_bytes(path, renamed);
  CHECK_THROWS_WITH(foxrl::safetensors::read(path), Catch::Contains("'b'") && Catch::Contains("no checksum"));

  // A file of another writer (no checksums at all) is read unverified.
  std::string header = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  while (header.size() % 8 != 0) header += ' ';
  std::string plain(8, '\0');
  plain[0] = static_cast<char>(header.size());
  plain += header;
  plain.append(reinterpret_cast<const char*>(a.data()), 8);
  write_bytes(path, plain);
  const auto unverified = foxrl::safetensors::read(path);
  CHECK_FALSE(unverified.checksummed);
  REQUIRE(unverified.tensors.size() == 1);
  CHECK(unverified.tensors[0].numel() == 2);
  fs::remove_all(dir);
}

TEST_CASE("checkpoint generations are published whole, the newest K kept", "[checkpoint]") {
  const std::string dir = scratch_dir("generations");
  fs::create_directories(dir);
  const foxrl::CheckpointStore store(dir);
  CHECK(store.generations().empty());
  CHECK_THROWS_WITH(foxrl::CheckpointStore::resolve(dir), Catch::Contains(dir) && Catch::Contains("no checkpoint"));

  auto write_marker = [](int epoch) {
    return [epoch](const std::string& d) {
      write_bytes(d + "/checkpoint.json", std::to_string(epoch));
      // While the writer runs, its directory is not a generation.
      CHECK(fs::path(d).filename().string().rfind(".staging-", 0) == 0);
    };
  };
  for (int epoch = 1; epoch <= 4; ++epoch) store.publish(epoch, write_marker(epoch), 2);
  auto gens = store.generations();
  REQUIRE(gens.size() == 2);
  CHECK(gens[0].epoch == 4);
  CHECK(gens[1].epoch == 3);
  CHECK(read_bytes(gens[0].path + "/checkpoint.json") == "4");
  CHECK(foxrl::CheckpointStore::resolve(dir) == generation(dir, 4));
  CHECK(foxrl::CheckpointStore::resolve(generation(dir, 3)) == generation(dir, 3));

  // A writer that fails publishes nothing; its staging directory is a
  // stale temporary, as are "<file>.tmp.<pid>" files.
  CHECK_THROWS(store.publish(
      5,
      [](const std::string& d) {
        write_bytes(d + "/checkpoint.json", "half");
        throw foxrl::Error("disk full");
      },
      2));
  CHECK(store.generations().size() == 2);
  CHECK(store.generations()[0].epoch == 4);
  write_bytes(dir + "/train.log.tmp.12345", "partial");
  write_bytes(dir + "/train.log.tmp.notapid", "someone's");
  store.remove_stale_temporaries();
  for (const auto& e : fs::directory_iterator(store.checkpoints_dir())) {
    CHECK(e.path().filename().string().rfind(".staging-", 0) != 0);
  }
  CHECK_FALSE(fs::exists(dir + "/train.log.tmp.12345"));
  CHECK(fs::exists(dir + "/train.log.tmp.notapid"));

  // A generation set aside is never read again; one of the same epoch is
  // published anew beside it.
  store.set_aside(store.generations()[0]);
  CHECK(store.generations().size() == 1);
  CHECK(fs::exists(dir + "/checkpoints/damaged-epoch-00000004/checkpoint.json"));
  store.publish(4, write_marker(40), 2);
  CHECK(read_bytes(generation(dir, 4) + "/checkpoint.json") == "40");

  // A legacy run directory (files in the run directory itself) is the
  // oldest generation, removed once K newer ones exist.
  write_bytes(dir + "/checkpoint.json", "legacy");
  gens = store.generations();
  REQUIRE(gens.size() == 3);
  CHECK(gens[2].legacy());
  store.publish(5, write_marker(5), 3);
  CHECK_FALSE(fs::exists(dir + "/checkpoint.json"));
  CHECK(store.generations().size() == 3);
  fs::remove_all(dir);
}

TEST_CASE("one process per run directory", "[checkpoint]") {
  const std::string dir = scratch_dir("lock");
  fs::create_directories(dir);
  {
    foxrl::RunDirectoryLock first(dir);
    CHECK_THROWS_WITH(foxrl::RunDirectoryLock(dir), Catch::Contains(dir) && Catch::Contains("in use"));
  }
  CHECK_NOTHROW(foxrl::RunDirectoryLock(dir));  // released with its holder
  CHECK_THROWS_AS(foxrl::RunDirectoryLock(dir + "/missing"), foxrl::UsageError);
  fs::remove_all(dir);
}

TEST_CASE("a resume falls back to an older generation when the newest is damaged", "[checkpoint][resume]") {
  ::setenv("FOXRL_RUN_ID", "store-test", 1);
  const std::string whole = scratch_dir("fallback_whole"), run = scratch_dir("fallback");
  {
    foxrl::TrainingRun r(tiny_config(whole, 3));
    r.run();
  }
  {
    foxrl::TrainingRun r(tiny_config(run, 3));
    r.run();
  }
  // The newest generation (epoch 3) is damaged: one bit of its weights.
  const std::string weights = generation(run, 3) + "/checkpoint.safetensors";
  std::string bytes = read_bytes(weights);
  bytes[bytes.size() - 3] = static_cast<char>(bytes[bytes.size() - 3] ^ 0x40);
  write_bytes(weights, bytes);

  Recorder recorder;
  {
    foxrl::TrainingRun r(tiny_config(run, 3), /*resume=*/true);
    r.add_observer(recorder);
    const auto summary = r.run();
    CHECK(summary.epochs.size() == 3);
  }
  std::string said;
  for (const auto& l : recorder.lines) said += l + "\n";
  CHECK_THAT(said, Catch::Contains("warning: resumed from the older checkpoint " + generation(run, 2)) &&
                       Catch::Contains("checksum mismatch") &&
                       Catch::Contains("resumed from the checkpoint of epoch 2"));
  CHECK(fs::exists(run + "/checkpoints/damaged-epoch-00000003/checkpoint.safetensors"));
  // Epoch 3 again, from epoch 2: what the uninterrupted run wrote, and the
  // log cut back to the checkpoint (one line per epoch).
  for (const char* f : {"checkpoint.safetensors", "trainer_state.safetensors"}) {
    INFO(f);
    CHECK(read_bytes(generation(whole, 3) + "/" + f) == read_bytes(generation(run, 3) + "/" + f));
  }
  const std::string log = read_bytes(run + "/train.log");
  CHECK(log.find("Epoch 3 complete") == log.rfind("Epoch 3 complete"));
  CHECK(log.find("Epoch 2 complete") == log.rfind("Epoch 2 complete"));
  fs::remove_all(whole);
  fs::remove_all(run);
}

TEST_CASE("a resume that cannot succeed changes nothing on disk", "[checkpoint][resume]") {
  const std::string run = scratch_dir("unresumable");
  {
    foxrl::TrainingRun r(tiny_config(run, 2));
    r.run();
  }
  // Both generations damaged, each differently.
  for (int epoch : {1, 2}) {
    const std::string state = generation(run, epoch) + "/trainer_state.safetensors";
    std::string bytes = read_bytes(state);
    bytes.resize(epoch == 1 ? bytes.size() / 2 : bytes.size());
    if (epoch == 2) bytes[bytes.size() - 9] = static_cast<char>(bytes[bytes.size() - 9] ^ 0x02);
    write_bytes(state, bytes);
  }
  write_bytes(run + "/metrics.jsonl.tmp.99999", "left by a killed writer");
  const auto before = snapshot(run);
  std::string message;
  try {
    foxrl::TrainingRun r(tiny_config(run, 4), /*resume=*/true);
    r.run();
  } catch (const foxrl::UsageError& e) {
    message = e.what();
  }
  CHECK_THAT(message, Catch::Contains("no usable checkpoint") && Catch::Contains(generation(run, 2)) &&
                          Catch::Contains(generation(run, 1)) && Catch::Contains("checksum mismatch"));
  CHECK(snapshot(run) == before);

  // A changed config key is the user's mistake, not damage: refused at
  // once, nothing set aside.
  foxrl::TrainConfig changed = tiny_config(run, 4);
  changed.gamma = 0.5;
  CHECK_THROWS_WITH(foxrl::TrainingRun(changed, true).run(), Catch::Contains("'gamma'"));
  CHECK(snapshot(run) == before);
  fs::remove_all(run);
}
