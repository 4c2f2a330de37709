#include "market/bounded_lines.hpp"

#include "core/error.hpp"
#include "core/strings.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace foxrl {

BoundedLineReader::BoundedLineReader(const std::string& path, std::string what, std::size_t max_line_bytes)
    : name_(path_for_message(path)), what_(std::move(what)), max_(max_line_bytes), buffer_(1 << 16) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) throw UsageError(name_ + ": cannot open " + what_ + ": " + std::strerror(errno));
}

BoundedLineReader::~BoundedLineReader() {
  if (fd_ >= 0) ::close(fd_);
}

bool BoundedLineReader::fill() {
  for (;;) {
    const ssize_t n = ::read(fd_, buffer_.data(), buffer_.size());
    if (n > 0) {
      at_ = 0;
      end_ = static_cast<std::size_t>(n);
      return true;
    }
    if (n == 0) return false;
    if (errno == EINTR) continue;
    throw UsageError(name_ + ": cannot read " + what_ + " (after line " + std::to_string(line_number_) +
                     "): " + std::strerror(errno));
  }
}

bool BoundedLineReader::next(std::string& line) {
  line.clear();
  bool any = false;
  unterminated_ = false;
  for (;;) {
    if (at_ == end_ && !fill()) {
      unterminated_ = true;
      break;
    }
    any = true;
    const char* begin = buffer_.data() + at_;
    const void* nl = std::memchr(begin, '\n', end_ - at_);
    const std::size_t take = nl ? static_cast<std::size_t>(static_cast<const char*>(nl) - begin) : end_ - at_;
    if (line.size() + take > max_) {
      throw UsageError(name_ + ":" + std::to_string(line_number_ + 1) + ": line is longer than the limit of " +
                       std::to_string(max_) + " bytes (is this a text CSV file?)");
    }
    line.append(begin, take);
    at_ += take;
    if (nl) {
      ++at_;  // the '\n'
      break;
    }
  }
  if (!any) return false;
  ++line_number_;
  if (line_number_ == 1 && line.compare(0, 3, "\xEF\xBB\xBF") == 0) line.erase(0, 3);
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return true;
}

}  // namespace foxrl
