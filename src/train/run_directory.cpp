#include "train/run_directory.hpp"

#include "core/error.hpp"
#include "train/checkpoint_store.hpp"

#include <unistd.h>
#include <csignal>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <system_error>

namespace foxrl {
namespace {

namespace fs = std::filesystem;

/// The pid that `name` ends with from `at` on (all digits); -1 otherwise.
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

bool prune_generations(const CheckpointStore& store, std::int64_t keep) {
  const auto all = store.generations();  // newest first, a legacy checkpoint last
  bool removed = false;
  for (std::size_t i = static_cast<std::size_t>(std::max<std::int64_t>(keep, 1)); i < all.size(); ++i) {
    if (all[i].legacy()) continue;
    store.remove(all[i]);
    removed = true;
  }
  return removed;
}

void prepare_fresh_run_directory(const std::string& dir, bool overwrite, const RunFiles& files) {
  namespace fs = std::filesystem;
  const CheckpointStore store(dir);
  std::error_code ec;
  for (int i = 0; i <= files.markers && !overwrite; ++i) {
    const fs::path marker = i < files.markers ? fs::path(dir) / files.names[i] : fs::path(store.checkpoints_dir());
    if (fs::exists(marker, ec) && store.generations().empty()) {
      // Nothing to resume: a run stopped before its first checkpoint.
      throw UsageError("out_dir '" + dir + "' holds a run that stopped before its first checkpoint (" +
                       marker.string() + "; nothing to resume): start it again with --overwrite (or " +
                       "--auto-resume), or choose another out_dir");
    }
    if (fs::exists(marker, ec)) {
      throw UsageError("out_dir '" + dir + "' already holds a run (" + marker.string() + "): continue it with `" +
                       files.resume_command + " --set out_dir=" + dir +
                       "`, replace it with --overwrite, or choose another out_dir");
    }
  }
  if (!overwrite) return;
  store.remove_all();
  for (const auto& name : files.names) {
    fs::remove(fs::path(dir) / name, ec);
    if (ec) throw UsageError("out_dir '" + dir + "': cannot remove " + name + " of the previous run: " + ec.message());
  }
}

std::int64_t file_bytes(const std::string& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  return ec ? 0 : static_cast<std::int64_t>(size);
}

void cut_back_file(const std::string& path, std::int64_t bytes) {
  if (file_bytes(path) <= bytes) return;
  std::error_code ec;
  std::filesystem::resize_file(path, static_cast<std::uintmax_t>(bytes), ec);
  // A run directory the user cannot write is bad input (exit 2), like a
  // fresh run's out_dir; any other failure is one at run time.
  const bool not_writable = ec == std::errc::permission_denied || ec == std::errc::operation_not_permitted ||
                            ec == std::errc::read_only_file_system;
  if (ec && not_writable)
    throw UsageError("out_dir: cannot cut " + path + " back to its checkpoint (" + std::to_string(bytes) +
                     " bytes): " + ec.message());
  if (ec)
    throw Error("cannot cut " + path + " back to its checkpoint (" + std::to_string(bytes) +
                " bytes): " + ec.message());
}

std::string one_line_message(std::string what) {
  const std::string noise = "Traceback functionality not available";
  for (auto at = what.find(noise); at != std::string::npos; at = what.find(noise)) what.erase(at, noise.size());
  std::string out;
  for (const char c : what) {
    const char d = (c == '\n' || c == '\t') ? ' ' : c;
    if (d == ' ' && (out.empty() || out.back() == ' ')) continue;
    out += d;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

}  // namespace foxrl
