#pragma once
// StudyLock: one process per study directory. A seed study or walk-forward
// holds an exclusive flock on its out_dir for as long as it runs (no file
// is created: a lock file would outlive a killed study), so a second
// `foxrl train --seeds ... --overwrite` or `--resume` started meanwhile is
// refused before it changes anything, with the holder's pid (from
// /proc/locks) in the message. Each seed's or fold's run directory has its
// own lock besides (train/checkpoint_store.hpp: RunDirectoryLock).

#include <string>

namespace foxrl {

class StudyLock {
 public:
  /// Locks `out_dir` (which must exist); UsageError naming the directory
  /// and the holding process when another one holds it. Where the file
  /// system cannot lock, the study runs unlocked.
  explicit StudyLock(const std::string& out_dir);
  ~StudyLock();
  StudyLock(const StudyLock&) = delete;
  StudyLock& operator=(const StudyLock&) = delete;

 private:
  int fd_ = -1;
};

/// The pid of the process holding an flock on `path` (from /proc/locks);
/// 0 when none is listed or the table cannot be read.
long flock_holder_pid(const std::string& path);

}  // namespace foxrl
