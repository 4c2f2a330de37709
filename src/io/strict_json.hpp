#pragma once
// The one JSON reader for files and values a user hands the tool (configs,
// --set values, manifests): nlohmann's parser driven through a SAX handler
// that builds the document itself, so that a nesting limit stops a
// 100,000-deep `[[[[...` before anything recurses over it, a key given
// twice is an error rather than the last one silently winning, and syntax
// errors name the line and column.

#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>

namespace foxrl {

/// Deepest nesting of arrays and objects parse_strict_json accepts (the
/// tool's own files nest 3 levels).
inline constexpr std::size_t kMaxJsonDepth = 64;

/// Parses `text` as one JSON value (a leading UTF-8 BOM is skipped). Throws
/// UsageError "<source>:<line>:<column>: <what>" on a syntax error, nesting
/// deeper than kMaxJsonDepth, or a key repeated within one object (the
/// message names the key); `source` is the file name or e.g. "--set hidden".
nlohmann::json parse_strict_json(const std::string& text, const std::string& source);

}  // namespace foxrl
