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
// ("crc32c.<tensor>": eight hex digits), the reader verifies each one, so a
// flipped bit in any tensor is an error naming the tensor. Files without
// checksums (other writers) are read unverified; File::checksummed says
// which it was.

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
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

/// A whole file: tensors in data order, plus the string metadata.
struct File {
  std::vector<Tensor> tensors;
  std::map<std::string, std::string> metadata;
  /// read(): whether the file carried (and passed) per-tensor checksums.
  bool checksummed = false;

  /// The tensor called `name`, or nullptr.
  const Tensor* find(const std::string& name) const;
};

/// Bytes per element of a safetensors dtype; 0 if the name is unknown.
std::size_t dtype_size(const std::string& dtype);

/// Reads and validates `path` (checksums included); throws
/// foxrl::UsageError naming the file and tensor on any defect.
File read(const std::string& path);

/// Writes `file` to `path` atomically (temp file, fsync, rename).
void write(const std::string& path, const File& file);

/// A float32 tensor from host floats.
Tensor make_f32(const std::string& name, std::vector<std::int64_t> shape, const float* values);
/// An int64 scalar tensor (shape []).
Tensor make_i64_scalar(const std::string& name, std::int64_t value);

}  // namespace foxrl::safetensors
