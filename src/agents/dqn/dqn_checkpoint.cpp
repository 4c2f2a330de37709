#include "agents/dqn/dqn_checkpoint.hpp"

#include "core/error.hpp"
#include "core/strings.hpp"

namespace foxrl {
namespace {

constexpr const char* format_name = "foxrl.dqn_learner";
constexpr int format_version = 1;
constexpr const char* head_text = "dueling: head outputs [V, A_0..A_{n-1}], Q = V + A - mean(A)";
constexpr const char* activation = "relu";

std::string hidden_of(const NetworkLayout& layout) {
  std::string hidden;
  for (int l = 0; l + 1 < layout.num_layers; ++l) {
    if (l) hidden += ',';
    hidden += std::to_string(layout.layers[l].out);
  }
  return hidden;
}

}  // namespace

std::map<std::string, std::string> dqn_checkpoint_metadata(const NetworkLayout& layout, const std::string& loss) {
  std::map<std::string, std::string> m;
  m["loss"] = loss;
  m["format"] = format_name;
  m["format_version"] = std::to_string(format_version);
  m["obs_dim"] = std::to_string(layout.obs_dim);
  m["hidden"] = hidden_of(layout);
  m["num_actions"] = std::to_string(layout.num_actions);
  m["head"] = head_text;
  m["activation"] = activation;
  return m;
}

void check_dqn_checkpoint_metadata(const std::string& path, const std::map<std::string, std::string>& metadata,
                                   const NetworkLayout& layout) {
  if (metadata.count("format") == 0) return;
  check_checkpoint_format(path, metadata, format_name);
  const auto version = metadata.find("format_version");
  if (version != metadata.end() && version->second != std::to_string(format_version)) {
    const std::string& v = version->second;
    const bool newer = !v.empty() && v.size() <= 9 && v.find_first_not_of("0123456789") == std::string::npos &&
                       std::stoi(v) > format_version;
    throw UsageError("checkpoint '" + path + "': metadata 'format_version' is " + quote_excerpt(v) +
                     (newer ? ": written by a newer foxrl" : ": not a version foxrl wrote") + ", this foxrl reads " +
                     std::to_string(format_version));
  }
  check_checkpoint_entry(path, metadata, "format_version", std::to_string(format_version));
  const std::string of_config = " (the run's config)";
  check_checkpoint_entry(path, metadata, "obs_dim", std::to_string(layout.obs_dim), of_config);
  check_checkpoint_entry(path, metadata, "hidden", hidden_of(layout), of_config);
  check_checkpoint_entry(path, metadata, "num_actions", std::to_string(layout.num_actions), of_config);
  check_checkpoint_entry(path, metadata, "head", head_text, " (the one network head foxrl has)");
  check_checkpoint_entry(path, metadata, "activation", activation, " (the one activation foxrl has)");
  // The first checkpoints did not record the loss.
  const auto loss = metadata.find("loss");
  if (loss != metadata.end() && loss->second != "huber" && loss->second != "mse")
    throw UsageError("checkpoint '" + path + "': metadata 'loss' is " + quote_excerpt(loss->second) +
                     ", expected 'huber' or 'mse'");
}

}  // namespace foxrl
