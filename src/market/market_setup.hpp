#pragma once
// From a training config to the market series and its time splits (host
// side, once per run): the CSV named by `data` or the built-in generator,
// split by `train_end` / `test_start` (and `test_end`, where the test split
// stops) or, without them, 70 / 15 / 15 % by time.

#include "config/train_config.hpp"
#include "kernels/market/features.hpp"
#include "market/market_data.hpp"
#include "market/market_splits.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace foxrl {

/// How a run annualises its Sharpe ratios.
struct Annualisation {
  double bars_per_year = 252;
  /// "measured" (from the timestamps, measured_bars_per_year) or "config"
  /// (the key bars_per_year).
  std::string basis = "measured";
  std::int64_t median_bar_seconds = 0;  ///< the data's median bar spacing
};

struct MarketSetup {
  MarketSeries series;  ///< from start_date on
  MarketSplits splits;
  LoadReport load_report;     ///< rows read and skipped (CSV only)
  std::size_t first_row = 0;  ///< bars of the loaded data before start_date (dropped)
  std::string data_sha256;    ///< SHA-256 of the CSV file (empty for a built-in market)
  std::string data_origin;    ///< the file path, or "synthetic:<generator>, <bars> bars, seed <seed>"
  Annualisation annualisation;
  /// One line describing the data and the splits, for the log.
  std::string describe() const;
};

MarketSetup prepare_market(const TrainConfig& config);

/// Which observation entries the signal adapter normalises: all price
/// features; not the position (already in [-1, 1]) of the returns set.
std::vector<std::uint8_t> market_normalize_mask(const ObservationSpec& spec);

/// Bars per year of a series, measured from its timestamps: bars per year
/// of elapsed time, counting only the gaps between bars up to
/// max(7 days, 10 x the median spacing) (longer ones are missing data, not
/// a market's nights, weekends and holidays). Trading-day data gives about
/// 252, daily crypto about 365, FX minutes about 5 x 52 x 1440. Fewer
/// than 3 bars: 252.
double measured_bars_per_year(const MarketSeries& series);

/// The run's annualisation: the config key bars_per_year when > 0, else
/// measured_bars_per_year.
Annualisation annualisation_of(const MarketSeries& series, double configured_bars_per_year);

/// Bars per year of a series (measured_bars_per_year; for annualising).
double bars_per_year(const MarketSeries& series);

/// Drops the bars before `start_date` (config key start_date, an ISO date
/// or time; a date means its first second); returns how many were dropped.
/// UsageError naming the key and the data's date range when no bar is left.
std::size_t apply_start_date(MarketSeries& series, const std::string& start_date);

/// Checks splits against the data before any training: the train and test
/// splits must hold bars. UsageError naming the keys (train_end,
/// test_start, test_end, start_date) and the data's date range.
void check_splits(const MarketSeries& series, const MarketSplits& splits, const TrainConfig& config);

}  // namespace foxrl
