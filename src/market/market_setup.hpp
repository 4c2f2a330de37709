#pragma once
// From a training config to the market series and its time splits (host
// side, once per run): the CSV named by `data` or the built-in generator,
// split by `train_end` / `test_start` or, without them, 70 / 15 / 15 % by time.

#include "config/train_config.hpp"
#include "market/market_data.hpp"
#include "market/market_env.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace foxrl {

struct MarketSetup {
  MarketSeries series;
  MarketSplits splits;
  LoadReport load_report;  ///< rows read and skipped (CSV only)
  /// One line describing the data and the splits, for the log.
  std::string describe() const;
};

MarketSetup prepare_market(const TrainConfig& config);

/// Which observation entries the signal adapter normalises: all price
/// features; not the position (already in [-1, 1]) of the returns set.
std::vector<std::uint8_t> market_normalize_mask(const ObservationSpec& spec);

/// Bars per year of a series, from its median bar spacing (for annualising).
double bars_per_year(const MarketSeries& series);

}  // namespace foxrl
