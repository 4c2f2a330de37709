#include "io/safetensors.hpp"

#include "core/error.hpp"
#include "core/strings.hpp"
#include "io/crc32c.hpp"
#include "io/sha256.hpp"
#include "io/strict_json.hpp"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <optional>
#include <set>
#include <sstream>

namespace foxrl::safetensors {
namespace {

// The safetensors reference implementation refuses larger headers, too.
constexpr std::uint64_t max_header_bytes = 100u * 1024u * 1024u;

bool host_is_little_endian() {
  const std::uint16_t one = 1;
  unsigned char first = 0;
  std::memcpy(&first, &one, 1);
  return first == 1;
}

void require_little_endian(const std::string& path) {
  if (!host_is_little_endian()) throw Error("safetensors file '" + path + "': big-endian hosts are not supported");
}

// A file that cannot be read as what it claims to be is bad input (exit 2),
// like a malformed config; failures to write are run-time errors.
[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw UsageError("safetensors file '" + path + "': " + what);
}

[[noreturn]] void fail_tensor(const std::string& path, const std::string& tensor, const std::string& what) {
  throw UsageError("safetensors file '" + path + "': tensor '" + tensor + "': " + what);
}

[[noreturn]] void fail_write(const std::string& path, const std::string& what) {
  throw Error("safetensors file '" + path + "': " + what);
}

std::string too_many_tensors() {
  return "more than " + std::to_string(max_tensors) + " tensors (a foxrl file holds a few hundred at most)";
}

/// How often `needle` occurs in `text` (non-overlapping).
std::size_t count_occurrences(const std::string& text, const std::string& needle) {
  std::size_t count = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + needle.size())) ++count;
  return count;
}

/// An open regular file read at explicit offsets; every read is checked
/// (a directory, a device or a file that shrank is named, not misread).
class FileReader {
 public:
  explicit FileReader(const std::string& path) : path_(path) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) fail(path, std::string("cannot open: ") + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd_, &st) != 0) {
      const std::string why = std::strerror(errno);
      ::close(fd_);
      fail(path, "cannot read its size: " + why);
    }
    if (!S_ISREG(st.st_mode)) {
      ::close(fd_);
      fail(path, S_ISDIR(st.st_mode) ? "is a directory, not a safetensors file" : "is not a regular file");
    }
    size_ = static_cast<std::uint64_t>(st.st_size);
  }
  ~FileReader() { ::close(fd_); }
  FileReader(const FileReader&) = delete;
  FileReader& operator=(const FileReader&) = delete;

  std::uint64_t size() const { return size_; }

  /// Reads exactly `n` bytes at `offset` into `out`; `what` names them in
  /// the error.
  void read_at(std::uint64_t offset, unsigned char* out, std::uint64_t n, const std::string& what) const {
    while (n > 0) {
      const std::size_t chunk = static_cast<std::size_t>(std::min<std::uint64_t>(n, 1u << 30));
      const ssize_t got = ::pread(fd_, out, chunk, static_cast<off_t>(offset));
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) fail(path_, "could not read " + what + ": " + std::strerror(errno));
      if (got == 0) fail(path_, "could not read " + what + ": the file ended early (was it truncated while read?)");
      out += got;
      offset += static_cast<std::uint64_t>(got);
      n -= static_cast<std::uint64_t>(got);
    }
  }

 private:
  std::string path_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
};

/// The metadata checksum's value: every other metadata entry's CRC-32C of
/// its value, as a JSON object {"key": "8 hex digits"} (so a damaged value
/// is named by its key).
std::string metadata_checksums_of(const std::map<std::string, std::string>& metadata) {
  nlohmann::json sums = nlohmann::json::object();
  for (const auto& [key, value] : metadata) sums[key] = crc32c_hex(crc32c(value.data(), value.size()));
  return sums.dump();
}

[[noreturn]] void fail_metadata(const std::string& path, const std::string& key, const std::string& what) {
  throw UsageError("safetensors file '" + path + "': metadata '" + key + "': " + what);
}

