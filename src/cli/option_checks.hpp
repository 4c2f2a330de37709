#pragma once
// Checks of command-line values shared by the subcommands. CLI11's Range
// lets NaN through (every comparison with NaN is false), so floating-point
// options use finite_range.

#include "core/strings.hpp"

#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>

namespace foxrl::cli {

/// A floating-point option's check: a finite number in [lo, hi]; the
/// message (CLI11 prefixes the option's name) quotes the value given.
inline CLI::Validator finite_range(double lo, double hi) {
  std::ostringstream range;
  range << "[" << lo << ", " << hi << "]";
  const std::string bounds = range.str();
  return CLI::Validator(
      [lo, hi, bounds](std::string& input) -> std::string {
        double value = 0;
        if (!CLI::detail::lexical_cast(input, value)) return "value " + quote_excerpt(input) + " is not a number";
        if (!std::isfinite(value) || value < lo || value > hi) {
          return "value " + quote_excerpt(input) + " is not a finite number in " + bounds;
        }
        return std::string();
      },
      "FLOAT in " + bounds);
}

/// An unsigned integer option's check: decimal digits only, at most `max`
/// (CLI11 would store "-1" as 2^64 - 1 and saturate 2^64 to it); the
/// message quotes the value given.
inline CLI::Validator unsigned_integer(std::uint64_t max = UINT64_MAX) {
  const std::string bounds = "[0, " + std::to_string(max) + "]";
  return CLI::Validator(
      [max, bounds](std::string& input) -> std::string {
        bool ok = !input.empty() && input.size() <= 20;
        std::uint64_t value = 0;
        for (std::size_t i = 0; ok && i < input.size(); ++i) {
          const char c = input[i];
          ok = c >= '0' && c <= '9';
          const auto d = static_cast<std::uint64_t>(c - '0');
          ok = ok && value <= (max - d) / 10;
          value = value * 10 + d;
        }
        return ok ? std::string() : "value " + quote_excerpt(input) + " is not an integer in " + bounds;
      },
      "UINT in " + bounds);
}

/// A list option's check: not empty (`--seeds ""` must not fall back to a
/// run without the list).
inline CLI::Validator non_empty(const std::string& example) {
  return CLI::Validator(
      [example](std::string& input) -> std::string {
        return input.empty() ? "is empty: expected " + example : std::string();
      },
      "");
}

}  // namespace foxrl::cli
