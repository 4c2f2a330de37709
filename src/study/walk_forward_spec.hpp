#pragma once
// The lengths of a walk-forward evaluation (`foxrl train --walk-forward
// train=N,test=M,step=S`): each a count of bars or a calendar duration, and
// the calendar arithmetic that moves a timestamp by a duration.

#include <cstdint>
#include <string>

namespace foxrl {

/// One length of a walk-forward: a count of bars, or years, calendar months
/// or days of time.
struct WalkForwardPeriod {
  enum class Unit { bars, years, months, days };
  Unit unit = Unit::bars;
  std::int64_t count = 0;

  bool is_bars() const { return unit == Unit::bars; }
  /// As written on the command line: "500", "5y", "6m", "30d".
  std::string text() const;
};

/// Train, test and step of a walk-forward.
struct WalkForwardSpec {
  WalkForwardPeriod train, test, step;
  /// As written on the command line: "train=5y,test=1y,step=1y".
  std::string text() const;
};

/// Parses "train=N,test=M,step=S" (each field once, in any order), where
/// each value is a positive count of bars ("500") or a duration with a unit
/// suffix: y (years), m (calendar months) or d (days), e.g. "5y". UsageError
/// naming --walk-forward, the field and the value for anything else.
WalkForwardSpec parse_walk_forward_spec(const std::string& text);

/// `t` (unix seconds, UTC) moved forward by `times` x `period`, a duration:
/// years and months by the calendar, the time of day kept and the day of
/// the month clamped to the target month's last (2000-01-31 + 1m is
/// 2000-02-29, 2000-02-29 + 1y is 2001-02-28); days as 86400 s each (UTC
/// has no daylight saving). LogicError for a count of bars.
std::int64_t advance_by_calendar(std::int64_t t, const WalkForwardPeriod& period, std::int64_t times = 1);

}  // namespace foxrl
