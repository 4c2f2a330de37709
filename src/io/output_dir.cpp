#include "io/output_dir.hpp"

#include "core/error.hpp"
#include "core/strings.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

namespace foxrl {

void prepare_output_directory(const std::string& dir, const std::string& what) {
  namespace fs = std::filesystem;
  const std::string name = what + " " + quote_excerpt(dir);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw UsageError(name + ": cannot create the directory: " + ec.message());
  if (!fs::is_directory(dir, ec)) throw UsageError(name + ": exists and is not a directory");
  // access() answers for the real user id and ignores read-only mounts'
  // finer cases; creating (and removing) a file is the test that counts.
  const std::string probe = (fs::path(dir) / (".foxrl-write-test." + std::to_string(::getpid()))).string();
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
  if (fd < 0) {
    const int err = errno;
    throw UsageError(name + ": cannot create files in the directory: " + std::strerror(err));
  }
  ::close(fd);
  ::unlink(probe.c_str());
}

void prepare_output_file_directory(const std::string& path, const std::string& what) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw UsageError(what + " " + quote_excerpt(path) + ": is a directory, not a file name");
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) prepare_output_directory(parent.string(), what);
}

}  // namespace foxrl
