#include "offline/dataset_metadata.hpp"

#include "core/error.hpp"
#include "core/strings.hpp"
#include "envs/env_registry.hpp"

#include <limits>

namespace foxrl {
namespace {

class MetadataReader {
 public:
  MetadataReader(const std::string& path, const std::map<std::string, std::string>& metadata)
      : path_(path), metadata_(metadata) {}

  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw UsageError("dataset '" + path_ + "': metadata '" + key + "': " + what);
  }

  const std::string& required(const std::string& key) const {
    const auto it = metadata_.find(key);
    if (it == metadata_.end()) fail(key, "missing (not a dataset of `foxrl collect`?)");
    return it->second;
  }

  std::string optional(const std::string& key) const {
    const auto it = metadata_.find(key);
    return it == metadata_.end() ? std::string() : it->second;
  }

  /// A decimal integer in [min, max], digits only.
  std::int64_t integer(const std::string& key, std::int64_t min, std::int64_t max) const {
    const std::string& text = required(key);
    std::int64_t value = 0;
    bool ok = !text.empty() && text.size() <= 19;
    for (const char c : text) ok = ok && c >= '0' && c <= '9';
    if (ok) {
      for (const char c : text) value = value * 10 + (c - '0');  // 19 digits fit in int64
      ok = value >= min && value <= max;
    }
    if (!ok)
      fail(key,
           quote_excerpt(text) + " is not an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]");
    return value;
  }

 private:
  const std::string& path_;
  const std::map<std::string, std::string>& metadata_;
};

}  // namespace

DatasetMetadata parse_dataset_metadata(const std::string& path, const std::map<std::string, std::string>& metadata) {
  const MetadataReader r(path, metadata);
  if (const auto& format = r.required("format"); format != "foxrl.dataset")
    r.fail("format", quote_excerpt(format) + ", expected 'foxrl.dataset'");
  if (const auto& version = r.required("format_version"); version != "1")
    r.fail("format_version", quote_excerpt(version) + ", this foxrl reads version 1");

  DatasetMetadata m;
  try {
    m.env = env_info(r.required("env")).name;
  } catch (const UsageError&) {
    r.fail("env", quote_excerpt(r.required("env")) + ": not a registered env (" + registered_env_names() + ")");
  }
  const int int_max = std::numeric_limits<int>::max();
  m.obs_dim = static_cast<int>(r.integer("obs_dim", 1, int_max));
  m.num_actions = static_cast<int>(r.integer("num_actions", 1, int_max));
  m.num_envs = static_cast<int>(r.integer("num_envs", 1, int_max));
  // 0 passes here: the tensors then say the dataset is empty.
  m.transitions = r.integer("transitions", 0, std::numeric_limits<std::int64_t>::max());

  // The env's config: parsed and validated as `foxrl train` does, then held
  // to the sizes above (a config of another env would evaluate a trained
  // policy on observations it never saw).
  const std::string where = "dataset '" + path + "': metadata 'config'";
  try {
    m.config = TrainConfig::from_json_text(r.required("config"), where);  // validates
  } catch (const UsageError& e) {
    const std::string what = e.what();
    throw UsageError(what.compare(0, where.size(), where) == 0 ? what : where + ": " + what);
  }
  if (m.config.env != m.env) r.fail("config", "describes env " + m.config.env + ", metadata 'env' says " + m.env);
  const EnvSpaces spaces = env_spaces(m.config);
  if (spaces.obs_dim != m.obs_dim || spaces.num_actions != m.num_actions)
    r.fail("config", "its env gives " + std::to_string(spaces.obs_dim) + " features and " +
                         std::to_string(spaces.num_actions) + " actions, metadata 'obs_dim' and 'num_actions' say " +
                         std::to_string(m.obs_dim) + " and " + std::to_string(m.num_actions));
  if (m.config.num_envs != m.num_envs)
    r.fail("config", "num_envs " + std::to_string(m.config.num_envs) + ", metadata 'num_envs' says " +
                         std::to_string(m.num_envs));

  m.row_order_known = r.optional("row_order") == dataset_row_order;
  m.policy = r.optional("policy");
  m.epsilon = r.optional("epsilon");
  m.seed = r.optional("seed");
  m.split = r.optional("split");
  m.run = r.optional("run");
  return m;
}

}  // namespace foxrl
