// The safetensors container itself: the metadata checksum (a damaged value
// named by its key; files written before it existed still read), checked
// reads (a directory is named as one), and the tensor-count bound with a
// reader linear in the count.
#include "core/error.hpp"
#include "io/safetensors.hpp"
#include "support/env_test_util.hpp"

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

namespace st = foxrl::safetensors;

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

/// The JSON header of the safetensors bytes `file`.
std::string header_of(const std::string& file) {
  std::uint64_t len = 0;
  for (int i = 7; i >= 0; --i) len = (len << 8) | static_cast<unsigned char>(file[static_cast<std::size_t>(i)]);
  return file.substr(8, len);
}

/// `file` with its header replaced by `header` (the data kept).
std::string with_header(const std::string& file, const std::string& header) {
  const std::string old = header_of(file);
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[static_cast<std::size_t>(i)] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return out + header + file.substr(8 + old.size());
}

/// A small file with two tensors and two metadata entries.
st::File sample() {
  const float w[3] = {1.0f, -2.0f, 0.5f};
  st::File f;
  f.tensors.push_back(st::make_f32("w", {3}, w));
  f.tensors.push_back(st::make_i64_scalar("n", 7));
  f.metadata["format"] = "test";
  f.metadata["cost_bps"] = "5";
  return f;
}

/// The message of the UsageError read(path) throws ("" if none).
std::string read_error(const std::string& path) {
  try {
    (void)st::read(path);
  } catch (const foxrl::UsageError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("safetensors: the writer checksums the metadata and the reader verifies it", "[safetensors]") {
  foxrl::test::TempDir dir;
  const std::string path = dir.file("m.safetensors");
  st::write(path, sample());
  const auto header = nlohmann::json::parse(header_of(slurp(path)));
  const auto sums = nlohmann::json::parse(header.at("__metadata__").at(st::metadata_checksum_key).get<std::string>());
  CHECK(sums.size() == 2);
  CHECK(sums.contains("cost_bps"));
  const st::File back = st::read(path);
  CHECK(back.checksummed);
  CHECK(back.metadata_checksummed);
  CHECK(back.metadata == sample().metadata);  // the checksum keys are not handed out
}

TEST_CASE("safetensors: a changed metadata value is refused naming the file and the key", "[safetensors]") {
  foxrl::test::TempDir dir;
  const std::string path = dir.file("m.safetensors");
  st::write(path, sample());
  const std::string bytes = slurp(path);
  std::string header = header_of(bytes);
  const auto at = header.find("\"cost_bps\":\"5\"");
  REQUIRE(at != std::string::npos);
  header[at + std::strlen("\"cost_bps\":\"")] = '7';  // one bit: '5' is 0x35, '7' 0x37
  { std::ofstream(path, std::ios::binary) << with_header(bytes, header); }
  const std::string message = read_error(path);
  INFO(message);
  CHECK_THAT(message, Catch::Contains("'" + path + "'") && Catch::Contains("metadata 'cost_bps'") &&
                          Catch::Contains("checksum mismatch") && Catch::Contains("'7'"));
}

TEST_CASE("safetensors: a metadata key the checksum does not cover is refused by name", "[safetensors]") {
  foxrl::test::TempDir dir;
  const std::string path = dir.file("m.safetensors");
  st::write(path, sample());
  const std::string bytes = slurp(path);
  std::string header = header_of(bytes);
  // A renamed key (one bit: 'f' 0x66 -> 'g' 0x67): covered key missing.
  const auto at = header.find("\"format\":\"test\"");
  REQUIRE(at != std::string::npos);
  header[at + 1] = 'g';
  { std::ofstream(path, std::ios::binary) << with_header(bytes, header); }
  const std::string message = read_error(path);
  INFO(message);
  CHECK_THAT(message,
             Catch::Contains("'" + path + "'") && Catch::Contains("metadata 'format'") && Catch::Contains("missing"));
}

TEST_CASE("safetensors: a file without a metadata checksum (older foxrl) is read with its tensors verified",
          "[safetensors]") {
  foxrl::test::TempDir dir;
  const std::string path = dir.file("m.safetensors");
  st::write(path, sample());
  const std::string bytes = slurp(path);
  auto header = nlohmann::json::parse(header_of(bytes));
  header.at("__metadata__").erase(st::metadata_checksum_key);
  { std::ofstream(path, std::ios::binary) << with_header(bytes, header.dump()); }
  const st::File back = st::read(path);
  CHECK(back.checksummed);
  CHECK_FALSE(back.metadata_checksummed);
  CHECK(back.metadata == sample().metadata);
}

TEST_CASE("safetensors: a directory is refused as a directory", "[safetensors]") {
  foxrl::test::TempDir dir;
  const std::string message = read_error(dir.path());
  INFO(message);
  CHECK_THAT(message, Catch::Contains("is a directory") && !Catch::Contains("header length"));
}

TEST_CASE("safetensors: more tensors than the limit are refused by count", "[safetensors]") {
  foxrl::test::TempDir dir;
  const std::string path = dir.file("many.safetensors");
  std::string header = "{";
  for (std::size_t i = 0; i <= st::max_tensors; ++i)
    header += (i ? ",\"t" : "\"t") + std::to_string(i) + "\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]}";
  header += "}";
  { std::ofstream(path, std::ios::binary) << with_header(std::string(8, '\0'), header); }
  const std::string message = read_error(path);
  INFO(message.substr(0, 300));
  CHECK_THAT(message, Catch::Contains("'" + path + "'") &&
                          Catch::Contains("more than " + std::to_string(st::max_tensors) + " tensors"));
}

TEST_CASE("safetensors: reading and looking up the most tensors allowed takes linear time", "[safetensors]") {
  foxrl::test::TempDir dir;
  const std::string path = dir.file("most.safetensors");
  st::File f;
  for (std::size_t i = 0; i < st::max_tensors; ++i) {
    st::Tensor t;
    t.name = "t" + std::to_string(i);
    t.dtype = "F32";
    t.shape = {0};
    f.tensors.push_back(t);
  }
  st::write(path, f);
  const auto start = std::chrono::steady_clock::now();
  const st::File back = st::read(path);
  std::size_t found = 0;
  for (std::size_t i = 0; i < st::max_tensors; ++i) found += back.find("t" + std::to_string(i)) != nullptr ? 1 : 0;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(found == st::max_tensors);
  CHECK(back.checksummed);
  // A reader quadratic in the count (as it was) takes over 10 s here; a
  // linear one well under a second.
  CHECK(seconds < 4.0);
}
