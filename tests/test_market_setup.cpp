// From a config to the market: annualisation measured from the timestamps
// (trading days, crypto days, FX and round-the-clock minutes, gaps of
// missing data) or set by the key bars_per_year, the key start_date, and
// splits checked against the data before training.
#include "config/train_config.hpp"
#include "core/error.hpp"
#include "market/market_data.hpp"
#include "market/market_setup.hpp"
#include "support/env_test_util.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

namespace {

constexpr std::int64_t kDay = 86400;
constexpr std::int64_t k2001 = 978307200;  // 2001-01-01T00:00:00Z, a Monday
constexpr double kYear = 365.2425 * 86400.0;

foxrl::MarketSeries series_at(const std::vector<std::int64_t>& timestamps) {
  foxrl::MarketSeries s;
  s.source = "synthetic";
  s.timestamp = timestamps;
  const std::size_t n = timestamps.size();
  s.open.assign(n, 100);
  s.high.assign(n, 101);
  s.low.assign(n, 99);
  s.close.assign(n, 100);
  s.volume.assign(n, 1);
  return s;
}

/// Weekdays from 2001-01-01 for `years` years, less every 29th (about 9
/// holidays a year, as on a US exchange).
std::vector<std::int64_t> trading_days(int years) {
  std::vector<std::int64_t> t;
  int weekday_index = 0;
  for (std::int64_t d = 0; d < static_cast<std::int64_t>(years * 365.2425); ++d) {
    if (d % 7 >= 5) continue;  // Saturday, Sunday (day 0 is a Monday)
    if (++weekday_index % 29 == 0) continue;
    t.push_back(k2001 + d * kDay);
  }
  return t;
}

/// The closed form for a series with no gap beyond the limit: gaps counted
/// per year of elapsed time.
double expected_per_year(const std::vector<std::int64_t>& t) {
  return static_cast<double>(t.size() - 1) * kYear / static_cast<double>(t.back() - t.front());
}

std::string usage_error(const foxrl::TrainConfig& config) {
  try {
    foxrl::prepare_market(config);
  } catch (const foxrl::UsageError& e) {
    return e.what();
  }
  return "(no error)";
}

/// 100 daily bars from 2020-01-01 as CSV.
std::string daily_csv(int bars) {
  std::ostringstream out;
  out << "timestamp,open,high,low,close,volume\n";
  for (int i = 0; i < bars; ++i) out << (1577836800 + std::int64_t(i) * kDay) << ",10,11,9,10.5,1\n";
  return out.str();
}

}  // namespace

TEST_CASE("bars per year measured from timestamps: daily equities, daily crypto, minutes", "[market_setup]") {
  // Trading days: weekends are market closure, counted as elapsed time.
  const auto equities = trading_days(10);
  const double equity_rate = foxrl::measured_bars_per_year(series_at(equities));
  CHECK(equity_rate == Approx(expected_per_year(equities)).epsilon(1e-12));
  CHECK(equity_rate == Approx(252).margin(3));  // what trading-day data gives
  // Every calendar day (crypto).
  std::vector<std::int64_t> crypto;
  for (int d = 0; d < 3 * 365; ++d) crypto.push_back(k2001 + d * kDay);
  CHECK(foxrl::measured_bars_per_year(series_at(crypto)) == Approx(365.2425).epsilon(1e-12));
  // Minutes around the clock (the built-in synthetic markets).
  std::vector<std::int64_t> minutes;
  for (int i = 0; i < 20000; ++i) minutes.push_back(k2001 + i * 60);
  CHECK(foxrl::measured_bars_per_year(series_at(minutes)) == Approx(kYear / 60).epsilon(1e-12));
  // FX minutes: five days of 1440 bars, then the weekend (a 2-day gap).
  std::vector<std::int64_t> fx;
  for (int week = 0; week < 40; ++week) {
    for (int i = 0; i < 5 * 1440; ++i) fx.push_back(k2001 + week * 7 * kDay + i * 60);
  }
  const double fx_rate = foxrl::measured_bars_per_year(series_at(fx));
  CHECK(fx_rate == Approx(expected_per_year(fx)).epsilon(1e-12));
  CHECK(fx_rate == Approx(5.0 * 52 * 1440).epsilon(0.02));  // the last, unfinished week counts as elapsed time
}

TEST_CASE("bars per year: gaps of missing data do not count, and few bars give 252", "[market_setup]") {
  std::vector<std::int64_t> crypto;
  for (int d = 0; d < 400; ++d) crypto.push_back(k2001 + d * kDay);
  // Three months missing: a gap beyond max(7 days, 10 x median).
  for (int d = 490; d < 800; ++d) crypto.push_back(k2001 + d * kDay);
  CHECK(foxrl::measured_bars_per_year(series_at(crypto)) == Approx(365.2425).epsilon(1e-12));
  // Weekly bars: a 7-day median, so 3-week gaps are still bars.
  std::vector<std::int64_t> weekly;
  for (int w = 0; w < 200; ++w) weekly.push_back(k2001 + (w + (w >= 100 ? 2 : 0)) * 7 * kDay);
  CHECK(foxrl::measured_bars_per_year(series_at(weekly)) == Approx(expected_per_year(weekly)).epsilon(1e-12));
  CHECK(foxrl::measured_bars_per_year(series_at({k2001, k2001 + kDay})) == 252);
}