/// Checks `metadata` against the stored metadata checksum `stored`: every
/// key covered, none missing, every value's CRC-32C equal.
void verify_metadata(const std::string& path, const std::string& stored,
                     const std::map<std::string, std::string>& metadata) {
  nlohmann::json sums;
  try {
    sums = parse_strict_json(stored, metadata_checksum_key);
  } catch (const UsageError&) {
    fail_metadata(path, metadata_checksum_key, "not a JSON object of checksums: the metadata is damaged");
  }
  if (!sums.is_object()) fail_metadata(path, metadata_checksum_key, "not a JSON object of checksums: damaged");
  for (auto it = sums.begin(); it != sums.end(); ++it) {
    if (!it.value().is_string()) fail_metadata(path, metadata_checksum_key, "a checksum that is not a string: damaged");
    const auto value = metadata.find(it.key());
    if (value == metadata.end())
      fail_metadata(path, it.key(), "missing, though the metadata checksum covers it (damaged header?)");
    const std::string computed = crc32c_hex(crc32c(value->second.data(), value->second.size()));
#ifndef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
    // Short values are shown (a flipped digit is visible); a long one (an
    // embedded config) by its size.
    const std::string shown = value->second.size() <= 64
                                  ? "the value " + quote_excerpt(value->second)
                                  : "its value of " + std::to_string(value->second.size()) + " bytes";
    if (it.value().get<std::string>() != computed)
      fail_metadata(path, it.key(),
                    "checksum mismatch (stored CRC-32C " + it.value().get<std::string>().substr(0, 16) + ", " + shown +
                        " gives " + computed + "): the metadata is damaged");
#endif
  }
  for (const auto& entry : metadata)
    if (!sums.contains(entry.first))
      fail_metadata(path, entry.first, "not covered by the metadata checksum (damaged or edited header?)");
}

/// The metadata key holding a tensor's CRC-32C.
std::string checksum_key(const std::string& tensor) { return std::string(checksum_prefix) + tensor; }

struct Entry {
  std::string name;
  std::string dtype;
  std::vector<std::int64_t> shape;
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
};

Entry parse_entry(const std::string& path, const std::string& name, const nlohmann::json& j) {
  if (!j.is_object()) fail_tensor(path, name, "header entry is not a JSON object");
  Entry e;
  e.name = name;
  const auto dtype = j.find("dtype");
  if (dtype == j.end() || !dtype->is_string()) fail_tensor(path, name, "missing or non-string \"dtype\"");
  e.dtype = dtype->get<std::string>();
  if (dtype_size(e.dtype) == 0) fail_tensor(path, name, "unknown dtype \"" + e.dtype + "\"");
  const auto shape = j.find("shape");
  if (shape == j.end() || !shape->is_array()) fail_tensor(path, name, "missing or non-array \"shape\"");
  for (const auto& d : *shape) {
    if (!d.is_number_integer() || d.get<std::int64_t>() < 0)
      fail_tensor(path, name, "shape entries must be non-negative integers, got " + shape->dump());
    e.shape.push_back(d.get<std::int64_t>());
  }
  const auto offsets = j.find("data_offsets");
  if (offsets == j.end() || !offsets->is_array() || offsets->size() != 2 || !(*offsets)[0].is_number_unsigned() ||
      !(*offsets)[1].is_number_unsigned())
    fail_tensor(path, name, "\"data_offsets\" must be two non-negative integers");
  e.begin = (*offsets)[0].get<std::uint64_t>();
  e.end = (*offsets)[1].get<std::uint64_t>();
  if (e.end < e.begin)
    fail_tensor(path, name,
                "data_offsets [" + std::to_string(e.begin) + ", " + std::to_string(e.end) + "] end before begin");
  // Element count with overflow checks: a corrupt shape must not wrap.
  std::uint64_t bytes = dtype_size(e.dtype);
  for (const auto d : e.shape) {
    if (d != 0 && bytes > std::numeric_limits<std::uint64_t>::max() / static_cast<std::uint64_t>(d))
      fail_tensor(path, name, "shape " + shape_string(e.shape) + " overflows");
    bytes *= static_cast<std::uint64_t>(d);
  }
  if (e.end - e.begin != bytes)
    fail_tensor(path, name,
                "data_offsets [" + std::to_string(e.begin) + ", " + std::to_string(e.end) + "] hold " +
                    std::to_string(e.end - e.begin) + " bytes, but dtype " + e.dtype + " and shape " +
                    shape_string(e.shape) + " need " + std::to_string(bytes));
  return e;
}

std::string directory_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

void write_all(int fd, const unsigned char* data, std::size_t n, const std::string& tmp) {
  while (n > 0) {
    const ssize_t w = ::write(fd, data, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      throw Error("writing '" + tmp + "' failed: " + std::strerror(errno));
    }
    data += w;
    n -= static_cast<std::size_t>(w);
  }
}

}  // namespace

std::int64_t Tensor::numel() const {
  std::int64_t n = 1;
  for (const auto d : shape) n *= d;
  return n;
}

const Tensor* File::find(const std::string& name) const {
  // The index follows `tensors` as callers append to it; an entry is used
  // only if it still names the tensor it points at.
  if (indexed_ != tensors.size()) {
    index_.clear();
    for (std::size_t i = 0; i < tensors.size(); ++i) index_.emplace(tensors[i].name, i);  // the first of a name
    indexed_ = tensors.size();
  }
  const auto it = index_.find(name);
  if (it != index_.end() && it->second < tensors.size() && tensors[it->second].name == name)
    return &tensors[it->second];
  for (const auto& t : tensors)  // renamed in place since the index was built (rare)
    if (t.name == name) return &t;
  return nullptr;
}

