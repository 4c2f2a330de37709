#pragma once
// Checks that two trainers' checkpoints in two directories hold the same
// bytes: the learner's checkpoint.safetensors file whole (weights, target,
// Adam moments and step, counters, metadata), and every tensor of the
// trainer state (replay, envs, n-step windows, episode statistics,
// normaliser, counters). For runs that must agree bit for bit (a resumed
// run and the uninterrupted one; a graph replay and direct launches).

#include "io/safetensors.hpp"
#include "train/trainer_state.hpp"

#include <catch2/catch.hpp>

#include <fstream>
#include <iterator>
#include <string>

namespace foxrl::test {

inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline void check_same_checkpoint(const std::string& dir_a, const std::string& dir_b) {
  CHECK(read_bytes(dir_a + "/checkpoint.safetensors") == read_bytes(dir_b + "/checkpoint.safetensors"));
  const auto a = safetensors::read(dir_a + "/" + trainer_state_file);
  const auto b = safetensors::read(dir_b + "/" + trainer_state_file);
  REQUIRE(a.tensors.size() == b.tensors.size());
  for (std::size_t i = 0; i < a.tensors.size(); ++i) {
    INFO("tensor " << a.tensors[i].name);
    CHECK(a.tensors[i].name == b.tensors[i].name);
    CHECK(a.tensors[i].shape == b.tensors[i].shape);
    CHECK(a.tensors[i].data == b.tensors[i].data);
  }
}

}  // namespace foxrl::test
