#pragma once
// BoundedLineReader: the lines of a text file the user names (market data
// CSVs), read one at a time with a cap on each line's length. A file is
// never read whole: /dev/zero or a binary file given by mistake is refused
// at its first overlong line, after reading at most the cap, instead of
// filling the memory; a failed read (a directory, an I/O error) is an
// error naming the file, never a silently short file.

#include <cstddef>
#include <string>
#include <vector>

namespace foxrl {

/// The longest line a market data file may hold (header or row). Real
/// OHLCV rows are under 200 bytes, headers with many extra columns a few
/// kilobytes.
inline constexpr std::size_t kMaxCsvLineBytes = 1 << 20;

class BoundedLineReader {
 public:
  /// Opens `path`; `what` names the kind of file in messages ("market data
  /// file"). UsageError naming the file if it cannot be opened.
  BoundedLineReader(const std::string& path, std::string what, std::size_t max_line_bytes = kMaxCsvLineBytes);
  ~BoundedLineReader();
  BoundedLineReader(const BoundedLineReader&) = delete;
  BoundedLineReader& operator=(const BoundedLineReader&) = delete;

  /// The next line without its '\n' (and a '\r' before it); a UTF-8
  /// byte-order mark at the start of the file is dropped. false at the end
  /// of the file. UsageError naming the file and line for a line longer
  /// than the cap or a failed read.
  bool next(std::string& line);

  /// Lines returned so far (the number of the last one).
  std::size_t line_number() const { return line_number_; }
  /// Whether the last line returned ended with the file, not a '\n' (a
  /// file cut short may end in half a row).
  bool at_unterminated_end() const { return unterminated_; }

 private:
  /// Refills the buffer; false at the end of the file.
  bool fill();

  int fd_ = -1;
  std::string name_, what_;
  std::size_t max_;
  std::size_t line_number_ = 0;
  bool unterminated_ = false;
  std::vector<char> buffer_;
  std::size_t at_ = 0, end_ = 0;
};

}  // namespace foxrl
