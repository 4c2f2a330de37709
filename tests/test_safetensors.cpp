// Checkpoints: a bit-exact round trip of the whole learner state, and every
// kind of bad file rejected with a message naming the problem while the
// learner's weights stay as they were.
#include "agents/dqn/dqn_learner.hpp"
#include "core/execution_context.hpp"
#include "io/safetensors.hpp"
#include "support/reference_dqn.hpp"
#include "support/test_spaces.hpp"

#include <catch2/catch.hpp>

#include <unistd.h>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

foxrl::DqnLearnerConfig config(std::uint64_t seed) {
  foxrl::DqnLearnerConfig c;
  c.obs_dim = 4;
  c.hidden = {9, 5};
  c.num_actions = 2;
  c.max_batch = 16;
  c.seed = seed;
  return c;
}

std::string temp_path(const std::string& name) {
  return "/tmp/foxrl_test_" + std::to_string(::getpid()) + "_" + name + ".safetensors";
}

std::vector<unsigned char> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<unsigned char>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void write_bytes(const std::string& path, const std::vector<unsigned char>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

/// Replaces the JSON header of a safetensors file, keeping its data.
std::vector<unsigned char> with_header(const std::vector<unsigned char>& file, const std::string& header) {
  std::uint64_t old_len = 0;
  for (int i = 7; i >= 0; --i) old_len = (old_len << 8) | file[i];
  const std::size_t data = file.size() - 8 - old_len;
  std::vector<unsigned char> out(8 + header.size() + data);
  for (int i = 0; i < 8; ++i) out[i] = static_cast<unsigned char>((header.size() >> (8 * i)) & 0xff);
  std::memcpy(out.data() + 8, header.data(), header.size());
  std::memcpy(out.data() + 8 + header.size(), file.data() + 8 + old_len, data);
  return out;
}

std::string header_of(const std::vector<unsigned char>& file) {
  std::uint64_t len = 0;
  for (int i = 7; i >= 0; --i) len = (len << 8) | file[i];
  return std::string(file.begin() + 8, file.begin() + 8 + static_cast<std::ptrdiff_t>(len));
}

std::string replace_once(std::string s, const std::string& from, const std::string& to) {
  const auto at = s.find(from);
  REQUIRE(at != std::string::npos);
  return s.replace(at, from.size(), to);
}

template <class Exec, class View>
std::vector<float> flat(const Exec& space, const View& v) {
  const auto h = foxrl::test::to_host(space, v);
  return std::vector<float>(h.data(), h.data() + h.extent(0));
}

template <class Exec>
std::vector<std::vector<float>> state_of(const Exec& space, const foxrl::DqnLearner<Exec>& l) {
  const auto& w = l.weights();
  return {flat(space, w.online), flat(space, w.target), flat(space, w.adam_m), flat(space, w.adam_v)};
}

}  // namespace

TEMPLATE_TEST_CASE("checkpoint round trip is bit-exact", "[checkpoint]", FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  auto cfg = config(1);
  cfg.target_update_every = 3;
  foxrl::DqnLearner<Exec> trained(space, cfg);
  const auto batch_host = foxrl::test::random_batch(16, 4, 2, 5);
  foxrl::Batch<typename Exec::memory_space> batch;
  batch.states = foxrl::test::to_device(space, batch_host.states, 16, 4);
  batch.next_states = foxrl::test::to_device(space, batch_host.next_states, 16, 4);
  batch.actions = foxrl::test::to_device(space, batch_host.actions);
  batch.rewards = foxrl::test::to_device(space, batch_host.rewards);
  batch.discounts = foxrl::test::to_device(space, batch_host.discounts);
  batch.is_weights = foxrl::test::to_device(space, batch_host.is_weights);
  for (int i = 0; i < 4; ++i) trained.update(space, batch);  // moments, counters and target all non-trivial

  const auto path = temp_path("roundtrip");
  trained.save(space, path);
  foxrl::DqnLearner<Exec> loaded(space, config(2));
  REQUIRE(state_of(space, loaded) != state_of(space, trained));
  loaded.load(space, path);
  const auto a = state_of(space, trained), b = state_of(space, loaded);
  for (int i = 0; i < 4; ++i) {
    REQUIRE(a[i].size() == b[i].size());
    CHECK(std::memcmp(a[i].data(), b[i].data(), a[i].size() * sizeof(float)) == 0);
  }
  CHECK(loaded.updates() == 4);
  CHECK(foxrl::test::to_host(space, loaded.weights().adam_step)() == 4);

  // The file is plain safetensors with PyTorch-style names and shapes.
  const auto file = foxrl::safetensors::read(path);
  const auto* w0 = file.find("online.trunk.0.weight");
  REQUIRE(w0 != nullptr);
  CHECK(w0->dtype == "F32");
  CHECK(w0->shape == std::vector<std::int64_t>{9, 4});
  REQUIRE(file.find("online.trunk.2.bias") != nullptr);
  CHECK(file.find("target.head.weight")->shape == std::vector<std::int64_t>{3, 5});
  CHECK(file.find("adam_v.head.bias") != nullptr);
  CHECK(file.metadata.at("num_actions") == "2");
  // The header is padded so the data starts 8-byte aligned.
  CHECK((8 + header_of(read_bytes(path)).size()) % 8 == 0);
  std::remove(path.c_str());
}

