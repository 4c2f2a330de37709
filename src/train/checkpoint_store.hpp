#pragma once
// CheckpointStore: the checkpoint generations of a run directory.
//
//   <run>/checkpoints/epoch-00000010/{checkpoint.json, checkpoint.safetensors,
//                                     trainer_state.safetensors}
//   <run>/checkpoints/epoch-00000020/...
//
// A generation is written into a staging directory beside them, each file
// fsynced, and published by one rename of the whole directory (then the
// parent is fsynced): a reader, or a run killed at any instant, sees a
// generation completely or not at all. The newest `keep` generations stay;
// older ones are renamed aside before they are deleted, so a half-deleted
// one never looks like a generation. A damaged generation is renamed to
// damaged-epoch-N (kept for inspection, never read again).
//
// Runs of foxrl before generations kept one checkpoint in the run directory
// itself; it is read as a single generation (legacy()).

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace foxrl {

/// One checkpoint generation: a directory holding checkpoint.json and the
/// files it names.
struct CheckpointGeneration {
  std::string path;
  std::int64_t epoch = -1;  ///< from the directory name; -1 for a legacy run directory
  bool legacy() const { return epoch < 0; }
};

class CheckpointStore {
 public:
  explicit CheckpointStore(std::string run_dir);
  /// The generations in `run_dir`/`folder` instead of checkpoints/ (the best
  /// models: train/best_model.hpp); no legacy checkpoint is read or removed.
  CheckpointStore(std::string run_dir, std::string folder);

  /// The generations on disk, newest first (a legacy checkpoint last).
  std::vector<CheckpointGeneration> generations() const;

  /// Writes a generation for `epoch`: `write(dir)` fills a fresh staging
  /// directory, which is then published atomically as epoch-N (replacing a
  /// generation of the same epoch, e.g. a damaged one). Then only the
  /// newest `keep` generations are kept. Returns the published path.
  std::string publish(std::int64_t epoch, const std::function<void(const std::string& dir)>& write, int keep) const;

  /// Renames `generation` to damaged-epoch-N so it is never read again.
  void set_aside(const CheckpointGeneration& generation) const;

  /// Deletes `generation` (renamed aside first, so a half-deleted one never
  /// looks like a generation).
  void remove(const CheckpointGeneration& generation) const;

  /// Removes what interrupted writers left: staging and half-deleted
  /// generations, `*.tmp.<pid>` files in the run directory. Only call
  /// while holding the RunDirectoryLock.
  void remove_stale_temporaries() const;

  /// Removes every generation (for `train --overwrite`).
  void remove_all() const;

  /// The directory to read a checkpoint from for `path`: `path` itself if
  /// it holds checkpoint.json (a generation, or a legacy run directory),
  /// else the newest generation of the run directory `path`. UsageError
  /// naming `path` when there is none.
  static std::string resolve(const std::string& path);

  const std::string& run_dir() const { return run_dir_; }
  std::string checkpoints_dir() const { return run_dir_ + "/" + folder_; }

 private:
  std::string run_dir_;
  std::string folder_ = "checkpoints";
  bool reads_legacy_ = true;
};

/// An exclusive lock on a run directory (flock on the directory itself:
/// no file is created) for the lifetime of the object, so two processes
/// never write one run. UsageError if another process holds it; where the
/// file system cannot lock, runs unlocked.
class RunDirectoryLock {
 public:
  explicit RunDirectoryLock(const std::string& dir);
  ~RunDirectoryLock();
  RunDirectoryLock(const RunDirectoryLock&) = delete;
  RunDirectoryLock& operator=(const RunDirectoryLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace foxrl
