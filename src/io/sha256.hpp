#pragma once
// SHA-256 (FIPS 180-4) of a file or a byte string, as lowercase hex: the
// run records name the exact data file an evaluation read.

#include <string>

namespace foxrl {

/// SHA-256 of `bytes` as 64 lowercase hex digits.
std::string sha256_hex(const std::string& bytes);

/// SHA-256 of the file at `path` (read in blocks); UsageError naming the
/// path when it cannot be read.
std::string sha256_file_hex(const std::string& path);

}  // namespace foxrl
