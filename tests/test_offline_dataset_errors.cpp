// Offline datasets: every malformed field of a dataset file is refused on
// load, before anything reaches the device, with a UsageError that names the
// file and the tensor or metadata key (and the offending value where there is
// one). Each case starts from a valid hand-built dataset and breaks one
// thing, written with the safetensors writer (so checksums are valid).
#include "core/error.hpp"
#include "core/execution_context.hpp"
#include "io/safetensors.hpp"
#include "offline/dataset_file.hpp"
#include "offline/dataset_memory.hpp"
#include "offline/offline_dataset.hpp"
#include "support/dataset_builder.hpp"
#include "support/env_test_util.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

namespace {

using foxrl::safetensors::File;
using foxrl::safetensors::Tensor;
using foxrl::test::EpisodeSpec;
using foxrl::test::HostDataset;

/// 2 envs, 3 complete episodes and two unfinished ones: 12 rows.
HostDataset valid_dataset() {
  return HostDataset::from_episodes({
      {EpisodeSpec{{1, 1, 1}}, EpisodeSpec{{1, 1}, false, true}, EpisodeSpec{{1}, false, false}},
      {EpisodeSpec{{1, 1, 1, 1}}, EpisodeSpec{{1, 1}, false, false}},
  });
}

Tensor& tensor(File& f, const std::string& name) {
  for (auto& t : f.tensors)
    if (t.name == name) return t;
  FAIL("no tensor " << name);
  throw std::logic_error("unreachable");
}

void remove_tensor(File& f, const std::string& name) {
  for (auto it = f.tensors.begin(); it != f.tensors.end(); ++it) {
    if (it->name == name) {
      f.tensors.erase(it);
      return;
    }
  }
  FAIL("no tensor " << name);
}

template <class T>
void set_element(File& f, const std::string& name, std::int64_t index, T value) {
  Tensor& t = tensor(f, name);
  REQUIRE(std::size_t(index + 1) * sizeof(T) <= t.data.size());
  std::memcpy(t.data.data() + std::size_t(index) * sizeof(T), &value, sizeof(T));
}

/// Drops the last row of tensor `name` (its shape and bytes).
void drop_last_row(File& f, const std::string& name) {
  Tensor& t = tensor(f, name);
  const std::size_t row_bytes = t.data.size() / std::size_t(t.shape[0]);
  t.shape[0] -= 1;
  t.data.resize(t.data.size() - row_bytes);
}

/// Writes `f`, loads it, and requires a UsageError whose message names the
/// file and contains every one of `parts`. Loading on a device goes through
/// the same reader first, so it is refused the same way.
void expect_refused(const File& f, const std::vector<std::string>& parts) {
  foxrl::test::TempDir dir;
  const std::string path = dir.file("bad.safetensors");
  foxrl::safetensors::write(path, f);
  std::string message;
  try {
    (void)foxrl::read_dataset_file(path);
  } catch (const foxrl::UsageError& e) {
    message = e.what();
  }
  INFO("message: " << message);
  REQUIRE_FALSE(message.empty());
  CHECK_THAT(message, Catch::Contains("dataset '" + path + "'"));
  for (const auto& part : parts) CHECK_THAT(message, Catch::Contains(part));
  CHECK(message.size() < 600);

  foxrl::ExecutionContext<Kokkos::DefaultHostExecutionSpace> context;
  try {
    foxrl::OfflineDataset<Kokkos::DefaultHostExecutionSpace> dataset(context.space(), path);
    FAIL("OfflineDataset loaded a malformed dataset");
  } catch (const foxrl::UsageError& e) {
    CHECK(std::string(e.what()) == message);
  }
}

}  // namespace

TEST_CASE("dataset load: the valid base dataset loads", "[offline][dataset-errors]") {
  foxrl::test::TempDir dir;
  const std::string path = dir.file("good.safetensors");
  valid_dataset().write(path);
  const auto d = foxrl::read_dataset_file(path);
  CHECK(d.rows == 12);
  CHECK(d.obs_dim == 4);
  CHECK(d.metadata.num_envs == 2);
}

TEST_CASE("dataset load: a missing tensor is named", "[offline][dataset-errors]") {
  for (const auto& name : foxrl::dataset_tensor_names()) {
    INFO(name);
    File f = valid_dataset().file();
    remove_tensor(f, name);
    expect_refused(f, {"tensor '" + name + "': missing"});
  }
}

