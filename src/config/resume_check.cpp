#include "config/resume_check.hpp"

#include "core/error.hpp"
#include "core/strings.hpp"

#include <nlohmann/json.hpp>

namespace foxrl {

void check_resume_compatible(const TrainConfig& saved, const TrainConfig& now, const std::string& where) {
  using Json = nlohmann::json;
  const Json a = Json::parse(saved.to_json());
  const Json b = Json::parse(now.to_json());
  for (const auto& [key, value] : a.items()) {
    if (key == "epochs" || key == "out_dir" || key == "keep_checkpoints") continue;
    const auto it = b.find(key);
    if (it == b.end() || *it != value) {
      throw UsageError("--resume: config key '" + key + "' is " +
                       (it == b.end() ? "missing" : quote_excerpt(it->dump())) + ", the saved run (" + where +
                       ") has " + quote_excerpt(value.dump()) + "; a resumed run must keep every key but epochs");
    }
  }
  for (const auto& [key, value] : b.items()) {
    if (!a.contains(key))
      throw UsageError("--resume: config key '" + key + "' is not in the saved run (" + where + ")");
  }
  if (now.epochs < saved.epochs) {
    throw UsageError("--resume: config key 'epochs' is " + std::to_string(now.epochs) + ", the saved run (" + where +
                     ") has " + std::to_string(saved.epochs) + "; epochs may only grow");
  }
}

}  // namespace foxrl
