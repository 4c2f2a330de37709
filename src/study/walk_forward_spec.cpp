#include "study/walk_forward_spec.hpp"

#include "core/error.hpp"
#include "core/strings.hpp"
#include "market/market_data.hpp"

#include <cstdio>
#include <map>
#include <vector>

namespace foxrl {
namespace {

/// The largest count of each unit: bar indices are ints, and a hundred
/// years of minute bars stay far below; durations up to a millennium.
std::int64_t max_count(WalkForwardPeriod::Unit unit) {
  switch (unit) {
    case WalkForwardPeriod::Unit::bars:
      return 1000000000;
    case WalkForwardPeriod::Unit::years:
      return 1000;
    case WalkForwardPeriod::Unit::months:
      return 12000;
    case WalkForwardPeriod::Unit::days:
      return 366000;
  }
  return 0;
}

const char* kForms =
    "a count of bars (e.g. 500) or a duration with a unit: y years, m calendar months, d days "
    "(e.g. 5y, 6m, 30d)";

WalkForwardPeriod parse_period(const std::string& field, const std::string& value) {
  const auto bad = [&](const std::string& why) {
    return UsageError("--walk-forward: field '" + field + "' value " + quote_excerpt(value, 40) + " " + why);
  };
  if (value.empty()) throw bad("is empty: expected " + std::string(kForms));
  WalkForwardPeriod p;
  std::string digits = value;
  const char last = value.back();
  if (last == 'y' || last == 'm' || last == 'd') {
    p.unit = last == 'y' ? WalkForwardPeriod::Unit::years
                         : (last == 'm' ? WalkForwardPeriod::Unit::months : WalkForwardPeriod::Unit::days);
    digits.pop_back();
  }
  if (digits.empty()) throw bad("has no number: expected " + std::string(kForms));
  for (const char c : digits) {
    if (c < '0' || c > '9') throw bad("is not " + std::string(kForms));
  }
  if (digits.size() > 12) throw bad("is too large (at most " + std::to_string(max_count(p.unit)) + ")");
  p.count = std::stoll(digits);
  if (p.count < 1) throw bad("must be at least 1");
  if (p.count > max_count(p.unit)) {
    throw bad("is too large (at most " + std::to_string(max_count(p.unit)) +
              (p.is_bars() ? " bars)" : std::string(" ") + last + ")"));
  }
  return p;
}

bool is_leap(std::int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

int days_in_month(std::int64_t y, int m) {
  static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && is_leap(y) ? 29 : days[m - 1];
}

/// `t` moved by `months` calendar months. The civil date comes from the
/// timestamp's own formatting and goes back through its parser, so the
/// calendar conversion is the one the data loader uses.
std::int64_t add_months(std::int64_t t, std::int64_t months) {
  const std::string iso = format_timestamp(t);  // YYYY-MM-DDTHH:MM:SSZ
  const std::int64_t year = std::stoll(iso.substr(0, 4));
  const int month = std::stoi(iso.substr(5, 2)), day = std::stoi(iso.substr(8, 2));
  const std::int64_t index = year * 12 + (month - 1) + months;
  const std::int64_t new_year = index / 12;
  const int new_month = static_cast<int>(index % 12) + 1;
  const int new_day = day < days_in_month(new_year, new_month) ? day : days_in_month(new_year, new_month);
  char date[32];
  std::snprintf(date, sizeof date, "%04lld-%02d-%02d", static_cast<long long>(new_year), new_month, new_day);
  return parse_timestamp(std::string(date) + iso.substr(10));
}

}  // namespace

std::string WalkForwardPeriod::text() const {
  switch (unit) {
    case Unit::bars:
      return std::to_string(count);
    case Unit::years:
      return std::to_string(count) + "y";
    case Unit::months:
      return std::to_string(count) + "m";
    case Unit::days:
      return std::to_string(count) + "d";
  }
  return std::to_string(count);
}

std::string WalkForwardSpec::text() const {
  return "train=" + train.text() + ",test=" + test.text() + ",step=" + step.text();
}

WalkForwardSpec parse_walk_forward_spec(const std::string& text) {
  const std::string expected = "expected train=N,test=M,step=S, each " + std::string(kForms);
  if (text.empty()) throw UsageError("--walk-forward: empty; " + expected);
  std::vector<std::string> parts;
  std::size_t from = 0;
  while (true) {
    const std::size_t comma = text.find(',', from);
    parts.push_back(text.substr(from, comma == std::string::npos ? std::string::npos : comma - from));
    if (comma == std::string::npos) break;
    from = comma + 1;
  }
  std::map<std::string, WalkForwardPeriod> fields;
  for (const std::string& part : parts) {
    const std::size_t eq = part.find('=');
    if (eq == std::string::npos) {
      throw UsageError("--walk-forward: " + quote_excerpt(part, 40) + " in " + quote_excerpt(text, 80) +
                       " is not field=value; " + expected);
    }
    const std::string field = part.substr(0, eq);
    if (field != "train" && field != "test" && field != "step") {
      throw UsageError("--walk-forward: unknown field " + quote_excerpt(field, 40) + " in " + quote_excerpt(text, 80) +
                       " (fields: train, test, step)");
    }
    if (fields.count(field) != 0) {
      throw UsageError("--walk-forward: field '" + field + "' given twice in " + quote_excerpt(text, 80));
    }
    fields[field] = parse_period(field, part.substr(eq + 1));
  }
  for (const char* field : {"train", "test", "step"}) {
    if (fields.count(field) == 0) {
      throw UsageError("--walk-forward: field '" + std::string(field) + "' missing in " + quote_excerpt(text, 80) +
                       "; " + expected);
    }
  }
  return {fields["train"], fields["test"], fields["step"]};
}

std::int64_t advance_by_calendar(std::int64_t t, const WalkForwardPeriod& period, std::int64_t times) {
  switch (period.unit) {
    case WalkForwardPeriod::Unit::bars:
      throw LogicError("advance_by_calendar: " + period.text() + " is a count of bars, not a duration");
    case WalkForwardPeriod::Unit::years:
      return add_months(t, 12 * period.count * times);
    case WalkForwardPeriod::Unit::months:
      return add_months(t, period.count * times);
    case WalkForwardPeriod::Unit::days:
      return t + 86400 * period.count * times;
  }
  throw LogicError("advance_by_calendar: unknown unit");
}

}  // namespace foxrl