TEMPLATE_TEST_CASE("bad checkpoints are rejected and change nothing", "[checkpoint]", FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  const auto good_path = temp_path("good");
  foxrl::DqnLearner<Exec>(space, config(3)).save(space, good_path);
  const auto good = read_bytes(good_path);
  const std::string header = header_of(good);

  foxrl::DqnLearner<Exec> learner(space, config(4));
  const auto before = state_of(space, learner);
  const auto bad_path = temp_path("bad");

  auto expect_rejected = [&](const std::vector<unsigned char>& bytes, const std::vector<std::string>& needles) {
    write_bytes(bad_path, bytes);
    try {
      learner.load(space, bad_path);
      FAIL("load accepted a bad checkpoint");
    } catch (const foxrl::Error& e) {
      const std::string what = e.what();
      INFO(what);
      CHECK_THAT(what, Catch::Contains(bad_path));
      for (const auto& n : needles) CHECK_THAT(what, Catch::Contains(n));
    }
    CHECK(state_of(space, learner) == before);
    CHECK(learner.updates() == 0);
  };

  SECTION("wrong shape") {
    foxrl::safetensors::File f = foxrl::safetensors::read(good_path);
    for (auto& t : f.tensors)
      if (t.name == "target.trunk.2.weight") t.shape = {9, 5};  // same bytes, transposed shape
    const auto p = temp_path("shape");
    foxrl::safetensors::write(p, f);
    expect_rejected(read_bytes(p), {"target.trunk.2.weight", "shape [9, 5], expected [5, 9]"});
    std::remove(p.c_str());
  }
  SECTION("wrong dtype") {
    foxrl::safetensors::File f = foxrl::safetensors::read(good_path);
    for (auto& t : f.tensors)
      if (t.name == "adam_m.head.bias") {
        t.dtype = "F64";
        t.data.resize(t.data.size() * 2);
      }
    const auto p = temp_path("dtype");
    foxrl::safetensors::write(p, f);
    expect_rejected(read_bytes(p), {"adam_m.head.bias", "dtype F64, expected F32"});
    std::remove(p.c_str());
  }
  SECTION("truncated data") {
    auto bytes = good;
    bytes.resize(bytes.size() - 4);
    // The last tensor in data order is "learner.updates".
    expect_rejected(bytes, {"learner.updates", "truncated"});
  }
  SECTION("corrupt header JSON") {
    auto h = header;
    h[h.size() / 2] = '{';
    h[h.size() / 2 + 1] = '"';
    expect_rejected(with_header(good, h), {"corrupt header JSON"});
  }
  SECTION("header length larger than the file") {
    auto bytes = good;
    bytes[0] = 0xff;
    bytes[1] = 0xff;
    bytes[2] = 0xff;
    expect_rejected(bytes, {"header length", "larger than the rest of the file"});
  }
  SECTION("overlapping offsets") {
    // Make the second tensor in data order start inside the first.
    foxrl::safetensors::File f = foxrl::safetensors::read(good_path);
    const auto& first = f.tensors[0];
    const auto& second = f.tensors[1];
    const std::string old_range = "\"data_offsets\":[" + std::to_string(first.data.size()) + "," +
                                  std::to_string(first.data.size() + second.data.size()) + "]";
    const std::string new_range = "\"data_offsets\":[4," + std::to_string(4 + second.data.size()) + "]";
    expect_rejected(with_header(good, replace_once(header, old_range, new_range)), {"overlap"});
  }
  SECTION("offsets out of range") {
    // Move the last tensor (8 bytes) to start where the data section ends.
    const auto end = good.size() - 8 - header.size();
    const std::string old_range = "[" + std::to_string(end - 8) + "," + std::to_string(end) + "]";
    const std::string new_range = "[" + std::to_string(end) + "," + std::to_string(end + 8) + "]";
    expect_rejected(with_header(good, replace_once(header, old_range, new_range)),
                    {"learner.updates", "run past the data section"});
  }
  SECTION("missing tensor") {
    foxrl::safetensors::File f = foxrl::safetensors::read(good_path);
    f.tensors.erase(f.tensors.begin() + 2);
    const auto name = foxrl::safetensors::read(good_path).tensors[2].name;
    const auto p = temp_path("missing");
    foxrl::safetensors::write(p, f);
    expect_rejected(read_bytes(p), {name, "missing"});
    std::remove(p.c_str());
  }
  std::remove(bad_path.c_str());
  std::remove(good_path.c_str());
}
