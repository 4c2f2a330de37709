#include "study/study_directory.hpp"

#include "core/error.hpp"
#include "io/strict_json.hpp"
#include "train/best_model.hpp"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>

namespace foxrl {
namespace {

namespace fs = std::filesystem;

/// The pid after `prefix` in `name` when the rest is all digits; -1 otherwise.
long pid_after(const std::string& name, std::size_t at) {
  if (at >= name.size() || at + 10 < name.size()) return -1;
  long pid = 0;
  for (std::size_t i = at; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return -1;
    pid = pid * 10 + (name[i] - '0');
  }
  return pid;
}

bool running(long pid) {
  if (pid <= 0 || pid == static_cast<long>(::getpid())) return false;
  return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
}

}  // namespace

bool is_stale_temporary(const std::string& name) {
  static const std::string probe = ".foxrl-write-test.";
  long pid = -1;
  if (name.rfind(probe, 0) == 0) {
    pid = pid_after(name, probe.size());
  } else if (const auto tmp = name.rfind(".tmp."); tmp != std::string::npos && tmp > 0) {
    pid = pid_after(name, tmp + 5);
  }
  return pid > 0 && !running(pid);
}

void remove_stale_temporaries_in(const std::string& dir) {
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code type_ec;
    if (!it->is_regular_file(type_ec) || !is_stale_temporary(it->path().filename().string())) continue;
    std::error_code remove_ec;
    fs::remove(it->path(), remove_ec);
    if (remove_ec) throw Error("cannot remove the stale temporary " + it->path().string() + ": " + remove_ec.message());
  }
}

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
  const auto all = store.generations();  // newest first, a legacy checkpoint last
  for (std::size_t i = static_cast<std::size_t>(std::max<std::int64_t>(keep, 1)); i < all.size(); ++i) {
    if (!all[i].legacy()) store.remove(all[i]);
  }
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
