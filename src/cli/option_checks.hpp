#pragma once
// Checks of command-line values shared by the subcommands. CLI11's Range
// lets NaN through (every comparison with NaN is false), so floating-point
// options use finite_range.

#include "core/strings.hpp"

#include <CLI/CLI.hpp>

#include <cmath>
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

}  // namespace foxrl::cli
