#include "train/checkpoint_store.hpp"

#include "core/error.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace foxrl {
namespace {

namespace fs = std::filesystem;

const char* const generation_prefix = "epoch-";
const char* const staging_prefix = ".staging-";
const char* const deleting_prefix = ".deleting-";
/// The files of a legacy (pre-generation) checkpoint in the run directory;
/// checkpoint.json first, so that deleting them stops it being one first.
const char* const legacy_files[] = {"checkpoint.json", "checkpoint.safetensors", "trainer_state.safetensors"};

std::string generation_name(std::int64_t epoch) {
  char name[40];
  std::snprintf(name, sizeof name, "%s%08lld", generation_prefix, static_cast<long long>(epoch));
  return name;
}

/// The epoch of a generation directory name "epoch-<digits>", or -1.
std::int64_t epoch_of(const std::string& name) {
  const std::string prefix = generation_prefix;
  if (name.size() <= prefix.size() || name.size() > prefix.size() + 18 || name.compare(0, prefix.size(), prefix) != 0)
    return -1;
  std::int64_t epoch = 0;
  for (std::size_t i = prefix.size(); i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return -1;
    epoch = epoch * 10 + (name[i] - '0');
  }
  return epoch;
}

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

/// Makes the directory entries of `dir` durable (after a rename or mkdir
/// inside it).
void sync_directory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

void rename_or_throw(const std::string& from, const std::string& to) {
  if (::rename(from.c_str(), to.c_str()) != 0)
    throw Error("cannot rename '" + from + "' to '" + to + "': " + std::strerror(errno));
}

void remove_tree(const std::string& path) {
  std::error_code ec;
  fs::remove_all(path, ec);
  if (ec) throw Error("cannot remove '" + path + "': " + ec.message());
}

std::string pid_suffix() { return "." + std::to_string(::getpid()); }

}  // namespace

CheckpointStore::CheckpointStore(std::string run_dir) : run_dir_(std::move(run_dir)) {}

CheckpointStore::CheckpointStore(std::string run_dir, std::string folder)
    : run_dir_(std::move(run_dir)), folder_(std::move(folder)), reads_legacy_(false) {}

std::vector<CheckpointGeneration> CheckpointStore::generations() const {
  std::vector<CheckpointGeneration> found;
  std::error_code ec;
  if (fs::is_directory(checkpoints_dir(), ec)) {
    for (const auto& entry : fs::directory_iterator(checkpoints_dir(), ec)) {
      const std::int64_t epoch = epoch_of(entry.path().filename().string());
      if (epoch >= 0 && entry.is_directory(ec)) found.push_back({entry.path().string(), epoch});
    }
  }
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.epoch > b.epoch; });
  if (reads_legacy_ && fs::exists(run_dir_ + "/" + legacy_files[0], ec)) found.push_back({run_dir_, -1});
  return found;
}

std::string CheckpointStore::publish(std::int64_t epoch, const std::function<void(const std::string&)>& write,
                                     int keep) const {
  if (epoch < 0 || keep < 1)
    throw LogicError("CheckpointStore::publish: epoch " + std::to_string(epoch) + ", keep " + std::to_string(keep));
  std::error_code ec;
  if (!fs::is_directory(checkpoints_dir(), ec)) {
    fs::create_directories(checkpoints_dir(), ec);
    if (ec) throw Error("cannot create '" + checkpoints_dir() + "': " + ec.message());
    sync_directory(run_dir_);
  }
  const std::string name = generation_name(epoch);
  const std::string staging = checkpoints_dir() + "/" + staging_prefix + name + pid_suffix();
  remove_tree(staging);
  fs::create_directory(staging, ec);
  if (ec) throw Error("cannot create '" + staging + "': " + ec.message());
  write(staging);  // each file is written, fsynced and renamed into staging
  sync_directory(staging);

  std::string target = checkpoints_dir() + "/" + name;
  std::string replaced;
  if (fs::exists(target, ec)) {
    replaced = checkpoints_dir() + "/" + deleting_prefix + name + pid_suffix();
    remove_tree(replaced);
    rename_or_throw(target, replaced);
  }
  rename_or_throw(staging, target);
  sync_directory(checkpoints_dir());
  if (!replaced.empty()) remove_tree(replaced);

  // Keep the newest `keep`; the legacy checkpoint counts as the oldest.
  const auto all = generations();
  for (std::size_t i = static_cast<std::size_t>(keep); i < all.size(); ++i) {
    const auto& old = all[i];
    if (old.legacy()) {
      for (const char* file : legacy_files) fs::remove(run_dir_ + "/" + file, ec);
      sync_directory(run_dir_);
      continue;
    }
    remove(old);
  }
  return target;
}