TEST_CASE("annualisation: the key bars_per_year overrides the measurement", "[market_setup]") {
  std::vector<std::int64_t> crypto;
  for (int d = 0; d < 100; ++d) crypto.push_back(k2001 + d * kDay);
  const auto measured = foxrl::annualisation_of(series_at(crypto), 0);
  CHECK(measured.basis == "measured");
  CHECK(measured.bars_per_year == Approx(365.2425));
  CHECK(measured.median_bar_seconds == kDay);
  const auto set = foxrl::annualisation_of(series_at(crypto), 252);
  CHECK(set.basis == "config");
  CHECK(set.bars_per_year == 252);

  foxrl::test::TempDir dir;
  foxrl::TrainConfig config;
  config.data = dir.write("daily.csv", daily_csv(100));
  CHECK(foxrl::prepare_market(config).annualisation.bars_per_year == Approx(365.2425));
  config.bars_per_year = 260;
  const auto m = foxrl::prepare_market(config);
  CHECK(m.annualisation.bars_per_year == 260);
  CHECK_THAT(m.describe(), Catch::Contains("260 bars a year (config)"));
}

TEST_CASE("start_date drops the bars before it and the splits cover the rest", "[market_setup]") {
  foxrl::test::TempDir dir;
  foxrl::TrainConfig config;
  config.data = dir.write("daily.csv", daily_csv(100));
  config.start_date = "2020-01-21";  // bar 20
  const auto m = foxrl::prepare_market(config);
  REQUIRE(m.series.size() == 80);
  CHECK(m.first_row == 20);
  CHECK(m.series.timestamp.front() == 1577836800 + 20 * kDay);
  CHECK(m.series.close.size() == 80);
  CHECK(m.splits.train.begin == 0);
  CHECK(m.splits.test.end == 80);
  CHECK(m.splits.train.size() == 56);  // 70 % of 80
  CHECK_THAT(m.describe(), Catch::Contains("from start_date (20 earlier bars dropped)"));
  // A time between bars starts at the next bar.
  config.start_date = "2020-01-20T12:00:00Z";
  CHECK(foxrl::prepare_market(config).first_row == 20);
  // Past the data, or not a timestamp: named with the data's range.
  config.start_date = "2021-01-01";
  CHECK_THAT(usage_error(config), Catch::Contains("key 'start_date' ('2021-01-01') leaves 0 bars") &&
                                      Catch::Contains("daily.csv, which spans 2020-01-01 .. 2020-04-09 (100 bars)"));
  config.start_date = "soon";
  CHECK_THAT(usage_error(config), Catch::Contains("key 'start_date'") && Catch::Contains("'soon'"));
}

TEST_CASE("splits are checked against the data before training, naming the keys and the data's range",
          "[market_setup]") {
  foxrl::test::TempDir dir;
  foxrl::TrainConfig config;
  config.data = dir.write("daily.csv", daily_csv(100));  // 2020-01-01 .. 2020-04-09
  const std::string range = "daily.csv spans 2020-01-01 .. 2020-04-09 (100 bars)";
  config.train_end = "2020-02-29";
  config.test_start = "2020-03-15";
  const auto good = foxrl::prepare_market(config);
  CHECK(good.splits.train.size() == 60);
  CHECK(good.splits.test.begin == 74);
  // A test split past the end of the data.
  config.test_start = "2021-01-01";
  CHECK_THAT(usage_error(config), Catch::Contains("'test_start' ('2021-01-01')") &&
                                      Catch::Contains("leave the test split 0 bars") && Catch::Contains(range));
  // An empty train split: train_end before the first bar.
  config.train_end = "2019-06-30";
  config.test_start = "2020-03-01";
  CHECK_THAT(usage_error(config), Catch::Contains("'train_end' ('2019-06-30')") &&
                                      Catch::Contains("leave the train split 0 bars") && Catch::Contains(range));
  // test_start not after train_end.
  config.train_end = "2020-03-01";
  config.test_start = "2020-03-01";
  CHECK_THAT(usage_error(config), Catch::Contains("key 'test_start' ('2020-03-01') must come after key 'train_end'"));
  // A bad date names its key.
  config.train_end = "2020-02-30";
  CHECK_THAT(usage_error(config), Catch::Contains("key 'train_end'") && Catch::Contains("'2020-02-30'"));
  // start_date after train_end leaves no train split.
  config.train_end = "2020-02-01";
  config.test_start = "2020-03-01";
  config.start_date = "2020-02-15";
  CHECK_THAT(usage_error(config),
             Catch::Contains("leave the train split 0 bars") &&
                 Catch::Contains("spans 2020-02-15 .. 2020-04-09 (55 bars) from key 'start_date'"));
}

