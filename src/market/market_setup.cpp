#include "market/market_setup.hpp"

#include "core/error.hpp"
#include "core/strings.hpp"
#include "io/sha256.hpp"

#include <algorithm>
#include <cstddef>
#include <sstream>

namespace foxrl {

namespace {

/// "YYYY-MM-DD .. YYYY-MM-DD (N bars)" of a whole series, for messages.
std::string date_range(const MarketSeries& series) {
  if (series.size() == 0) return "no bars";
  return format_timestamp(series.timestamp.front()).substr(0, 10) + " .. " +
         format_timestamp(series.timestamp.back()).substr(0, 10) + " (" + std::to_string(series.size()) + " bars)";
}

/// The timestamp of config key `key`; a bad one names the key.
std::int64_t parse_config_timestamp(const char* key, const std::string& value) {
  try {
    return parse_timestamp(value);
  } catch (const UsageError& e) {
    throw UsageError(std::string("config: key '") + key + "': " + e.what());
  }
}

/// The end (one past the last bar) of a test split cut by key test_end; a
/// date alone means the whole day, like train_end.
int test_split_end(const MarketSeries& series, const TrainConfig& config, std::int64_t test_start) {
  const std::int64_t test_end = parse_config_timestamp("test_end", config.test_end);
  const std::int64_t last_test = config.test_end.size() <= 10 ? test_end + 86399 : test_end;
  if (last_test < test_start) {
    throw UsageError("config: key 'test_end' (" + quote_excerpt(config.test_end, 40) +
                     ") must not come before key 'test_start' (" + quote_excerpt(config.test_start, 40) + ")");
  }
  return static_cast<int>(std::upper_bound(series.timestamp.begin(), series.timestamp.end(), last_test) -
                          series.timestamp.begin());
}

}  // namespace

MarketSetup prepare_market(const TrainConfig& config) {
  MarketSetup m;
  if (config.data.empty()) {
    m.series = make_synthetic_market(config.synthetic, static_cast<std::size_t>(config.synthetic_bars), config.seed);
    m.data_origin = "synthetic:" + config.synthetic + ", " + std::to_string(config.synthetic_bars) + " bars, seed " +
                    std::to_string(config.seed);
  } else {
    m.data_origin = config.data;
    LoadOptions options;
    options.skip_bad_rows = config.skip_bad_rows;
    options.allow_implausible_bars = config.allow_implausible_bars;
    m.series = load_market_csv(config.data, options, &m.load_report);
    m.data_sha256 = sha256_file_hex(config.data);
  }
  if (!config.start_date.empty()) m.first_row = apply_start_date(m.series, config.start_date);
  const int bars = static_cast<int>(m.series.size());
  if (!config.test_end.empty() && (config.train_end.empty() || config.test_start.empty())) {
    throw UsageError("config: key 'test_end' (" + quote_excerpt(config.test_end, 40) +
                     ") needs 'train_end' and 'test_start' too");
  }
  if (config.train_end.empty() && config.test_start.empty()) {
    m.splits = split_by_fraction(bars, 0.70, 0.15);
  } else {
    if (config.train_end.empty() || config.test_start.empty()) {
      throw UsageError("config: set both 'train_end' and 'test_start', or neither (70/15/15 % split)");
    }
    const std::int64_t train_end = parse_config_timestamp("train_end", config.train_end);
    const std::int64_t test_start = parse_config_timestamp("test_start", config.test_start);
    // A date alone means the whole day.
    const std::int64_t last_train = config.train_end.size() <= 10 ? train_end + 86399 : train_end;
    if (test_start <= last_train) {
      throw UsageError("config: key 'test_start' (" + quote_excerpt(config.test_start, 40) +
                       ") must come after key 'train_end' (" + quote_excerpt(config.train_end, 40) + ")");
    }
    m.splits = split_by_timestamp(m.series, last_train + 1, test_start);
    if (!config.test_end.empty()) m.splits.test.end = test_split_end(m.series, config, test_start);
    // No bar between train_end and test_start: the validation split is the
    // end of the training period, purged by the observation window.
    if (m.splits.validation.size() == 0 && config.validation_fraction > 0) {
      m.splits = hold_out_validation(m.splits, config.validation_fraction, static_cast<int>(config.window));
    }
  }
  check_splits(m.series, m.splits, config);
  m.annualisation = annualisation_of(m.series, config.bars_per_year);
  return m;
}

std::size_t apply_start_date(MarketSeries& series, const std::string& start_date) {
  const std::int64_t start = parse_config_timestamp("start_date", start_date);
  const auto first = static_cast<std::size_t>(
      std::lower_bound(series.timestamp.begin(), series.timestamp.end(), start) - series.timestamp.begin());
  if (series.size() - first < 2) {
    throw UsageError("config: key 'start_date' (" + quote_excerpt(start_date, 40) + ") leaves " +
                     std::to_string(series.size() - first) + " bars of " + series.source + ", which spans " +
                     date_range(series));
  }
  const auto cut = [&](auto& v) { v.erase(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(first)); };
  cut(series.timestamp);
  cut(series.open);
  cut(series.high);
  cut(series.low);
  cut(series.close);
  cut(series.volume);
  return first;
}

void check_splits(const MarketSeries& series, const MarketSplits& splits, const TrainConfig& config) {
  const bool by_time = !config.train_end.empty();
  const std::string train_end = "'train_end' (" + quote_excerpt(config.train_end, 40) + ")";
  const std::string test_start = "'test_start' (" + quote_excerpt(config.test_start, 40) + ")";
  const std::string keys = !by_time                  ? "the 70/15/15 % split"
                           : config.test_end.empty() ? "keys " + train_end + " and " + test_start
                                                     : "keys " + train_end + ", " + test_start + " and 'test_end' (" +
                                                           quote_excerpt(config.test_end, 40) + ")";
  const std::string span =
      series.source + " spans " + date_range(series) + (config.start_date.empty() ? "" : " from key 'start_date'");
  // The envs need a few bars of each split beyond the observation window;
  // MarketEnv names those limits. Here: splits that hold nothing at all.
  if (by_time && splits.validation.size() > 0 && splits.validation.begin > splits.train.end &&
      splits.train.size() < 2) {
    throw UsageError("config: keys 'train_end' (" + quote_excerpt(config.train_end, 40) + "), 'validation_fraction' (" +
                     std::to_string(config.validation_fraction) + ") and 'window' (" + std::to_string(config.window) +
                     ", the bars between the train and validation splits) leave the train split " +
                     std::to_string(splits.train.size()) + " bars: " + span +
                     "; set 'train_end' later or 'validation_fraction' lower (0: no validation split)");
  }
  if (splits.train.size() < 2) {
    throw UsageError("config: " + keys + " leave the train split " + std::to_string(splits.train.size()) +
                     " bars: " + span + (by_time ? "; set 'train_end' after its first bars" : ""));
  }
  if (splits.test.size() < 2) {
    throw UsageError("config: " + keys + " leave the test split " + std::to_string(splits.test.size()) +
                     " bars: " + span + (by_time ? "; set 'test_start' before its last bars" : ""));
  }
}

Annualisation annualisation_of(const MarketSeries& series, double configured_bars_per_year) {
  Annualisation a;
  if (series.size() >= 2) {
    std::vector<std::int64_t> gaps;
    for (std::size_t i = 1; i < series.size(); ++i) gaps.push_back(series.timestamp[i] - series.timestamp[i - 1]);
    std::nth_element(gaps.begin(), gaps.begin() + static_cast<std::ptrdiff_t>(gaps.size() / 2), gaps.end());
    a.median_bar_seconds = gaps[gaps.size() / 2];
  }
  if (configured_bars_per_year > 0) {
    a.bars_per_year = configured_bars_per_year;
    a.basis = "config";
  } else {
    a.bars_per_year = measured_bars_per_year(series);
    a.basis = "measured";
  }
  return a;
}

double measured_bars_per_year(const MarketSeries& series) {
  if (series.size() < 3) return 252.0;
  std::vector<std::int64_t> gaps;
  for (std::size_t i = 1; i < series.size(); ++i) gaps.push_back(series.timestamp[i] - series.timestamp[i - 1]);
  std::vector<std::int64_t> sorted = gaps;
  std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(sorted.size() / 2), sorted.end());
  const double median = static_cast<double>(sorted[sorted.size() / 2]);
  const double limit = std::max(7.0 * 86400.0, 10.0 * median);
  double seconds = 0, counted = 0;
  for (const std::int64_t g : gaps) {
    if (static_cast<double>(g) > limit) continue;
    seconds += static_cast<double>(g);
    counted += 1;
  }
  constexpr double seconds_per_year = 365.2425 * 86400.0;  // Gregorian mean year
  return counted > 0 && seconds > 0 ? counted * seconds_per_year / seconds : 252.0;
}