TEST_CASE("dataset load: a wrong dtype is named", "[offline][dataset-errors]") {
  // Same element size, so the container itself stays valid.
  const std::vector<std::pair<std::string, std::string>> cases = {{"observations", "I32"}, {"next_observations", "U32"},
                                                                  {"actions", "F32"},      {"rewards", "I32"},
                                                                  {"terminated", "I8"},    {"truncated", "BOOL"}};
  for (const auto& [name, dtype] : cases) {
    INFO(name);
    File f = valid_dataset().file();
    const std::string expected = tensor(f, name).dtype;
    tensor(f, name).dtype = dtype;
    expect_refused(f, {"tensor '" + name + "': dtype " + dtype + ", expected " + expected});
  }
}

TEST_CASE("dataset load: a wrong rank is named", "[offline][dataset-errors]") {
  for (const auto& name : foxrl::dataset_tensor_names()) {
    INFO(name);
    File f = valid_dataset().file();
    Tensor& t = tensor(f, name);
    const std::int64_t n = t.numel();
    t.shape = t.shape.size() == 2 ? std::vector<std::int64_t>{n} : std::vector<std::int64_t>{n, 1};
    expect_refused(f, {"tensor '" + name + "': shape [", "expected rank " + std::to_string(3 - t.shape.size())});
  }
}

TEST_CASE("dataset load: observations with another feature count are named", "[offline][dataset-errors]") {
  for (const std::string name : {"observations", "next_observations"}) {
    INFO(name);
    File f = valid_dataset().file();
    tensor(f, name).shape = {24, 2};  // same bytes, 2 features
    expect_refused(f, {"tensor '" + name + "': shape [24, 2]: 2 features, metadata 'obs_dim' says 4"});
  }
}

TEST_CASE("dataset load: row counts that disagree are named", "[offline][dataset-errors]") {
  for (const std::string name : {"next_observations", "actions", "rewards", "terminated", "truncated"}) {
    INFO(name);
    File f = valid_dataset().file();
    drop_last_row(f, name);
    expect_refused(f, {"tensor '" + name + "': 11 rows, tensor 'observations' has 12"});
  }
  File f = valid_dataset().file();
  f.metadata["transitions"] = "13";
  expect_refused(f, {"tensor 'observations': 12 rows, metadata 'transitions' says 13"});
}

TEST_CASE("dataset load: an empty dataset is refused", "[offline][dataset-errors]") {
  HostDataset empty;
  File f = empty.file();
  REQUIRE(tensor(f, "observations").shape == std::vector<std::int64_t>{0, 4});
  expect_refused(f, {"tensor 'observations': 0 rows: the dataset holds no transitions"});
}

TEST_CASE("dataset load: actions outside 0 .. num_actions - 1 are named with their row", "[offline][dataset-errors]") {
  for (const std::int32_t bad : {2, -1, std::numeric_limits<std::int32_t>::max()}) {
    INFO(bad);
    File f = valid_dataset().file();
    set_element<std::int32_t>(f, "actions", 7, bad);
    expect_refused(f, {"tensor 'actions': element [7] is " + std::to_string(bad) +
                       ": must be in [0, 2) (metadata 'num_actions')"});
  }
}

TEST_CASE("dataset load: non-finite observations and rewards are named with their element",
          "[offline][dataset-errors]") {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  File f = valid_dataset().file();
  set_element<float>(f, "observations", 4 * 5 + 2, nan);
  expect_refused(f, {"tensor 'observations': element [5, 2] is nan: observations must be finite"});
  f = valid_dataset().file();
  set_element<float>(f, "next_observations", 4 * 11 + 3, -inf);
  expect_refused(f, {"tensor 'next_observations': element [11, 3] is -inf: observations must be finite"});
  f = valid_dataset().file();
  set_element<float>(f, "rewards", 0, inf);
  expect_refused(f, {"tensor 'rewards': element [0] is inf: rewards must be finite"});
}

TEST_CASE("dataset load: finite observations and rewards beyond the magnitude bound are named",
          "[offline][dataset-errors]") {
  // 3e38 is finite, but its square overflows: every update would be rejected.
  File f = valid_dataset().file();
  set_element<float>(f, "observations", 4 * 3 + 1, 3e38f);
  expect_refused(f,
                 {"tensor 'observations': element [3, 1] is 3.00000001e+38", "observations must be within +-1000000"});
  f = valid_dataset().file();
  set_element<float>(f, "next_observations", 4 * 7 + 0, -2e6f);
  expect_refused(f, {"tensor 'next_observations': element [7, 0] is -2000000"});
  f = valid_dataset().file();
  set_element<float>(f, "rewards", 2, 3e38f);
  expect_refused(f, {"tensor 'rewards': element [2] is 3.00000001e+38", "rewards must be within +-1000000"});
  // The bound itself is a value a dataset may hold.
  f = valid_dataset().file();
  set_element<float>(f, "rewards", 2, foxrl::kMaxDatasetMagnitude);
  foxrl::test::TempDir dir;
  foxrl::safetensors::write(dir.file("at_bound.safetensors"), f);
  CHECK(foxrl::read_dataset_file(dir.file("at_bound.safetensors")).rows == 12);
}