std::size_t dtype_size(const std::string& dtype) {
  static const std::map<std::string, std::size_t> sizes = {
      {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E4M3", 1}, {"F8_E5M2", 1}, {"I16", 2}, {"U16", 2}, {"F16", 2},
      {"BF16", 2}, {"I32", 4}, {"U32", 4}, {"F32", 4},     {"I64", 8},     {"U64", 8}, {"F64", 8}};
  const auto it = sizes.find(dtype);
  return it == sizes.end() ? 0 : it->second;
}

File read(const std::string& path, std::string* sha256) {
  require_little_endian(path);
  const FileReader in(path);
  const std::uint64_t file_size = in.size();
  if (file_size < 8) fail(path, "file is " + std::to_string(file_size) + " bytes, too short for the header length");
  // The whole file passes through `hash` in order, once, as it is read.
  Sha256 hash;
  unsigned char len_bytes[8];
  in.read_at(0, len_bytes, 8, "the header length");
  hash.update(len_bytes, 8);
  std::uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | len_bytes[i];
  if (header_len > file_size - 8)
    fail(path, "header length " + std::to_string(header_len) + " is larger than the rest of the file (" +
                   std::to_string(file_size - 8) + " bytes)");
  if (header_len > max_header_bytes)
    fail(path, "header length " + std::to_string(header_len) + " exceeds the 100 MiB limit");
  std::string header(header_len, '\0');
  in.read_at(8, reinterpret_cast<unsigned char*>(header.data()), header_len, "the header");
  hash.update(reinterpret_cast<const unsigned char*>(header.data()), header.size());
  // Every tensor entry names its "data_offsets": counting them bounds the
  // tensor count before the JSON document is built (a 100 MiB header of
  // small entries would otherwise build a document of gigabytes).
  if (count_occurrences(header, "\"data_offsets\"") > max_tensors) fail(path, too_many_tensors());

  // Strict: a damaged header must not overflow the stack (nesting) or pass
  // with a tensor named twice (duplicate keys).
  nlohmann::json j;
  try {
    j = parse_strict_json(header, "header");
  } catch (const UsageError& e) {
    fail(path, std::string("corrupt header JSON: ") + e.what());
  }
  if (!j.is_object()) fail(path, "corrupt header: the JSON header is not an object");
  if (j.size() > max_tensors + 1) fail(path, too_many_tensors());  // + 1: "__metadata__"

  File file;
  std::vector<Entry> entries;
  entries.reserve(j.size());
  std::map<std::string, std::string> checksums;  // tensor name -> stored CRC-32C
  std::optional<std::string> metadata_checksums;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (!it.value().is_object()) fail(path, "\"__metadata__\" is not an object");
      for (auto m = it.value().begin(); m != it.value().end(); ++m) {
        if (!m.value().is_string()) fail(path, "\"__metadata__\" value of '" + m.key() + "' is not a string");
        if (m.key() == metadata_checksum_key) {
          metadata_checksums = m.value().get<std::string>();
        } else if (m.key().rfind(checksum_prefix, 0) == 0) {
          checksums[m.key().substr(std::strlen(checksum_prefix))] = m.value().get<std::string>();
        } else {
          file.metadata[m.key()] = m.value().get<std::string>();
        }
      }
      continue;
    }
    entries.push_back(parse_entry(path, it.key(), it.value()));
  }
  // Checksums are all or nothing: a file foxrl wrote has one per tensor;
  // files of other writers have none.
  file.checksummed = !checksums.empty();
  for (const auto& e : entries)
    if (file.checksummed && checksums.count(e.name) == 0)
      fail_tensor(path, e.name, "no checksum, though the file has checksums for other tensors (damaged header?)");
  if (checksums.size() > entries.size()) {
    // Some checksum names a tensor the file does not hold: name it.
    std::set<std::string> held;
    for (const auto& e : entries) held.insert(e.name);
    for (const auto& checksum : checksums)
      if (held.count(checksum.first) == 0)
        fail(path, "a checksum for tensor '" + checksum.first + "', which the file does not hold (damaged header?)");
  }
  if (metadata_checksums) {
    verify_metadata(path, *metadata_checksums, file.metadata);
    file.metadata_checksummed = true;
  }

  const std::uint64_t data_size = file_size - 8 - header_len;
  for (const auto& e : entries)
    if (e.end > data_size)
      fail_tensor(path, e.name,
                  "data_offsets [" + std::to_string(e.begin) + ", " + std::to_string(e.end) +
                      "] run past the data section of " + std::to_string(data_size) + " bytes (truncated file?)");
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.begin != b.begin ? a.begin < b.begin : a.end < b.end; });
  for (std::size_t i = 1; i < entries.size(); ++i)
    if (entries[i].begin < entries[i - 1].end)
      fail_tensor(path, entries[i].name, "data_offsets overlap those of tensor '" + entries[i - 1].name + "'");

  std::vector<unsigned char> data(data_size);
  in.read_at(8 + header_len, data.data(), data_size, "the data section");
  if (sha256 != nullptr) {
    hash.update(data.data(), data.size());
    *sha256 = hash.hex();
  }
  file.tensors.reserve(entries.size());
  for (const auto& e : entries) {
    if (file.checksummed) {
      const std::string& stored = checksums.at(e.name);
      const std::string computed = crc32c_hex(crc32c(data.data() + e.begin, e.end - e.begin));
      // Fuzzing builds (the libFuzzer convention) read past the checksum, so
      // mutated files reach the validation behind it.
#ifndef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
      if (stored != computed)
        fail_tensor(path, e.name,
                    "checksum mismatch (stored CRC-32C " + stored.substr(0, 16) + ", contents give " + computed +
                        "): the file is damaged");
#endif
    }
    Tensor t;
    t.name = e.name;
    t.dtype = e.dtype;
    t.shape = e.shape;
    t.data.assign(data.begin() + static_cast<std::ptrdiff_t>(e.begin),
                  data.begin() + static_cast<std::ptrdiff_t>(e.end));
    file.tensors.push_back(std::move(t));
  }
  return file;
}

