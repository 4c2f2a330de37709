// Walk-forward folds: the --walk-forward spec parser (bars, y/m/d, bad
// input named by field and value), calendar arithmetic over month ends and
// leap years, and folds over small timestamp series whose bar ranges are
// counted by hand.
#include "core/error.hpp"
#include "market/market_data.hpp"
#include "study/walk_forward_folds.hpp"
#include "study/walk_forward_spec.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace {

using foxrl::WalkForwardPeriod;
using Unit = foxrl::WalkForwardPeriod::Unit;

constexpr std::int64_t kDay = 86400;

std::int64_t at(const std::string& iso) { return foxrl::parse_timestamp(iso); }

/// One bar a day (every calendar day) from `first` for `days` days.
std::vector<std::int64_t> daily(const std::string& first, int days) {
  std::vector<std::int64_t> t;
  for (int d = 0; d < days; ++d) t.push_back(at(first) + d * kDay);
  return t;
}

std::string usage_error_of(const std::string& spec) {
  try {
    foxrl::parse_walk_forward_spec(spec);
  } catch (const foxrl::UsageError& e) {
    return e.what();
  }
  return "(no error)";
}

struct Expected {
  int train_begin, train_end, test_end;
};

void require_folds(const std::vector<foxrl::WalkForwardFold>& folds, const std::vector<Expected>& expected) {
  REQUIRE(folds.size() == expected.size());
  for (std::size_t k = 0; k < folds.size(); ++k) {
    INFO("fold " << k);
    CHECK(folds[k].index == static_cast<int>(k));
    CHECK(folds[k].train_begin == expected[k].train_begin);
    CHECK(folds[k].train_end == expected[k].train_end);
    CHECK(folds[k].test_begin == expected[k].train_end);
    CHECK(folds[k].test_end == expected[k].test_end);
  }
}

std::vector<foxrl::WalkForwardFold> folds_of(const std::vector<std::int64_t>& t, const std::string& spec,
                                             std::int64_t anchor = 0) {
  return foxrl::walk_forward_folds(t, foxrl::walk_forward_span(t, kDay, anchor, "test.csv"),
                                   foxrl::parse_walk_forward_spec(spec));
}

}  // namespace

TEST_CASE("the walk-forward spec reads bars, years, months and days in any order", "[walk_forward]") {
  const auto a = foxrl::parse_walk_forward_spec("train=5y,test=1y,step=1y");
  CHECK(a.train.unit == Unit::years);
  CHECK(a.train.count == 5);
  CHECK(a.test.unit == Unit::years);
  CHECK(a.test.count == 1);
  CHECK(a.step.count == 1);
  CHECK(a.text() == "train=5y,test=1y,step=1y");

  const auto b = foxrl::parse_walk_forward_spec("step=250,test=250,train=1000");
  CHECK(b.train.unit == Unit::bars);
  CHECK(b.train.count == 1000);
  CHECK(b.test.count == 250);
  CHECK(b.step.count == 250);
  CHECK(b.text() == "train=1000,test=250,step=250");

  const auto c = foxrl::parse_walk_forward_spec("train=18m,test=30d,step=2m");
  CHECK(c.train.unit == Unit::months);
  CHECK(c.train.count == 18);
  CHECK(c.test.unit == Unit::days);
  CHECK(c.test.count == 30);
  CHECK(c.step.unit == Unit::months);
  CHECK(c.step.count == 2);
}

TEST_CASE("bad walk-forward specs are refused naming the field and the value", "[walk_forward]") {
  using Catch::Matchers::Contains;
  CHECK_THAT(usage_error_of("train=5x,test=1y,step=1y"), Contains("field 'train'") && Contains("'5x'"));
  CHECK_THAT(usage_error_of("train=5y,test=-1,step=1y"), Contains("field 'test'") && Contains("'-1'"));
  CHECK_THAT(usage_error_of("train=5y,test=1y,step=0"), Contains("field 'step'") && Contains("at least 1"));
  CHECK_THAT(usage_error_of("train=5Y,test=1y,step=1y"), Contains("field 'train'") && Contains("'5Y'"));
  CHECK_THAT(usage_error_of("train=1.5y,test=1y,step=1y"), Contains("field 'train'") && Contains("'1.5y'"));
  CHECK_THAT(usage_error_of("train= 5y,test=1y,step=1y"), Contains("field 'train'") && Contains("' 5y'"));
  CHECK_THAT(usage_error_of("train=y,test=1y,step=1y"), Contains("field 'train'") && Contains("no number"));
  CHECK_THAT(usage_error_of("train=,test=1y,step=1y"), Contains("field 'train'") && Contains("empty"));
  CHECK_THAT(usage_error_of("train=5y,test=1y,step=1001y"), Contains("field 'step'") && Contains("too large"));
  CHECK_THAT(usage_error_of("train=99999999999999999999,test=1,step=1"),
             Contains("field 'train'") && Contains("too large"));
  CHECK_THAT(usage_error_of("train=5y,test=1y"), Contains("field 'step' missing"));
  CHECK_THAT(usage_error_of("train=5y,test=1y,step=1y,test=2y"), Contains("field 'test' given twice"));
  CHECK_THAT(usage_error_of("train=5y,test=1y,stride=1y"), Contains("unknown field 'stride'"));
  CHECK_THAT(usage_error_of("train=5y,,test=1y,step=1y"), Contains("is not field=value"));
  CHECK_THAT(usage_error_of("5y,1y,1y"), Contains("'5y'") && Contains("is not field=value"));
  CHECK_THAT(usage_error_of(""), Contains("--walk-forward: empty"));
  for (const char* bad : {"train=5x,test=1y,step=1y", "train=5y,test=1y", ""}) {
    CHECK_THAT(usage_error_of(bad), Contains("--walk-forward"));
  }
}

