// The metadata of a DQN checkpoint is validated on load: a newer format
// version, another architecture or activation, or a damaged value is
// refused naming the file, the key and the value, before any weight changes.
#include "agents/dqn/dqn_learner.hpp"
#include "core/error.hpp"
#include "core/execution_context.hpp"
#include "io/safetensors.hpp"
#include "support/device_copy.hpp"
#include "support/env_test_util.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

using Exec = Kokkos::DefaultHostExecutionSpace;

foxrl::DqnLearnerConfig config(std::uint64_t seed) {
  foxrl::DqnLearnerConfig c;
  c.obs_dim = 4;
  c.hidden = {9, 5};
  c.num_actions = 2;
  c.max_batch = 16;
  c.seed = seed;
  return c;
}

/// A checkpoint of a fresh learner in `dir` with metadata `key` set to
/// `value` (written by the one writer, so every checksum holds).
std::string checkpoint_with(const foxrl::test::TempDir& dir, const Exec& space, const std::string& key,
                            const std::string& value) {
  const std::string path = dir.file("checkpoint.safetensors");
  foxrl::DqnLearner<Exec>(space, config(1)).save(space, path);
  foxrl::safetensors::File f = foxrl::safetensors::read(path);
  f.metadata[key] = value;
  foxrl::safetensors::write(path, f);
  return path;
}

/// The message of load(path) on a learner of config(2), which must fail
/// and leave the learner's update count and weights as they were.
std::string load_error(const Exec& space, const std::string& path) {
  foxrl::DqnLearner<Exec> learner(space, config(2));
  const auto before = foxrl::test::to_host(space, learner.weights().online);
  std::string message;
  try {
    learner.load(space, path);
  } catch (const foxrl::UsageError& e) {
    message = e.what();
  }
  const auto after = foxrl::test::to_host(space, learner.weights().online);
  for (std::size_t i = 0; i < before.extent(0); ++i) CHECK(before(i) == after(i));
  return message;
}

}  // namespace

TEST_CASE("checkpoint metadata: a newer format_version is refused naming the file, key and value",
          "[checkpoint][metadata]") {
  foxrl::ExecutionContext<Exec> context;
  foxrl::test::TempDir dir;
  const std::string path = checkpoint_with(dir, context.space(), "format_version", "99");
  const std::string message = load_error(context.space(), path);
  INFO(message);
  CHECK_THAT(message, Catch::Contains(path) && Catch::Contains("metadata 'format_version' is '99'") &&
                          Catch::Contains("newer foxrl") && Catch::Contains("reads 1"));
}

TEST_CASE("checkpoint metadata: another activation is refused naming the file, key and value",
          "[checkpoint][metadata]") {
  foxrl::ExecutionContext<Exec> context;
  foxrl::test::TempDir dir;
  const std::string path = checkpoint_with(dir, context.space(), "activation", "tanh");
  const std::string message = load_error(context.space(), path);
  INFO(message);
  CHECK_THAT(message, Catch::Contains(path) && Catch::Contains("metadata 'activation' is 'tanh', expected 'relu'"));
}

TEST_CASE("checkpoint metadata: an obs_dim other than the config's is refused naming the file, key and value",
          "[checkpoint][metadata]") {
  foxrl::ExecutionContext<Exec> context;
  foxrl::test::TempDir dir;
  const std::string path = checkpoint_with(dir, context.space(), "obs_dim", "5");
  const std::string message = load_error(context.space(), path);
  INFO(message);
  CHECK_THAT(message, Catch::Contains(path) && Catch::Contains("metadata 'obs_dim' is '5', expected '4'"));
}

TEST_CASE("checkpoint metadata: a flipped bit in a metadata value fails its checksum, naming the key",
          "[checkpoint][metadata]") {
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  foxrl::test::TempDir dir;
  const std::string path = dir.file("checkpoint.safetensors");
  foxrl::DqnLearner<Exec>(space, config(1)).save(space, path);
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  // "obs_dim":"4" -> "obs_dim":"5" (one bit) inside the header.
  const auto at = bytes.find("\"obs_dim\":\"4\"");
  REQUIRE(at != std::string::npos);
  bytes[at + 11] = '5';
  { std::ofstream(path, std::ios::binary) << bytes; }
  const std::string message = load_error(space, path);
  INFO(message);
  CHECK_THAT(message,
             Catch::Contains(path) && Catch::Contains("metadata 'obs_dim'") && Catch::Contains("checksum mismatch"));
}