void write(const std::string& path, const File& file) {
  require_little_endian(path);
  nlohmann::json header = nlohmann::json::object();
  std::uint64_t offset = 0;
  for (const auto& t : file.tensors) {
    const auto size = dtype_size(t.dtype);
    if (size == 0) fail_write(path, "tensor '" + t.name + "': unknown dtype \"" + t.dtype + "\"");
    if (t.name == "__metadata__" || header.contains(t.name))
      fail_write(path, "tensor '" + t.name + "': duplicate or reserved name");
    if (static_cast<std::uint64_t>(t.numel()) * size != t.data.size())
      fail_write(path, "tensor '" + t.name + "' holds " + std::to_string(t.data.size()) + " bytes for shape " +
                           shape_string(t.shape) + " of " + t.dtype);
    header[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.data.size()}}};
    offset += t.data.size();
  }
  // The metadata's checksum, then every tensor's CRC-32C go into the
  // metadata (checksum keys a caller left in are dropped: they are always
  // computed here).
  std::map<std::string, std::string> metadata;
  for (const auto& entry : file.metadata)
    if (entry.first.rfind(checksum_prefix, 0) != 0) metadata.insert(entry);
  metadata[metadata_checksum_key] = metadata_checksums_of(metadata);
  for (const auto& t : file.tensors) metadata[checksum_key(t.name)] = crc32c_hex(crc32c(t.data.data(), t.data.size()));
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::string text = header.dump();
  // Pad with spaces so the data section starts 8-byte aligned (as the
  // reference writer does).
  while ((8 + text.size()) % 8 != 0) text.push_back(' ');

  std::vector<unsigned char> head(8 + text.size());
  std::uint64_t n = text.size();
  for (int i = 0; i < 8; ++i) head[i] = static_cast<unsigned char>((n >> (8 * i)) & 0xffu);
  std::memcpy(head.data() + 8, text.data(), text.size());

  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) fail_write(path, "cannot create '" + tmp + "': " + std::strerror(errno));
  try {
    write_all(fd, head.data(), head.size(), tmp);
    for (const auto& t : file.tensors) write_all(fd, t.data.data(), t.data.size(), tmp);
    if (::fsync(fd) != 0) throw Error("fsync of '" + tmp + "' failed: " + std::strerror(errno));
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  if (::close(fd) != 0) {
    ::unlink(tmp.c_str());
    fail_write(path, "closing '" + tmp + "' failed: " + std::strerror(errno));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    fail_write(path, "renaming '" + tmp + "' into place failed: " + why);
  }
  // Make the rename itself durable.
  const int dir = ::open(directory_of(path).c_str(), O_RDONLY);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
}

Tensor make_f32(const std::string& name, std::vector<std::int64_t> shape, const float* values) {
  Tensor t;
  t.name = name;
  t.dtype = "F32";
  t.shape = std::move(shape);
  t.data.resize(static_cast<std::size_t>(t.numel()) * sizeof(float));
  if (!t.data.empty()) std::memcpy(t.data.data(), values, t.data.size());
  return t;
}

Tensor make_i64_scalar(const std::string& name, std::int64_t value) {
  Tensor t;
  t.name = name;
  t.dtype = "I64";
  t.data.resize(sizeof(value));
  std::memcpy(t.data.data(), &value, sizeof(value));
  return t;
}

}  // namespace foxrl::safetensors
