#include "config/config_table.hpp"

#include "config/train_config.hpp"

#include "core/strings.hpp"
#include "io/strict_json.hpp"

#include <cmath>
#include <fstream>
#include <sstream>

namespace foxrl::config_detail {
namespace {

/// Whole numbers in full (a range like [1, 2147483647] must not read as
/// [1, 2.14748e+09]), others as the stream prints them.
std::string number_text(double x) {
  std::ostringstream s;
  if (std::isfinite(x) && x == std::floor(x) && x >= 0 && x < 18446744073709551616.0) {
    s << static_cast<unsigned long long>(x);  // the seed's bound 1.8e19 too
  } else if (std::isfinite(x) && x == std::floor(x) && std::fabs(x) < 1e18) {
    s << static_cast<long long>(x);
  } else {
    s << x;
  }
  return s.str();
}

/// Whether the JSON integer `v` lies in [lo, hi], compared exactly: a double
/// holds integers only up to 2^53, so 18000000000000000500 would pass a
/// bound of 1.8e19 as a double. The tables' integer bounds are whole
/// numbers in [0, 2^64).
bool integer_in_range(const Json& v, double lo, double hi) {
  if (v.is_number_integer() && !v.is_number_unsigned()) {
    const std::int64_t x = v.get<std::int64_t>();
    if (x < 0) return lo <= static_cast<double>(x) && static_cast<double>(x) <= hi;
  }
  const std::uint64_t u = v.get<std::uint64_t>();
  const bool above_lo = lo <= 0 || u >= static_cast<std::uint64_t>(lo);
  const bool below_hi = hi >= 18446744073709551615.0 || u <= static_cast<std::uint64_t>(hi);
  return above_lo && below_hi;
}

}  // namespace

void reject(const std::string& where, const std::string& key, const std::string& why) {
  throw UsageError(where + ": key " + quote_excerpt(key, 64) + ": " + why);
}

std::string range_text(double min, double max) {
  return "[" + number_text(min) + ", " + (max == kInf ? std::string("inf)") : number_text(max) + "]");
}

void check_range(const std::string& where, const char* key, double min, double max, double value) {
  if (!std::isfinite(value)) reject(where, key, "value " + number_text(value) + " is not finite");
  if (value < min || value > max) {
    std::ostringstream msg;
    msg << "value " << number_text(value) << " is out of range " << range_text(min, max);
    reject(where, key, msg.str());
  }
}

void check_integer_range(const std::string& where, const char* key, double min, double max, const Json& v) {
  if (!integer_in_range(v, min, max))
    reject(where, key, "value " + v.dump() + " is out of range " + range_text(min, max));
}

void check_hidden_layers(const std::string& where, const std::vector<std::int64_t>& hidden) {
  if (hidden.size() > kMaxHiddenLayers) {
    reject(where, "hidden",
           std::to_string(hidden.size()) + " layers, at most " + std::to_string(kMaxHiddenLayers) + " are allowed");
  }
}

std::string excerpt(const Json& value) { return quote_excerpt(value.dump()); }

Json parse_override_text(const char* key, bool is_string, bool is_list, const std::string& text) {
  if (is_string) return Json(text);
  const std::string source = std::string("--set ") + key;
  if (is_list && (text.empty() || text.front() != '[')) {
    Json list = Json::array();
    std::size_t start = 0, entry = 1;
    for (;;) {
      const std::size_t comma = text.find(',', start);
      const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      list.push_back(parse_strict_json(item, source + " entry " + std::to_string(entry++)));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    return list;
  }
  return parse_strict_json(text, source);
}

Json parse_config_object(const std::string& text, const std::string& where) {
  Json doc = parse_strict_json(text, where);
  if (!doc.is_object()) throw UsageError(where + ": expected a JSON object of keys, got " + excerpt(doc));
  return doc;
}

std::pair<std::string, std::string> split_override(const std::string& key_value) {
  const auto eq = key_value.find('=');
  if (eq == std::string::npos || eq == 0)
    throw UsageError("--set " + quote_excerpt(key_value) + ": expected key=value");
  return {key_value.substr(0, eq), key_value.substr(eq + 1)};
}

std::string read_config_file(const std::string& path) {
  // At most the cap and one byte more is read: /dev/zero or a large file
  // named by mistake is refused at once instead of filling the memory.
  const std::string name = path_for_message(path);
  const std::string cap = std::to_string(kMaxConfigFileBytes / 1024) + " KiB";
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError(name + ": cannot open the config file");
  std::string text(kMaxConfigFileBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad()) throw UsageError(name + ": cannot read the config file");
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (text.size() > kMaxConfigFileBytes) {
    throw UsageError(name + ": the config file is larger than the limit of " + cap +
                     " (a config is a JSON object of keys: is this the right file?)");
  }
  // A read that stopped short of the end for another reason than the end.
  if (!in.eof() && text.size() <= kMaxConfigFileBytes) throw UsageError(name + ": cannot read the config file");
  return text;
}

}  // namespace foxrl::config_detail
