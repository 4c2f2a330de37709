#pragma once
// Market data on the host: a validating OHLCV CSV loader and the built-in
// synthetic generators used when no file is given. The series is uploaded to
// the device once (market_env.hpp); nothing here launches device work.
//
// CSV format: a header row, then one bar per line. Columns are found by name
// (case-insensitive, any order, surrounding spaces ignored, extra columns
// ignored): timestamp (or date/datetime/time), open, high, low, close,
// volume. Fields may be quoted ("..." with "" for a quote; commas inside are
// data). Timestamps are ISO-8601 (YYYY-MM-DD, YYYY-MM-DD HH:MM or
// YYYY-MM-DD HH:MM:SS[.fff], with ' ' or 'T' between date and time, then
// 'Z', an offset +HH:MM / -HH:MM converted to UTC, or nothing for UTC),
// unix seconds (an integer of up to 12 digits) or unix milliseconds (13
// digits). Series hold whole seconds: fractions are cut. Blank lines are
// ignored, and so is a UTF-8 byte-order mark at the start of the file.

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace foxrl {

/// An OHLCV series on the host, oldest bar first, timestamps strictly
/// increasing (unix seconds, UTC).
struct MarketSeries {
  std::string source;  ///< file path or generator name (for messages)
  std::vector<std::int64_t> timestamp;
  std::vector<double> open, high, low, close, volume;

  std::size_t size() const { return close.size(); }
};

/// Plausibility bound of the loader: a bar whose high is more than this
/// many times its low, or whose close differs from the previous row's close
/// by more than this factor (|log return| > log 10), is refused as a data
/// error (a price in the wrong unit, a missing decimal point, 1e300) unless
/// LoadOptions::allow_implausible_bars. Real markets stay far inside it: the
/// largest one-day move of a major index was about -23 % (log 0.77).
inline constexpr double kMaxBarMove = 10.0;

/// How the loader treats rows that fail validation.
struct LoadOptions {
  /// false: the first bad row throws UsageError. true: bad rows are skipped
  /// and counted per reason in LoadReport (missing columns, an empty file or
  /// a file with no good row still throw).
  bool skip_bad_rows = false;
  /// true: bars beyond kMaxBarMove pass (split-unadjusted series, penny
  /// assets, synthetic tests).
  bool allow_implausible_bars = false;
};

/// What the loader saw.
struct LoadReport {
  std::size_t data_lines = 0;  ///< non-blank lines after the header
  std::size_t rows_loaded = 0;
  /// reason -> count of skipped rows (skip_bad_rows only). Reasons:
  /// bad_quote, field_count, bad_timestamp, non_numeric, non_finite, non_positive_price,
  /// negative_volume, high_below_low, high_below_open_close,
  /// low_above_open_close, implausible_range, implausible_return,
  /// non_increasing_timestamp.
  std::map<std::string, std::size_t> skipped;
  std::vector<std::string> first_messages;  ///< the first few skip messages, verbatim

  std::size_t rows_skipped() const;
};

/// Loads and validates an OHLCV CSV file. Throws UsageError naming the file,
/// line, column and value of the first problem (unless skipping).
MarketSeries load_market_csv(const std::string& path, const LoadOptions& options = {}, LoadReport* report = nullptr);

/// Parses one timestamp as the loader does (unix seconds, UTC); throws
/// UsageError (message names the value) when it is neither ISO-8601 nor unix
/// seconds or milliseconds.
std::int64_t parse_timestamp(const std::string& text);

/// Formats unix seconds as YYYY-MM-DDTHH:MM:SSZ.
std::string format_timestamp(std::int64_t unix_seconds);

/// Regime-switching synthetic market: a 2-state Markov chain (calm /
/// turbulent) selects drift and GARCH(1,1) parameters; log returns are
/// r_t = mu_s + sigma_t z_t with sigma_t^2 = omega_s + alpha_s r_{t-1}^2 +
/// beta_s sigma_{t-1}^2. Bars: open = previous close, high/low stretch past
/// open/close by a half-normal multiple of sigma, volume grows with |r|.
struct RegimeMarketConfig {
  std::size_t bars = 100000;
  double start_price = 100.0;
  double p_calm_to_turbulent = 0.01;  ///< per bar
  double p_turbulent_to_calm = 0.05;  ///< per bar
  double mu[2] = {2e-4, -3e-4};
  double omega[2] = {2e-7, 2e-6};
  double alpha[2] = {0.05, 0.10};
  double beta[2] = {0.90, 0.85};
  double base_volume = 1e6;
  std::int64_t start_time = 1483228800;  ///< 2017-01-01T00:00:00Z
  std::int64_t bar_seconds = 60;
};
MarketSeries generate_regime_market(const RegimeMarketConfig& config, std::uint64_t seed);

/// The benchmark series (docs BENCHMARKS.md, "Market replay"): log returns
/// r[i] = 0.01 z[i] + 0.002 sin(2 pi i / 10000), z ~ N(0, 1) from `seed`,
/// as bars whose close-to-close log return (bar 0: close/open) is r[i].
MarketSeries generate_benchmark_market(std::size_t bars, std::uint64_t seed);

/// Generator names for the command line: "regime" and "benchmark".
std::vector<std::string> synthetic_market_names();
/// Builds the named generator's series of `bars` bars; throws UsageError for
/// an unknown name.
MarketSeries make_synthetic_market(const std::string& name, std::size_t bars, std::uint64_t seed);

/// Log returns of a series as the device features define them:
/// log(close[t] / close[t-1]), bar 0: log(close[0] / open[0]). Host float64
/// reference for tests and tools.
std::vector<double> host_log_returns(const MarketSeries& series);

}  // namespace foxrl
