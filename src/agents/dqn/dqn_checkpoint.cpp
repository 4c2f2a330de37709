#include "agents/dqn/dqn_checkpoint.hpp"

namespace foxrl {

std::map<std::string, std::string> dqn_checkpoint_metadata(const NetworkLayout& layout, const std::string& loss) {
  std::string hidden;
  for (int l = 0; l + 1 < layout.num_layers; ++l) {
    if (l) hidden += ',';
    hidden += std::to_string(layout.layers[l].out);
  }
  std::map<std::string, std::string> m;
  m["loss"] = loss;
  m["format"] = "foxrl.dqn_learner";
  m["format_version"] = "1";
  m["obs_dim"] = std::to_string(layout.obs_dim);
  m["hidden"] = hidden;
  m["num_actions"] = std::to_string(layout.num_actions);
  m["head"] = "dueling: head outputs [V, A_0..A_{n-1}], Q = V + A - mean(A)";
  m["activation"] = "relu";
  return m;
}

}  // namespace foxrl