void CheckpointStore::remove(const CheckpointGeneration& generation) const {
  if (generation.legacy()) throw LogicError("CheckpointStore::remove: a legacy checkpoint is not a generation");
  const std::string aside =
      checkpoints_dir() + "/" + deleting_prefix + fs::path(generation.path).filename().string() + pid_suffix();
  rename_or_throw(generation.path, aside);
  sync_directory(checkpoints_dir());
  remove_tree(aside);
}

void CheckpointStore::set_aside(const CheckpointGeneration& generation) const {
  if (generation.legacy()) return;  // the run directory itself: nothing to rename
  std::string aside = checkpoints_dir() + "/damaged-" + generation_name(generation.epoch);
  std::error_code ec;
  for (int n = 1; fs::exists(aside, ec); ++n)
    aside = checkpoints_dir() + "/damaged-" + generation_name(generation.epoch) + "." + std::to_string(n);
  rename_or_throw(generation.path, aside);
  sync_directory(checkpoints_dir());
}

void CheckpointStore::remove_stale_temporaries() const {
  std::error_code ec;
  if (fs::is_directory(checkpoints_dir(), ec)) {
    for (const auto& entry : fs::directory_iterator(checkpoints_dir(), ec)) {
      const std::string name = entry.path().filename().string();
      if (starts_with(name, staging_prefix) || starts_with(name, deleting_prefix)) remove_tree(entry.path().string());
    }
  }
  // write_file_atomically's and safetensors::write's "<file>.tmp.<pid>".
  for (const auto& entry : fs::directory_iterator(run_dir_, ec)) {
    const std::string name = entry.path().filename().string();
    const auto tmp = name.rfind(".tmp.");
    if (tmp == std::string::npos || tmp + 5 >= name.size() || !entry.is_regular_file(ec)) continue;
    if (name.find_first_not_of("0123456789", tmp + 5) != std::string::npos) continue;
    fs::remove(entry.path(), ec);
  }
}

void CheckpointStore::remove_all() const {
  std::error_code ec;
  if (fs::is_directory(checkpoints_dir(), ec)) remove_tree(checkpoints_dir());
  if (!reads_legacy_) return;
  for (const char* file : legacy_files) fs::remove(run_dir_ + "/" + file, ec);
}

std::string CheckpointStore::resolve(const std::string& path) {
  std::error_code ec;
  if (fs::exists(path + "/" + legacy_files[0], ec)) return path;
  const auto all = CheckpointStore(path).generations();
  if (all.empty()) {
    throw UsageError("'" + path + "' holds no checkpoint (neither " + path + "/checkpoint.json nor " + path +
                     "/checkpoints/epoch-N/): is it a foxrl run directory?");
  }
  return all.front().path;
}

RunDirectoryLock::RunDirectoryLock(const std::string& dir) {
  fd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd_ < 0) throw UsageError("out_dir '" + dir + "': cannot open: " + std::strerror(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK) {
    ::close(fd_);
    fd_ = -1;
    throw UsageError("out_dir '" + dir + "' is in use by another foxrl process (one process per run directory)");
  }
}

RunDirectoryLock::~RunDirectoryLock() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace foxrl
