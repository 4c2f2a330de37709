#include "config/resume_check.hpp"

#include "core/error.hpp"
#include "core/strings.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace foxrl {

void check_resume_compatible(const std::string& saved_json, const std::string& now_json,
                             const std::vector<std::string>& movable, const std::string& where) {
  using Json = nlohmann::json;
  const Json a = Json::parse(saved_json);
  const Json b = Json::parse(now_json);
  std::vector<std::string> free = {"epochs", "out_dir", "keep_checkpoints"};
  free.insert(free.end(), movable.begin(), movable.end());
  std::string free_text;
  for (std::size_t i = 0; i < free.size(); ++i)
    free_text += (i == 0 ? "" : i + 1 == free.size() ? " and " : ", ") + free[i];
  for (const auto& [key, value] : a.items()) {
    if (std::find(free.begin(), free.end(), key) != free.end()) continue;
    const auto it = b.find(key);
    if (it == b.end() || *it != value) {
      throw UsageError("--resume: config key '" + key + "' is " +
                       (it == b.end() ? "missing" : quote_excerpt(it->dump())) + ", the saved run (" + where +
                       ") has " + quote_excerpt(value.dump()) + "; only " + free_text + " may change on a resume");
    }
  }
  for (const auto& [key, value] : b.items()) {
    if (!a.contains(key))
      throw UsageError("--resume: config key '" + key + "' is not in the saved run (" + where + ")");
  }
  const auto epochs = [](const Json& j) { return j.value("epochs", std::int64_t(0)); };
  if (epochs(b) < epochs(a)) {
    throw UsageError("--resume: config key 'epochs' is " + std::to_string(epochs(b)) + ", the saved run (" + where +
                     ") has " + std::to_string(epochs(a)) + "; epochs may only grow");
  }
}

void check_resume_compatible(const TrainConfig& saved, const TrainConfig& now, const std::string& where) {
  check_resume_compatible(saved.to_json(), now.to_json(), {}, where);
}

void check_resume_compatible(const OfflineTrainConfig& saved, const OfflineTrainConfig& now, const std::string& where) {
  check_resume_compatible(saved.to_json(), now.to_json(), {"dataset"}, where);
}

}  // namespace foxrl
