#include "market/market_splits.hpp"

#include "core/error.hpp"

#include <algorithm>
#include <cmath>
#include <string>

namespace foxrl {

MarketSplits hold_out_validation(MarketSplits splits, double fraction, int gap) {
  if (!(fraction >= 0 && fraction < 1) || gap < 0 || splits.validation.size() != 0 ||
      splits.validation.begin != splits.train.end) {
    throw LogicError("hold_out_validation: fraction " + std::to_string(fraction) + ", gap " + std::to_string(gap) +
                     ", validation [" + std::to_string(splits.validation.begin) + ", " +
                     std::to_string(splits.validation.end) + ") after a train split ending at " +
                     std::to_string(splits.train.end));
  }
  const int held_out = static_cast<int>(std::floor(splits.train.size() * fraction));
  if (held_out == 0) return splits;
  splits.validation = {splits.train.end - held_out, splits.train.end};
  splits.train.end = std::max(splits.train.begin, splits.validation.begin - gap);
  return splits;
}

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