std::string MarketSetup::describe() const {
  std::ostringstream out;
  auto span = [&](const MarketSplit& s) {
    if (s.size() <= 0) return std::string("empty");
    return format_timestamp(series.timestamp[static_cast<std::size_t>(s.begin)]).substr(0, 10) + " .. " +
           format_timestamp(series.timestamp[static_cast<std::size_t>(s.end - 1)]).substr(0, 10) + " (" +
           std::to_string(s.size()) + " bars)";
  };
  out << series.source << ": " << series.size() << " bars";
  if (load_report.rows_skipped() > 0) out << " (" << load_report.rows_skipped() << " bad rows skipped)";
  if (first_row > 0) out << " from start_date (" << first_row << " earlier bars dropped)";
  out << "; train " << span(splits.train) << ", validation " << span(splits.validation) << ", test "
      << span(splits.test) << "; Sharpe annualised over " << annualisation.bars_per_year << " bars a year ("
      << annualisation.basis << ")";
  return out.str();
}

std::vector<std::uint8_t> market_normalize_mask(const ObservationSpec& spec) {
  std::vector<std::uint8_t> mask(static_cast<std::size_t>(spec.obs_dim()), 1);
  if (spec.set == FeatureSet::returns) mask.back() = 0;
  return mask;
}

double bars_per_year(const MarketSeries& series) { return measured_bars_per_year(series); }

}  // namespace foxrl
