#include "study/study_manifest.hpp"

#include "config/resume_check.hpp"
#include "core/error.hpp"
#include "core/strings.hpp"
#include "io/atomic_file.hpp"
#include "io/crc32c.hpp"
#include "io/strict_json.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>

namespace foxrl {
namespace {

using Json = nlohmann::json;

/// A manifest is a few kilobytes; a bigger file is not one (and is not read
/// whole into memory).
constexpr std::uintmax_t kMaxManifestBytes = 16 << 20;

/// CRC-32C of the compact dump of everything but "crc32c" (nlohmann dumps
/// keys sorted and numbers in shortest round-trip form, so parse + dump
/// reproduces what was written), as checkpoint.json's.
std::string content_checksum(Json j) {
  j.erase("crc32c");
  const std::string text = j.dump();
  return crc32c_hex(crc32c(text.data(), text.size()));
}

const char* kind_key(StudyManifest::Kind kind) { return kind == StudyManifest::Kind::seeds ? "seeds" : "walk_forward"; }

StudyManifest parse(const Json& j, const std::string& path) {
  if (!j.is_object()) throw UsageError(path + ": not a JSON object");
  const auto field = [&](const char* key) -> const Json& {
    if (!j.contains(key)) throw UsageError(path + ": missing field '" + std::string(key) + "'");
    return j.at(key);
  };
  if (field("format") != "foxrl-study") throw UsageError(path + ": field 'format' is not foxrl-study");
  const Json& version = field("format_version");
  if (!version.is_number_integer() || version.get<std::int64_t>() < 1 ||
      version.get<std::int64_t>() > StudyManifest::format_version) {
    throw UsageError(path + ": field 'format_version' is " + quote_excerpt(version.dump(), 40) +
                     ", this foxrl reads 1 to " + std::to_string(StudyManifest::format_version) +
                     " (a study of a newer foxrl?)");
  }
#ifndef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION  // fuzzing reads past the checksum
  const Json& stored = field("crc32c");
  if (!stored.is_string() || stored.get<std::string>() != content_checksum(j)) {
    throw UsageError(path + ": checksum mismatch (field 'crc32c' is " + quote_excerpt(stored.dump(), 40) +
                     ", the contents give \"" + content_checksum(j) + "\"): the file is damaged or was edited");
  }
#endif
  StudyManifest m;
  const Json& kind = field("kind");
  if (kind == "seeds") {
    m.kind = StudyManifest::Kind::seeds;
  } else if (kind == "walk_forward") {
    m.kind = StudyManifest::Kind::walk_forward;
  } else {
    throw UsageError(path + ": field 'kind' is " + quote_excerpt(kind.dump(), 40) +
                     ", expected \"seeds\" or \"walk_forward\"");
  }
  m.config = TrainConfig::from_json_text(field("config").dump(), path + ": field 'config'");
  try {
    if (m.kind == StudyManifest::Kind::seeds) {
      m.seeds = field("seeds").get<std::vector<std::uint64_t>>();
      if (m.seeds.empty()) throw UsageError(path + ": field 'seeds' is empty");
    } else {
      m.walk_forward = field("walk_forward").get<std::string>();
      for (const Json& f : field("folds")) {
        m.folds.push_back({f.at("fold").get<int>(), f.at("start_date").get<std::string>(),
                           f.at("train_end").get<std::string>(), f.at("test_start").get<std::string>(),
                           f.at("test_end").get<std::string>()});
      }
    }
  } catch (const Json::exception& e) {
    throw UsageError(path + ": malformed field 'seeds', 'walk_forward' or 'folds': " + e.what());
  }
  return m;
}

}  // namespace

std::string StudyManifest::kind_name() const { return kind == Kind::seeds ? "seed study" : "walk-forward"; }

void StudyManifest::write(const std::string& out_dir) const {
  Json j;
  j["format"] = "foxrl-study";
  j["format_version"] = format_version;
  j["kind"] = kind_key(kind);
  j["config"] = Json::parse(config.to_json());
  if (kind == Kind::seeds) {
    j["seeds"] = seeds;
  } else {
    j["walk_forward"] = walk_forward;
    j["folds"] = Json::array();
    for (const auto& f : folds) {
      j["folds"].push_back({{"fold", f.fold},
                            {"start_date", f.start_date},
                            {"train_end", f.train_end},
                            {"test_start", f.test_start},
                            {"test_end", f.test_end}});
    }
  }
  j["crc32c"] = content_checksum(j);
  write_file_atomically(path_in(out_dir), j.dump(2) + "\n");
}

std::optional<StudyManifest> StudyManifest::read_if_present(const std::string& out_dir) {
  namespace fs = std::filesystem;
  const std::string path = path_in(out_dir);
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::nullopt;
  const auto bytes = fs::file_size(path, ec);
  if (ec || bytes > kMaxManifestBytes) {
    throw UsageError(path + ": not a study manifest (" +
                     (ec ? ec.message() : std::to_string(bytes) + " bytes, over " + std::to_string(kMaxManifestBytes)) +
                     ")");
  }
  std::ifstream in(path);
  if (!in) throw UsageError(path + ": cannot be read");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return parse(parse_strict_json(text, path), path);
}

TrainConfig resumed_study_config(const StudyManifest& manifest, const TrainConfig& requested, bool from_file,
                                 const std::vector<std::string>& overrides, const std::string& out_dir) {
  TrainConfig config = from_file ? requested : manifest.config;
  if (!from_file) config.apply_overrides(overrides);
  config.out_dir = out_dir;
  // A seed study gives each seed its own: the config's seed is not part of it.
  if (manifest.kind == StudyManifest::Kind::seeds) config.seed = manifest.config.seed;
  check_resume_compatible(manifest.config, config, StudyManifest::path_in(out_dir));
  return config;
}

}  // namespace foxrl
