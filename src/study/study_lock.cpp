#include "study/study_lock.hpp"

#include "core/error.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

namespace foxrl {

long flock_holder_pid(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return 0;
  // Lines read "1: FLOCK  ADVISORY  WRITE 4242 08:01:1234567 0 EOF"; a
  // blocked waiter's line starts with "->" and is skipped.
  std::ifstream locks("/proc/locks");
  std::string line;
  while (std::getline(locks, line)) {
    std::istringstream in(line);
    std::string id, type, mode, access, device;
    long pid = 0;
    if (!(in >> id >> type) || type != "FLOCK" || !(in >> mode >> access >> pid >> device)) continue;
    unsigned major_id = 0, minor_id = 0;
    unsigned long long inode = 0;
    if (std::sscanf(device.c_str(), "%x:%x:%llu", &major_id, &minor_id, &inode) != 3) continue;
    if (inode == static_cast<unsigned long long>(st.st_ino) && major_id == major(st.st_dev) &&
        minor_id == minor(st.st_dev))
      return pid;
  }
  return 0;
}

StudyLock::StudyLock(const std::string& out_dir) {
  fd_ = ::open(out_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd_ < 0) throw UsageError("out_dir '" + out_dir + "': cannot open: " + std::strerror(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) == 0 || errno != EWOULDBLOCK) return;
  ::close(fd_);
  fd_ = -1;
  const long holder = flock_holder_pid(out_dir);
  throw UsageError("out_dir '" + out_dir + "' is in use by " +
                   (holder > 0 ? "process " + std::to_string(holder) : std::string("another process")) +
                   " (a study or run holds its lock): one foxrl process per study; wait for it to end or stop it");
}

StudyLock::~StudyLock() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace foxrl
