#include "train/run_directory.hpp"

#include "core/error.hpp"
#include "train/checkpoint_store.hpp"

#include <filesystem>
#include <system_error>

namespace foxrl {

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
