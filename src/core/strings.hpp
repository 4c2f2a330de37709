#pragma once
// Small string helpers of the file readers and their error messages.

#include <cctype>
#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace foxrl {

/// `s` without leading and trailing white space.
inline std::string trim(const std::string& s) {
  std::size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

/// A tensor shape as messages print it: "[16, 4]", "[]" for a scalar.
inline std::string shape_string(const std::vector<std::int64_t>& shape) {
  std::ostringstream s;
  s << '[';
  for (std::size_t i = 0; i < shape.size(); ++i) s << (i ? ", " : "") << shape[i];
  s << ']';
  return s.str();
}

namespace detail {

/// Length of the well-formed UTF-8 sequence of 2 to 4 bytes at s[i], or 0
/// (a lone or overlong byte, a cut sequence): messages keep non-ASCII names
/// readable and escape only what is not text.
inline std::size_t utf8_sequence_length(std::string_view s, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = byte(i);
  std::size_t n = 0;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
  }
  if ((c == 0xE0 && byte(i + 1) < 0xA0) || (c == 0xF0 && byte(i + 1) < 0x90) || (c == 0xF4 && byte(i + 1) > 0x8F)) {
    return 0;  // overlong forms and code points past U+10FFFF
  }
  return n;
}

}  // namespace detail

/// User data as messages quote it: in single quotes, control characters,
/// quotes, backslashes and bytes that are not UTF-8 escaped (\n, \t, \',
/// \x00, ...), so binary input cannot garble a terminal and a NUL cannot
/// cut a message short; at most `max_bytes` bytes of `text` are shown, and
/// a longer text ends in "...' (N bytes)" so a 10 MB line costs one short
/// line of stderr.
inline std::string quote_excerpt(std::string_view text, std::size_t max_bytes = 200) {
  static const char hex[] = "0123456789abcdef";
  std::string out = "'";
  std::size_t i = 0;
  while (i < text.size() && i < max_bytes) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x80) {
      const std::size_t n = detail::utf8_sequence_length(text, i);
      if (n > 0 && i + n <= max_bytes) {
        out.append(text.substr(i, n));
        i += n;
        continue;
      }
      if (n > 0) break;  // a character that does not fit: end before it
    }
    switch (c) {
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\'':
        out += "\\'";
        break;
      default:
        if (c < 0x20 || c >= 0x7F) {
          out += "\\x";
          out += hex[c >> 4];
          out += hex[c & 0xF];
        } else {
          out += static_cast<char>(c);
        }
    }
    ++i;
  }
  out += '\'';
  if (i < text.size()) {
    out.insert(out.size() - 1, "...");
    out += " (" + std::to_string(text.size()) + " bytes)";
  }
  return out;
}

/// A file path as messages name it: as it is when it is short text, else
/// quoted and cut like quote_excerpt (a 1 MB path costs one short line).
inline std::string path_for_message(const std::string& path, std::size_t max_bytes = 200) {
  bool plain = path.size() <= max_bytes;
  for (std::size_t i = 0; plain && i < path.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(path[i]);
    plain = c >= 0x20 && c != 0x7F;
  }
  return plain ? path : quote_excerpt(path, max_bytes);
}

}  // namespace foxrl