TEST_CASE("calendar durations keep the time of day and clamp to month ends", "[walk_forward]") {
  const WalkForwardPeriod month{Unit::months, 1}, year{Unit::years, 1}, day{Unit::days, 1};
  // Month ends in a leap year and in a common year.
  CHECK(foxrl::advance_by_calendar(at("2000-01-31"), month) == at("2000-02-29"));
  CHECK(foxrl::advance_by_calendar(at("2001-01-31"), month) == at("2001-02-28"));
  CHECK(foxrl::advance_by_calendar(at("2000-03-31"), month) == at("2000-04-30"));
  // Counted from the same start, no drift from the clamped month between.
  CHECK(foxrl::advance_by_calendar(at("2000-01-31"), month, 2) == at("2000-03-31"));
  CHECK(foxrl::advance_by_calendar(at("2000-12-15T13:45:00Z"), month) == at("2001-01-15T13:45:00Z"));
  // Leap days: 2000 is a leap year (divisible by 400), 2100 is not.
  CHECK(foxrl::advance_by_calendar(at("2000-02-29"), year) == at("2001-02-28"));
  CHECK(foxrl::advance_by_calendar(at("2000-02-29"), year, 4) == at("2004-02-29"));
  CHECK(foxrl::advance_by_calendar(at("2096-02-29"), year, 4) == at("2100-02-28"));
  CHECK(foxrl::advance_by_calendar(at("2000-01-01"), WalkForwardPeriod{Unit::years, 5}) == at("2005-01-01"));
  // Days are 86400 s: across a leap day.
  CHECK(foxrl::advance_by_calendar(at("2000-02-28"), day, 2) == at("2000-03-01"));
  CHECK(foxrl::advance_by_calendar(at("2000-02-28T06:00:00Z"), WalkForwardPeriod{Unit::days, 30}) ==
        at("2000-02-28T06:00:00Z") + 30 * kDay);
  CHECK_THROWS_AS(foxrl::advance_by_calendar(0, WalkForwardPeriod{Unit::bars, 5}), foxrl::LogicError);
}

TEST_CASE("walk-forward folds in bars", "[walk_forward]") {
  const auto t = daily("2000-01-01", 10);
  // train [s, s+4), test [s+4, s+6), s = 0, 2, 4; the next would test bars 10, 11.
  require_folds(folds_of(t, "train=4,test=2,step=2"), {{0, 4, 6}, {2, 6, 8}, {4, 8, 10}});
  // A step longer than test leaves bars between the test periods untested.
  require_folds(folds_of(t, "train=3,test=2,step=3"), {{0, 3, 5}, {3, 6, 8}});
  // The whole data in one fold.
  require_folds(folds_of(t, "train=7,test=3,step=5"), {{0, 7, 10}});
}

TEST_CASE("walk-forward folds in years over daily bars with leap years", "[walk_forward]") {
  // 2000 (leap, 366 days) .. 2004 (leap): 366 + 365 + 365 + 365 + 366 = 1827 bars.
  const auto t = daily("2000-01-01", 1827);
  // Fold 0 trains on 2000-2001 (bars 0 .. 730), tests 2002 (731 .. 1095);
  // fold 1 trains on 2001-2002 (366 .. 1095), tests 2003 (1096 .. 1460);
  // fold 2 trains on 2002-2003, tests 2004 (1461 .. 1826), ending with the
  // data (its last bar's day closes at 2005-01-01); a fold testing 2005
  // runs past it.
  require_folds(folds_of(t, "train=2y,test=1y,step=1y"), {{0, 731, 1096}, {366, 1096, 1461}, {731, 1461, 1827}});
  // The same in months.
  require_folds(folds_of(t, "train=24m,test=12m,step=12m"), {{0, 731, 1096}, {366, 1096, 1461}, {731, 1461, 1827}});
  // One day less of data: 2004's test period is incomplete and dropped.
  const std::vector<std::int64_t> short_t(t.begin(), t.end() - 1);
  require_folds(folds_of(short_t, "train=2y,test=1y,step=1y"), {{0, 731, 1096}, {366, 1096, 1461}});
}

