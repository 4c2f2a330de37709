#pragma once
// Small string helpers of the file readers and their error messages.

#include <cctype>
#include <cstdint>
#include <sstream>
#include <string>
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

}  // namespace foxrl
