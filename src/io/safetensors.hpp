#pragma once
// Reader and writer of the safetensors format (the layout PyTorch's
// `safetensors` package reads): 8-byte little-endian header length N, a
// JSON header of N bytes {"name": {"dtype", "shape", "data_offsets"}, ...,
// "__metadata__": {string: string}}, then the raw little-endian data.
//
// The reader validates the whole container (header length, JSON, dtypes,
// shapes against byte ranges, ranges inside the data section and not
// overlapping, checksums) before returning anything; errors are
// foxrl::UsageError (a damaged file is bad input) naming the file, the
// tensor and the problem. The writer is atomic: it writes a temporary file
// next to the target, fsyncs it and renames it over.
//
// Integrity: the writer stores every tensor's CRC-32C in the metadata
// ("crc32c.<tensor>": eight hex digits), and the CRC-32C of every other
// metadata value under "crc32c.__metadata__" (a JSON object {"key": "8 hex
// digits"}); the reader verifies each one, so a flipped bit in any tensor
// or metadata value is an error naming the tensor or the key. Files
// without checksums (other writers) are read unverified; files with tensor
// checksums but no metadata checksum (written by foxrl before metadata
// checksums existed) are read with their tensors verified. File::checksummed and
// File::metadata_checksummed say which it was.
//
// Bounds: the header is at most 100 MiB and names at most max_tensors
// tensors; the reader's cost is linear in the file (a tensor count near the
// limit reads in well under a second), and every read is checked (a
// directory, a device, a file cut short while read are named).

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

namespace foxrl::safetensors {

/// One tensor: dtype as safetensors spells it ("F32", "I64", ...), shape,
/// and its bytes (little-endian, row-major).
struct Tensor {
  std::string name;
  std::string dtype;
  std::vector<std::int64_t> shape;
  std::vector<unsigned char> data;

  std::int64_t numel() const;
};

/// Metadata keys starting with this hold checksums; read() verifies and
/// removes them, write() recomputes them.
inline constexpr const char* checksum_prefix = "crc32c.";
/// The metadata key of the other metadata entries' checksums (no tensor
/// can be called "__metadata__").
inline constexpr const char* metadata_checksum_key = "crc32c.__metadata__";
/// The most tensors read() accepts in one file.
inline constexpr std::size_t max_tensors = 65536;

/// A whole file: tensors in data order, plus the string metadata.
struct File {
  std::vector<Tensor> tensors;
  std::map<std::string, std::string> metadata;
  /// read(): whether the file carried (and passed) per-tensor checksums.
  bool checksummed = false;
  /// read(): whether the file carried (and passed) the metadata checksum.
  bool metadata_checksummed = false;

  /// The tensor called `name`, or nullptr; constant time (an index kept
  /// beside `tensors`, not safe to call from two threads at once).
  const Tensor* find(const std::string& name) const;

 private:
  mutable std::unordered_map<std::string, std::size_t> index_;
  mutable std::size_t indexed_ = 0;  ///< tensors.size() when index_ was built
};

/// Bytes per element of a safetensors dtype; 0 if the name is unknown.
std::size_t dtype_size(const std::string& dtype);

/// Reads and validates `path` (checksums included); throws
/// foxrl::UsageError naming the file and tensor or metadata key on any
/// defect. With `sha256`, also the SHA-256 of the file's bytes (hashed as
/// they are read: the file is read once).
File read(const std::string& path, std::string* sha256 = nullptr);

/// Writes `file` to `path` atomically (temp file, fsync, rename).
void write(const std::string& path, const File& file);

/// A float32 tensor from host floats.
Tensor make_f32(const std::string& name, std::vector<std::int64_t> shape, const float* values);
/// An int64 scalar tensor (shape []).
Tensor make_i64_scalar(const std::string& name, std::int64_t value);

}  // namespace foxrl::safetensors