TEST_CASE("walk-forward folds in months from a month end", "[walk_forward]") {
  // Daily bars 2000-01-31 .. 2000-06-15 (137 bars): day index 29 is
  // 02-29, 60 is 03-31, 90 is 04-30, 121 is 05-31.
  const auto t = daily("2000-01-31", 137);
  // Fold 0: train 01-31 .. 02-28 (bars 0 .. 28), test 02-29 .. 03-30;
  // fold 1: train 02-29 .. 03-30, test 03-31 .. 04-29; fold 2: train
  // 03-31 .. 04-29, test 04-30 .. 05-30; fold 3 would test to 06-30.
  require_folds(folds_of(t, "train=1m,test=1m,step=1m"), {{0, 29, 60}, {29, 60, 90}, {60, 90, 121}});
}

TEST_CASE("walk-forward folds mixing bars and durations, and from start_date", "[walk_forward]") {
  // 2000-01-01 .. 2000-03-31 (91 bars; Feb 1 is bar 31, Mar 1 bar 60).
  const auto t = daily("2000-01-01", 91);
  // Fold k starts at 2000-01-01 + k months, trains 10 bars and tests one
  // month from its 11th bar: fold 0 tests 01-11 .. 02-10, fold 1 (from
  // 02-01, bar 31) tests 02-11 .. 03-10; fold 2 would test to 04-11.
  require_folds(folds_of(t, "train=10,test=1m,step=1m"), {{0, 10, 41}, {31, 41, 70}});
  // Durations count from the anchor (start_date), not the first bar: bars
  // from 01-03 (89 bars), anchored at 01-01: fold 0 trains 01-03 .. 01-31
  // (29 bars) and tests February (29 bars, a leap year), fold 1 trains
  // February and tests March.
  const std::vector<std::int64_t> from_third(t.begin() + 2, t.end());
  require_folds(folds_of(from_third, "train=1m,test=1m,step=1m", at("2000-01-01")), {{0, 29, 58}, {29, 58, 89}});
}

TEST_CASE("walk-forward folds that cannot be are refused naming the data's dates", "[walk_forward]") {
  using Catch::Matchers::Contains;
  const auto t = daily("2000-01-01", 10);
  CHECK_THROWS_WITH(folds_of(t, "train=8,test=4,step=1"),
                    Contains("--walk-forward train=8,test=4,step=1") && Contains("test.csv spans") &&
                        Contains("2000-01-01 .. 2000-01-10") && Contains("10 bars") && Contains("no whole fold"));
  CHECK_THROWS_WITH(folds_of(t, "train=1y,test=1m,step=1m"), Contains("no whole fold") && Contains("2001-02-01"));
  CHECK_THROWS_WITH(folds_of(t, "train=4,test=3,step=2"),
                    Contains("overlap") && Contains("step must be at least test"));
  const auto many = daily("2000-01-01", 1100);
  CHECK_THROWS_WITH(folds_of(many, "train=1,test=1,step=1"), Contains("more than 1000 folds"));
}

TEST_CASE("walk-forward folds of months of training and a daily test tile the days", "[walk_forward]") {
  // 2000-01-01 .. 2000-07-18 (200 daily bars). Training 5 months from Jan 30
  // and from Jan 31 both end at Jun 30 by the calendar; the test days must
  // still move one day per fold, each day tested once.
  const auto t = daily("2000-01-01", 200);
  const auto folds = folds_of(t, "train=5m,test=1d,step=1d");
  // The first test day is 2000-06-01 (bar 152); the last is the last bar.
  REQUIRE(folds.size() == 200 - 152);
  for (std::size_t k = 0; k < folds.size(); ++k) {
    INFO("fold " << k);
    CHECK(folds[k].test_begin == 152 + static_cast<int>(k));
    CHECK(folds[k].test_end == folds[k].test_begin + 1);
    CHECK(folds[k].train_begin == static_cast<int>(k));  // one day later per fold
  }
  // A test longer than the step still overlaps, and says so.
  CHECK_THROWS_WITH(folds_of(t, "train=5m,test=2d,step=1d"), Catch::Contains("step must be at least test"));
}
