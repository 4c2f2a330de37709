#pragma once
// SHA-256 (FIPS 180-4) of a file or a byte string, as lowercase hex: the
// run records name the exact data file an evaluation read.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace foxrl {

/// SHA-256 fed in pieces (e.g. a file as it is read): update() any number
/// of times, then hex() once.
class Sha256 {
 public:
  void update(const unsigned char* data, std::size_t n);
  /// The digest as 64 lowercase hex digits; ends the hash.
  std::string hex();

 private:
  void compress(const unsigned char* block);

  std::array<std::uint32_t, 8> h_ = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                     0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  unsigned char block_[64] = {};
  std::size_t fill_ = 0;
  std::uint64_t length_ = 0;
};

/// SHA-256 of `bytes` as 64 lowercase hex digits.
std::string sha256_hex(const std::string& bytes);

/// SHA-256 of the file at `path` (read in blocks); UsageError naming the
/// path when it cannot be read.
std::string sha256_file_hex(const std::string& path);

}  // namespace foxrl
