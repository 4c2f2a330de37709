#pragma once
// ConfigTable<Config>: the typed key table behind every foxrl config file
// (TrainConfig, OfflineTrainConfig). A config is a plain struct; its table
// lists each key with the member it sets, the allowed range (numbers) or
// values (strings) and a one-line meaning. From that one table come JSON
// parsing with strict types and ranges, `--set key=value` overrides, the
// config written back as JSON, and the `--help-config` listing, with
// UsageErrors naming the source and key.

#include "core/error.hpp"
#include "core/strings.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace foxrl {
namespace config_detail {

using Json = nlohmann::json;

constexpr double kInf = std::numeric_limits<double>::infinity();

[[noreturn]] void reject(const std::string& where, const std::string& key, const std::string& why);
/// A range as --help-config prints it and messages quote it: "[1, 65536]",
/// or "[0, inf)" without an upper bound.
std::string range_text(double min, double max);
/// Finite and within [min, max], else a UsageError naming `key`.
void check_range(const std::string& where, const char* key, double min, double max, double value);
/// An integer JSON value within [min, max], compared exactly (not through a
/// double), else a UsageError printing the value as given.
void check_integer_range(const std::string& where, const char* key, double min, double max, const Json& v);
/// `hidden` holds 1 to kMaxHiddenLayers layers (train_config.hpp), else a
/// UsageError naming the key.
void check_hidden_layers(const std::string& where, const std::vector<std::int64_t>& hidden);
/// A JSON value quoted in a message (at most ~200 characters of it).
std::string excerpt(const Json& value);
/// `text` of `--set key=text` as JSON: strings as they are, lists as
/// "a,b,c" (each entry JSON) or a JSON array, others as JSON.
Json parse_override_text(const char* key, bool is_string, bool is_list, const std::string& text);
/// The JSON object of a config file's text; UsageError naming `where`.
Json parse_config_object(const std::string& text, const std::string& where);
/// "key" and "value" of "key=value"; UsageError for anything else.
std::pair<std::string, std::string> split_override(const std::string& key_value);
/// The largest config file read: a config is a few kilobytes of keys.
inline constexpr std::size_t kMaxConfigFileBytes = 1 << 20;
/// A config file's whole text; UsageError naming `path` if unreadable or
/// larger than kMaxConfigFileBytes.
std::string read_config_file(const std::string& path);

}  // namespace config_detail

/// The key table of the config struct `Config`; see the file comment.
template <class Config>
class ConfigTable {
 public:
  using Member = std::variant<std::int64_t Config::*, std::uint64_t Config::*, double Config::*, bool Config::*,
                              std::string Config::*, std::vector<std::int64_t> Config::*>;

  /// One key: where it lives, its allowed range (numbers) or values
  /// (strings; empty: any), and what it means.
  struct Field {
    const char* key;
    Member member;
    double min;
    double max;
    std::vector<std::string> choices;
    const char* help;
    /// Left out of to_json() while at its default: keys added after runs
    /// were saved keep those runs' config hash (checkpoint metadata), and an
    /// old run resumed or evaluated reads them as their defaults.
    bool omit_at_default = false;
  };

  /// `help_hint` is how a user lists the keys, quoted in the message for an
  /// unknown key (e.g. "foxrl train --help-config").
  ConfigTable(std::vector<Field> fields, std::string help_hint)
      : fields_(std::move(fields)), help_hint_(std::move(help_hint)) {}

  const std::vector<Field>& fields() const { return fields_; }

  /// The keys of the JSON object `text` assigned onto `config` (defaults
  /// for keys not given); `where` names the source in messages.
  void assign_json(Config& config, const std::string& text, const std::string& where) const {
    const config_detail::Json doc = config_detail::parse_config_object(text, where);
    for (const auto& [key, value] : doc.items()) assign(config, field(key, where), value, where);
  }

