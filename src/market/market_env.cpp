#include "market/market_env.hpp"

#include "core/strings.hpp"

#include <algorithm>
#include <cmath>

namespace foxrl {

FeatureSet parse_feature_set(const std::string& name) {
  if (name == "returns") return FeatureSet::returns;
  if (name == "ohlcv") return FeatureSet::ohlcv;
  throw UsageError("unknown feature set " + quote_excerpt(name) + " (known: returns, ohlcv)");
}

std::string feature_set_name(FeatureSet set) { return set == FeatureSet::returns ? "returns" : "ohlcv"; }

MarketSplits split_by_fraction(int bars, double train_fraction, double validation_fraction) {
  if (!(train_fraction > 0) || !(validation_fraction >= 0) || !(train_fraction + validation_fraction <= 1)) {
    throw UsageError("split fractions: need train > 0, validation >= 0 and train + validation <= 1, got train " +
                     std::to_string(train_fraction) + ", validation " + std::to_string(validation_fraction));
  }
  const int a = static_cast<int>(std::floor(bars * train_fraction));
  const int b = static_cast<int>(std::floor(bars * (train_fraction + validation_fraction)));
  return {{0, a}, {a, b}, {b, bars}};
}

MarketSplits split_by_timestamp(const MarketSeries& series, std::int64_t validation_start, std::int64_t test_start) {
  if (validation_start > test_start) {
    throw UsageError("split by time: validation start " + format_timestamp(validation_start) + " is after test start " +
                     format_timestamp(test_start));
  }
  const auto first_at = [&](std::int64_t t) {
    return static_cast<int>(std::lower_bound(series.timestamp.begin(), series.timestamp.end(), t) -
                            series.timestamp.begin());
  };
  const int a = first_at(validation_start), b = first_at(test_start);
  const int n = static_cast<int>(series.size());
  return {{0, a}, {a, b}, {b, n}};
}

}  // namespace foxrl
