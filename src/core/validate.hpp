#pragma once
// Checks of configuration values, shared by the config structs and
// component constructors. Each throws UsageError (the user's input is
// wrong) with the owner, the field, the value and what it must be:
//   "foxrl::ReplayConfig: alpha = -1: must be >= 0"
// NaN fails every check.

#include "core/error.hpp"

#include <sstream>
#include <string>
#include <type_traits>

namespace foxrl {

/// `value` as the checks print it: integers exactly, floating-point values
/// with 9 significant digits (1e-06, not to_string's 0.000001).
template <class T>
std::string format_value(const T& value) {
  std::ostringstream s;
  if constexpr (std::is_floating_point_v<T>) s.precision(9);
  if constexpr (std::is_same_v<T, bool>) {
    s << (value ? "true" : "false");
  } else if constexpr (std::is_integral_v<T> && sizeof(T) == 1) {
    s << static_cast<int>(value);
  } else {
    s << value;
  }
  return s.str();
}

/// Throws UsageError "<owner>: <field> = <value>: <requirement>".
template <class T>
[[noreturn]] void fail_requirement(const std::string& owner, const std::string& field, const T& value,
                                   const std::string& requirement) {
  throw UsageError(owner + ": " + field + " = " + format_value(value) + ": " + requirement);
}

/// Fails with `requirement` (e.g. "must hold one insert") unless `ok`.
template <class T>
void require(bool ok, const std::string& owner, const std::string& field, const T& value,
             const std::string& requirement) {
  if (!ok) fail_requirement(owner, field, value, requirement);
}

/// value > 0.
template <class T>
void require_positive(const std::string& owner, const std::string& field, const T& value) {
  require(value > T(0), owner, field, value, "must be > 0");
}

/// value >= min.
template <class T, class Bound>
void require_at_least(const std::string& owner, const std::string& field, const T& value, const Bound& min) {
  require(value >= min, owner, field, value, "must be >= " + format_value(min));
}

/// value <= max.
template <class T, class Bound>
void require_at_most(const std::string& owner, const std::string& field, const T& value, const Bound& max) {
  require(value <= max, owner, field, value, "must be <= " + format_value(max));
}

/// Whether a range's upper bound belongs to it.
enum class UpperBound { inclusive, exclusive };

/// lo <= value <= hi ([lo, hi]), or lo <= value < hi ([lo, hi)) with
/// UpperBound::exclusive.
template <class T, class Bound>
void require_in_range(const std::string& owner, const std::string& field, const T& value, const Bound& lo,
                      const Bound& hi, UpperBound upper = UpperBound::inclusive) {
  const bool inclusive = upper == UpperBound::inclusive;
  const bool ok = value >= lo && (inclusive ? value <= hi : value < hi);
  require(ok, owner, field, value,
          "must be in [" + format_value(lo) + ", " + format_value(hi) + (inclusive ? "]" : ")"));
}

}  // namespace foxrl
