#pragma once
// Checkpoints of a DQN learner as safetensors files, named like PyTorch's
// state_dict: "online.trunk.0.weight" [out, in], "online.trunk.0.bias", ...,
// "online.head.weight", "online.head.bias", the same under "target.",
// "adam_m." and "adam_v.", plus the I64 scalars "adam.step" and
// "learner.updates". The metadata records the architecture.
// docs/load_checkpoint_in_pytorch.py reads these files.
//
// The tensors are written and read per parameter set
// (src/nn/parameter_file.hpp): loading validates the whole file against the
// expected layout into host buffers first, so a bad file changes nothing.

#include "nn/parameter_file.hpp"
#include "views/nn/network_layout.hpp"

#include <map>
#include <string>

namespace foxrl {

/// Prefix of the online network's tensors.
inline const char* const dqn_online_prefix = "online";
/// Prefix of the target network's tensors.
inline const char* const dqn_target_prefix = "target";
/// Names of the Adam state's tensors.
inline AdamTensorNames dqn_adam_names() { return {"adam_m", "adam_v", "adam.step"}; }
/// Name of the learner's update counter.
inline const char* const dqn_updates_name = "learner.updates";

/// The file's metadata: format, version and architecture of `layout`, the
/// loss ("huber" or "mse").
std::map<std::string, std::string> dqn_checkpoint_metadata(const NetworkLayout& layout, const std::string& loss);

/// Checks the metadata of the checkpoint `path` against what this learner
/// writes for `layout`: format "foxrl.dqn_learner", format_version "1" (a
/// newer one is refused as such), obs_dim, hidden, num_actions, head,
/// activation, and a known loss. UsageError naming the file, the key and
/// its value. Files without "format" (written before checkpoints named
/// their format) are not checked.
void check_dqn_checkpoint_metadata(const std::string& path, const std::map<std::string, std::string>& metadata,
                                   const NetworkLayout& layout);

}  // namespace foxrl