  /// Overrides "key=value", each value parsed as its key's type.
  void apply_overrides(Config& config, const std::vector<std::string>& key_values) const {
    for (const auto& kv : key_values) {
      const auto [key, text] = config_detail::split_override(kv);
      const Field& f = field(key, "--set");
      const bool is_string = std::holds_alternative<std::string Config::*>(f.member);
      const bool is_list = std::holds_alternative<std::vector<std::int64_t> Config::*>(f.member);
      assign(config, f, config_detail::parse_override_text(f.key, is_string, is_list, text), "--set");
    }
  }

  /// Every key of `config` as one JSON object (indented).
  std::string to_json(const Config& config) const {
    config_detail::Json out = config_detail::Json::object();
    const Config defaults{};
    for (const auto& f : fields_) {
      config_detail::Json value = value_of(config, f);
      if (f.omit_at_default && value == value_of(defaults, f)) continue;
      out[f.key] = std::move(value);
    }
    return out.dump(2);
  }

  /// One entry per key: name, default, range or choices, meaning.
  std::string describe() const {
    const Config defaults{};
    std::string out;
    for (const auto& f : fields_) {
      out += "  " + std::string(f.key) + " = " + value_of(defaults, f).dump();
      if (!f.choices.empty()) {
        out += "  (one of " + config_detail::Json(f.choices).dump() + ")";
      } else if (f.max > f.min) {
        out += "  " + config_detail::range_text(f.min, f.max);
      }
      out += "\n      " + std::string(f.help) + "\n";
    }
    return out;
  }

 private:
  const Field& field(const std::string& key, const std::string& where) const {
    for (const auto& f : fields_)
      if (key == f.key) return f;
    config_detail::reject(where, key, "unknown key (see `" + help_hint_ + "`)");
  }

  static void assign(Config& config, const Field& f, const config_detail::Json& value, const std::string& where) {
    using config_detail::excerpt;
    using config_detail::reject;
    std::visit(
        [&](auto member) {
          using T = std::decay_t<decltype(config.*member)>;
          if constexpr (std::is_same_v<T, std::string>) {
            if (!value.is_string()) reject(where, f.key, "expected a string, got " + excerpt(value));
            const auto s = value.template get<std::string>();
            if (!f.choices.empty()) {
              bool ok = false;
              for (const auto& c : f.choices) ok = ok || c == s;
              if (!ok)
                reject(where, f.key, quote_excerpt(s) + " is not one of " + config_detail::Json(f.choices).dump());
            }
            config.*member = s;
          } else if constexpr (std::is_same_v<T, bool>) {
            if (!value.is_boolean()) reject(where, f.key, "expected true or false, got " + excerpt(value));
            config.*member = value.template get<bool>();
          } else if constexpr (std::is_same_v<T, double>) {
            if (!value.is_number()) reject(where, f.key, "expected a number, got " + excerpt(value));
            config_detail::check_range(where, f.key, f.min, f.max, value.template get<double>());
            config.*member = value.template get<double>();
          } else if constexpr (std::is_same_v<T, std::vector<std::int64_t>>) {
            if (!value.is_array() || value.empty()) {
              reject(where, f.key, "expected a non-empty list of integers, got " + excerpt(value));
            }
            std::vector<std::int64_t> out;
            for (const auto& v : value) {
              if (!v.is_number_integer()) reject(where, f.key, "expected integers, got " + excerpt(v));
              config_detail::check_integer_range(where, f.key, f.min, f.max, v);
              out.push_back(v.template get<std::int64_t>());
            }
            config.*member = out;
          } else {
            if (!value.is_number_integer() || (std::is_unsigned_v<T> && value.template get<double>() < 0)) {
              reject(where, f.key,
                     "expected a" + std::string(std::is_unsigned_v<T> ? " non-negative" : "n") + " integer, got " +
                         excerpt(value));
            }
            config_detail::check_integer_range(where, f.key, f.min, f.max, value);
            config.*member = value.template get<T>();
          }
        },
        f.member);
  }

  static config_detail::Json value_of(const Config& config, const Field& f) {
    return std::visit([&](auto member) { return config_detail::Json(config.*member); }, f.member);
  }

  std::vector<Field> fields_;
  std::string help_hint_;
};

}  // namespace foxrl
