#include "study/study_directory.hpp"

#include "core/error.hpp"
#include "io/strict_json.hpp"
#include "train/best_model.hpp"

#include <filesystem>
#include <fstream>

namespace foxrl {
namespace {

namespace fs = std::filesystem;

}  // namespace

void tidy_member_directory(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return;
  const RunDirectoryLock lock(dir);
  remove_stale_temporaries_in(dir);
  CheckpointStore(dir).remove_stale_temporaries();
  CheckpointStore(dir, BestModelStore::folder).remove_stale_temporaries();
}

void prune_member_generations(const std::string& dir, std::int64_t keep) {
  const RunDirectoryLock lock(dir);
  const CheckpointStore store(dir);
  prune_generations(store, keep);
  BestModelStore(dir).prune(best_epochs_named_by(store));
}

bool solved_at(const std::string& dir, double target_return, std::int64_t epoch) {
  if (target_return <= 0) return false;
  const std::string path = dir + "/metrics.jsonl";
  std::ifstream in(path);
  std::string line;
  bool solved = false;
  while (std::getline(in, line)) {
    nlohmann::json j;
    try {
      j = parse_strict_json(line, path);
    } catch (const UsageError&) {
      continue;  // a line cut short by a kill
    }
    if (!j.is_object() || j.value("epoch", std::int64_t(-1)) != epoch) continue;
    solved = j.value("episodes", std::int64_t(0)) >= 100 && j.value("mean_return_last_100", 0.0) >= target_return;
  }
  return solved;
}

bool written_after(const std::string& dir, const std::vector<std::string>& files,
                   const CheckpointGeneration& generation) {
  std::error_code ec;
  const auto checkpoint = fs::last_write_time(fs::path(generation.path) / "checkpoint.json", ec);
  if (ec) return false;
  for (const auto& name : files) {
    const auto written = fs::last_write_time(fs::path(dir) / name, ec);
    if (ec || written < checkpoint) return false;
  }
  return true;
}

}  // namespace foxrl
