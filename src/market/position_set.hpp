#pragma once
// The positions a market env may hold: long and short (actions 0 short,
// 1 flat, 2 long -> positions -1, 0, +1) or long only, for accounts that
// cannot short (actions 0 flat, 1 long -> positions 0, +1). Action a holds
// position a + min_position in both.

#include "core/error.hpp"

#include <string>

namespace foxrl {

enum class PositionSet { long_short, long_only };

/// Actions of an env holding `set`'s positions.
inline int position_set_actions(PositionSet set) { return set == PositionSet::long_only ? 2 : 3; }
/// The position action 0 holds (the lowest one).
inline int position_set_min(PositionSet set) { return set == PositionSet::long_only ? 0 : -1; }

/// The set named `name` ("long_short", "long_only"); UsageError otherwise.
inline PositionSet parse_position_set(const std::string& name) {
  if (name == "long_short") return PositionSet::long_short;
  if (name == "long_only") return PositionSet::long_only;
  throw UsageError("positions: '" + name + "' is not long_short or long_only");
}

/// The name parse_position_set reads back (the config key's value).
inline const char* position_set_name(PositionSet set) {
  return set == PositionSet::long_only ? "long_only" : "long_short";
}

/// Action names in action order ("short", "flat", "long" or "flat", "long").
inline const char* position_action_name(PositionSet set, int action) {
  static const char* const names[] = {"short", "flat", "long"};
  return names[action + position_set_min(set) + 1];  // indexed by position + 1
}

}  // namespace foxrl
