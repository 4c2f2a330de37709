#include "io/safetensors.hpp"

#include "core/error.hpp"
#include "core/strings.hpp"
#include "io/crc32c.hpp"
#include "io/strict_json.hpp"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
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
  for (const auto& t : tensors)
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

File read(const std::string& path) {
  require_little_endian(path);
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, std::string("cannot open: ") + std::strerror(errno));
  in.seekg(0, std::ios::end);
  const auto file_size = static_cast<std::uint64_t>(in.tellg());
  in.seekg(0, std::ios::beg);
  if (file_size < 8) fail(path, "file is " + std::to_string(file_size) + " bytes, too short for the header length");
  unsigned char len_bytes[8];
  in.read(reinterpret_cast<char*>(len_bytes), 8);
  std::uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | len_bytes[i];
  if (header_len > file_size - 8)
    fail(path, "header length " + std::to_string(header_len) + " is larger than the rest of the file (" +
                   std::to_string(file_size - 8) + " bytes)");
  if (header_len > max_header_bytes)
    fail(path, "header length " + std::to_string(header_len) + " exceeds the 100 MiB limit");
  std::string header(header_len, '\0');
  in.read(header.data(), static_cast<std::streamsize>(header_len));
  if (!in) fail(path, "could not read the header");

  // Strict: a damaged header must not overflow the stack (nesting) or pass
  // with a tensor named twice (duplicate keys).
  nlohmann::json j;
  try {
    j = parse_strict_json(header, "header");
  } catch (const UsageError& e) {
    fail(path, std::string("corrupt header JSON: ") + e.what());
  }
  if (!j.is_object()) fail(path, "corrupt header: the JSON header is not an object");

  File file;
  std::vector<Entry> entries;
  std::map<std::string, std::string> checksums;  // tensor name -> stored CRC-32C
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (!it.value().is_object()) fail(path, "\"__metadata__\" is not an object");
      for (auto m = it.value().begin(); m != it.value().end(); ++m) {
        if (!m.value().is_string()) fail(path, "\"__metadata__\" value of '" + m.key() + "' is not a string");
        if (m.key().rfind(checksum_prefix, 0) == 0) {
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
  for (const auto& checksum : checksums) {
    const std::string& name = checksum.first;  // not a structured binding: C++17 lambdas cannot capture those
    const bool known = std::any_of(entries.begin(), entries.end(), [&](const Entry& e) { return e.name == name; });
    if (!known) fail(path, "a checksum for tensor '" + name + "', which the file does not hold (damaged header?)");
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
  in.read(reinterpret_cast<char*>(data.data()), static_cast<std::streamsize>(data_size));
  if (!in) fail(path, "could not read the data section");
  for (const auto& e : entries) {
    if (file.checksummed) {
      const std::string stored = checksums.at(e.name);
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
  // Every tensor's CRC-32C goes into the metadata (checksum keys a read
  // file carried are dropped by read(), so they are always fresh here).
  std::map<std::string, std::string> metadata = file.metadata;
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