TEST_CASE("dataset load: flags other than 0 and 1 are named", "[offline][dataset-errors]") {
  for (const std::string name : {"terminated", "truncated"}) {
    INFO(name);
    File f = valid_dataset().file();
    set_element<std::uint8_t>(f, name, 3, 2);
    expect_refused(f, {"tensor '" + name + "': element [3] is 2: must be 0 or 1"});
    f = valid_dataset().file();
    set_element<std::uint8_t>(f, name, 10, 255);
    expect_refused(f, {"tensor '" + name + "': element [10] is 255: must be 0 or 1"});
  }
}

TEST_CASE("dataset load: an unexpected tensor is named", "[offline][dataset-errors]") {
  File f = valid_dataset().file();
  const float x = 1;
  f.tensors.push_back(foxrl::safetensors::make_f32("returns", {1}, &x));
  expect_refused(f, {"tensor 'returns': unexpected tensor"});
}

TEST_CASE("dataset load: missing or malformed metadata is named by key", "[offline][dataset-errors]") {
  struct Case {
    std::string key, value;  // value "": the key is removed
    std::string expected;
  };
  foxrl::TrainConfig market;
  market.env = "market";
  market.num_envs = 2;
  foxrl::TrainConfig four_envs;
  four_envs.env = "cartpole";
  four_envs.num_envs = 4;
  const std::vector<Case> cases = {
      {"format", "", "metadata 'format': missing"},
      {"format", "safetensors", "metadata 'format': 'safetensors', expected 'foxrl.dataset'"},
      {"format_version", "", "metadata 'format_version': missing"},
      {"format_version", "2", "metadata 'format_version': '2', this foxrl reads version 1"},
      {"env", "", "metadata 'env': missing"},
      {"env", "pong", "metadata 'env': 'pong': not a registered env (cartpole, market"},
      {"obs_dim", "", "metadata 'obs_dim': missing"},
      {"obs_dim", "four", "metadata 'obs_dim': 'four' is not an integer in [1, "},
      {"num_actions", "0", "metadata 'num_actions': '0' is not an integer in [1, "},
      {"num_actions", "3",
       "metadata 'config': its env gives 4 features and 2 actions, metadata 'obs_dim' and "
       "'num_actions' say 4 and 3"},
      {"num_envs", "", "metadata 'num_envs': missing"},
      {"num_envs", "-2", "metadata 'num_envs': '-2' is not an integer in [1, "},
      {"transitions", "", "metadata 'transitions': missing"},
      {"transitions", "99999999999999999999", "metadata 'transitions': '99999999999999999999' is not an integer"},
      {"config", "", "metadata 'config': missing"},
      {"config", "{\"env\": \"cartpole\",", "metadata 'config':1:"},
      {"config", "{\"gamma\": 2}", "metadata 'config'"},
      {"config", market.to_json(), "metadata 'config': describes env market, metadata 'env' says cartpole"},
      {"config", four_envs.to_json(), "metadata 'config': num_envs 4, metadata 'num_envs' says 2"},
  };
  for (const auto& c : cases) {
    INFO(c.key << " = " << c.value);
    File f = valid_dataset().file();
    if (c.value.empty()) {
      f.metadata.erase(c.key);
    } else {
      f.metadata[c.key] = c.value;
    }
    expect_refused(f, {c.expected});
  }
}

TEST_CASE("dataset load: malformed normaliser statistics are named", "[offline][dataset-errors]") {
  const std::vector<double> ok = {1, 2, 3, 4};
  auto with_normalizer = [&](std::vector<double> count, std::vector<double> mean, std::vector<double> m2) {
    File f = valid_dataset().file();
    const auto n = [](std::vector<double> v) { return std::vector<std::int64_t>{std::int64_t(v.size())}; };
    f.tensors.push_back(HostDataset::bytes_tensor("normalizer.count", "F64", n(count), count));
    f.tensors.push_back(HostDataset::bytes_tensor("normalizer.mean", "F64", n(mean), mean));
    f.tensors.push_back(HostDataset::bytes_tensor("normalizer.m2", "F64", n(m2), m2));
    return f;
  };
  {
    foxrl::test::TempDir dir;
    const std::string path = dir.file("normalized.safetensors");
    foxrl::safetensors::write(path, with_normalizer(ok, {0.5, -1, 0, 2}, ok));
    const auto d = foxrl::read_dataset_file(path);
    REQUIRE(d.normalizer.has_value());
    CHECK(d.normalizer->mean == std::vector<double>{0.5, -1, 0, 2});
  }
  File f = with_normalizer(ok, ok, ok);
  remove_tensor(f, "normalizer.mean");
  expect_refused(f, {"tensor 'normalizer.mean': missing"});
  expect_refused(with_normalizer(ok, {0, 1, 2}, ok), {"tensor 'normalizer.mean': shape [3], expected [4]"});
  expect_refused(with_normalizer(ok, {0, std::nan(""), 2, 3}, ok),
                 {"tensor 'normalizer.mean': element [1] is nan: must be finite"});
  expect_refused(with_normalizer({1, 1, -1, 1}, ok, ok),
                 {"tensor 'normalizer.count': element [2] is -1: must be finite and >= 0"});
  expect_refused(with_normalizer(ok, ok, {0, 0, 0, -0.5}),
                 {"tensor 'normalizer.m2': element [3] is -0.5: must be finite and >= 0"});
}

