#pragma once
// Checkpoints of a DQN learner as safetensors files, named like PyTorch's
// state_dict: "online.trunk.0.weight" [out, in], "online.trunk.0.bias", ...,
// "online.head.weight", "online.head.bias", the same under "target.",
// "adam_m." and "adam_v.", plus the I64 scalars "adam.step" and
// "learner.updates". The metadata records the architecture.
//
// Loading validates the whole file against the expected layout into host
// buffers first, so a bad file changes nothing.

#include "views/nn/network_layout.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace foxrl {

/// A learner's state on the host, in the flat layout of NetworkLayout
/// (alignment gaps zero).
struct DqnCheckpointHost {
  std::vector<float> online, target, adam_m, adam_v;
  std::int64_t adam_step = 0;
  std::int64_t updates = 0;
};

/// The state_dict prefixes of the four parameter buffers, in file order.
inline const char* const dqn_checkpoint_prefixes[4] = {"online", "target", "adam_m", "adam_v"};

/// Writes `state` (laid out by `layout`) to `path` atomically.
void save_dqn_checkpoint(const std::string& path, const NetworkLayout& layout, const DqnCheckpointHost& state,
                         const std::map<std::string, std::string>& extra_metadata = {});

/// Reads `path` and checks every tensor against `layout` (names, dtypes,
/// shapes, nothing missing, nothing extra); throws foxrl::Error naming the
/// file, the tensor and the problem.
DqnCheckpointHost load_dqn_checkpoint(const std::string& path, const NetworkLayout& layout);

}  // namespace foxrl