TEST_CASE("bars per year of the shared data sets: trading days, crypto days, FX minutes", "[market_setup][shared]") {
  const std::string dir = FOXRL_SHARED_DATA_DIR;
  struct Expected {
    const char* file;
    double low, high;
  };
  // Closed-form values of these files (median spacing 1 day or 1 minute, no
  // gap beyond the limit): 251.6, 252.6, 365.24 and 379002.
  const Expected cases[] = {{"sp500_daily.csv", 250, 254},
                            {"vix_daily.csv", 250, 254},
                            {"btcusd_daily.csv", 365, 365.5},
                            {"eurusd_1min_2017h1.csv", 5 * 52 * 1440 * 0.98, 5 * 52 * 1440 * 1.03}};
  for (const auto& c : cases) {
    const std::string path = dir + "/" + c.file;
    if (!std::filesystem::exists(path)) {
      WARN("no shared market data " << path << ": skipped");
      continue;
    }
    foxrl::LoadOptions options;
    options.allow_implausible_bars = true;  // the BTC file has a flash-crash bar; timestamps are what counts here
    const double per_year = foxrl::measured_bars_per_year(foxrl::load_market_csv(path, options));
    INFO(c.file << ": " << per_year);
    CHECK(per_year >= c.low);
    CHECK(per_year <= c.high);
  }
}

TEST_CASE("hold_out_validation takes the train split's last bars and purges the window before them", "[market_setup]") {
  // 100 train bars, 15 % held out: validation [85, 100); a 10-bar gap ends
  // the train split at 75.
  const foxrl::MarketSplits s = foxrl::hold_out_validation({{0, 100}, {100, 100}, {100, 120}}, 0.15, 10);
  CHECK(s.train.begin == 0);
  CHECK(s.train.end == 75);
  CHECK(s.validation.begin == 85);
  CHECK(s.validation.end == 100);
  CHECK(s.test.begin == 100);
  CHECK(s.test.end == 120);
  // Fewer than one bar held out: the splits as they were.
  const foxrl::MarketSplits none = foxrl::hold_out_validation({{0, 6}, {6, 6}, {6, 9}}, 0.15, 2);
  CHECK(none.train.end == 6);
  CHECK(none.validation.size() == 0);
}

TEST_CASE("train_end and test_start without bars between them hold out the last 15 % of the training bars",
          "[market_setup]") {
  foxrl::test::TempDir dir;
  foxrl::TrainConfig config;
  config.data = dir.write("daily.csv", daily_csv(100));  // 2020-01-01 (bar 0) .. 2020-04-09 (bar 99)
  config.train_end = "2020-02-29";                       // bar 59
  config.test_start = "2020-03-01";                      // bar 60
  config.window = 16;
  // 60 training bars: floor(0.15 x 60) = 9 held out, bars 51 .. 59
  // (2020-02-21 .. 2020-02-29); the train split ends 16 bars before bar 51.
  const auto m = foxrl::prepare_market(config);
  CHECK(m.splits.train.begin == 0);
  CHECK(m.splits.train.end == 35);
  CHECK(m.splits.validation.begin == 51);
  CHECK(m.splits.validation.end == 60);
  CHECK(m.splits.test.begin == 60);
  CHECK(m.splits.test.end == 100);
  CHECK_THAT(m.describe(), Catch::Contains("train 2020-01-01 .. 2020-02-04 (35 bars), validation 2020-02-21 .. "
                                           "2020-02-29 (9 bars), test 2020-03-01 .. 2020-04-09 (40 bars)"));
  // Another fraction.
  config.validation_fraction = 0.5;  // 30 bars held out: [30, 60), train [0, 14)
  const auto half = foxrl::prepare_market(config);
  CHECK(half.splits.validation.begin == 30);
  CHECK(half.splits.train.end == 14);
  // 0: no validation split, the train split up to train_end.
  config.validation_fraction = 0;
  const auto none = foxrl::prepare_market(config);
  CHECK(none.splits.train.end == 60);
  CHECK(none.splits.validation.size() == 0);
  // Bars between train_end and test_start are the validation split, as
  // they always were; nothing is held out of the train split.
  config.validation_fraction = 0.15;
  config.test_start = "2020-03-15";  // bar 74
  const auto between = foxrl::prepare_market(config);
  CHECK(between.splits.train.end == 60);
  CHECK(between.splits.validation.begin == 60);
  CHECK(between.splits.validation.end == 74);
  // A window longer than the training bars before validation: refused,
  // naming the keys and the data's range.
  config.test_start = "2020-03-01";
  config.window = 64;
  CHECK_THAT(usage_error(config), Catch::Contains("'validation_fraction' (0.150000)") &&
                                      Catch::Contains("'window' (64") &&
                                      Catch::Contains("leave the train split 0 bars") &&
                                      Catch::Contains("daily.csv spans 2020-01-01 .. 2020-04-09 (100 bars)"));
}