TEST_CASE("dataset load: a damaged tensor fails its checksum, naming file and tensor", "[offline][dataset-errors]") {
  foxrl::test::TempDir dir;
  const std::string path = dir.file("flipped.safetensors");
  valid_dataset().write(path);
  // Flip one bit of the last byte: the truncated flags are written last.
  std::fstream io(path, std::ios::in | std::ios::out | std::ios::binary);
  io.seekg(-1, std::ios::end);
  char c = 0;
  io.get(c);
  io.seekp(-1, std::ios::end);
  io.put(static_cast<char>(c ^ 1));
  io.close();
  std::string message;
  try {
    (void)foxrl::read_dataset_file(path);
  } catch (const foxrl::UsageError& e) {
    message = e.what();
  }
  INFO(message);
  CHECK_THAT(message, Catch::Contains(path) && Catch::Contains("truncated") && Catch::Contains("checksum"));
}

TEST_CASE("dataset load: a dataset larger than free memory is refused with the sizes", "[offline][dataset-errors]") {
  // 10^9 CartPole rows: 2 x 4 floats + action + reward + 2 flags = 42 bytes.
  CHECK(foxrl::dataset_device_bytes(1000000000, 4) == 42000000000ULL);
  foxrl::MemoryInfo gpu{true, 8ULL << 30, 80ULL << 30, "GPU 0"};
  std::string message;
  try {
    foxrl::check_dataset_fits("big.safetensors", 1000000000, 4, 42000000000ULL, gpu);
  } catch (const foxrl::UsageError& e) {
    message = e.what();
  }
  INFO(message);
  CHECK_THAT(message, Catch::Contains("dataset 'big.safetensors': 1000000000 transitions x 4 features need 39.1 GiB "
                                      "(42000000000 bytes) of device memory; GPU 0 has 8.0 GiB free of 80.0 GiB"));
  // What fits passes; an unknown memory size leaves it to the allocation.
  CHECK_NOTHROW(foxrl::check_dataset_fits("small.safetensors", 10, 4, 420, gpu));
  CHECK_NOTHROW(foxrl::check_dataset_fits("big.safetensors", 1000000000, 4, 42000000000ULL, foxrl::MemoryInfo{}));
  // Exactly the free bytes fit; one more does not.
  CHECK_NOTHROW(foxrl::check_dataset_fits("edge.safetensors", 1, 4, 8ULL << 30, gpu));
  CHECK_THROWS_AS(foxrl::check_dataset_fits("edge.safetensors", 1, 4, (8ULL << 30) + 1, gpu), foxrl::UsageError);
}

TEST_CASE("dataset load: a flipped bit in the embedded env config is refused, naming file and key",
          "[offline][dataset-errors]") {
  foxrl::test::TempDir dir;
  const std::string path = dir.file("flipped_config.safetensors");
  valid_dataset().write(path);
  // "cost_bps": 5.0 -> "cost_bps": 7.0 is one bit ('5' 0x35, '7' 0x37); the
  // config would still validate.
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  const std::string from = "\\\"cost_bps\\\": 5", to = "\\\"cost_bps\\\": 7";
  const auto at = bytes.find(from);
  REQUIRE(at != std::string::npos);
  REQUIRE(bytes.find(from, at + 1) == std::string::npos);
  bytes.replace(at, from.size(), to);
  { std::ofstream(path, std::ios::binary) << bytes; }
  std::string message;
  try {
    (void)foxrl::read_dataset_file(path);
  } catch (const foxrl::UsageError& e) {
    message = e.what();
  }
  INFO(message);
  CHECK_THAT(message, Catch::Contains("'" + path + "'") && Catch::Contains("metadata 'config'") &&
                          Catch::Contains("checksum mismatch"));
}
