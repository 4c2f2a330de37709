#pragma once
// The time splits of a market series: train, validation and test, ranges of
// bars consecutive in time that never overlap, and the ways a run cuts them
// (by fraction, by timestamp, a validation split held out of the train
// split's end).

#include "market/market_data.hpp"
#include "views/envs/env_traits.hpp"

#include <cstdint>

namespace foxrl {

/// A range of bars [begin, end) that one split's episodes own.
struct MarketSplit {
  int begin = 0;
  int end = 0;
  int size() const { return end - begin; }
};

/// Train / validation / test, consecutive in time, not overlapping.
struct MarketSplits {
  MarketSplit train, validation, test;

  /// The split `which` names; EnvSplit::whole: every bar, [0, test.end).
  MarketSplit of(EnvSplit which) const {
    switch (which) {
      case EnvSplit::train:
        return train;
      case EnvSplit::validation:
        return validation;
      case EnvSplit::test:
        return test;
      case EnvSplit::whole:
        break;
    }
    return {0, test.end};
  }
};

/// Splits `bars` bars by fraction: train the first `train_fraction`, then
/// validation `validation_fraction`, test the rest.
MarketSplits split_by_fraction(int bars, double train_fraction, double validation_fraction);
/// Splits by time: validation starts at the first bar with timestamp >=
/// validation_start, test at the first with timestamp >= test_start.
MarketSplits split_by_timestamp(const MarketSeries& series, std::int64_t validation_start, std::int64_t test_start);

/// Holds out the last `fraction` of the train split's bars as the
/// validation split (which must be empty, at the train split's end) and
/// ends the train split `gap` bars before it: a validation observation
/// looks back `gap` bars (the observation window), so none reads a bar the
/// train split's episodes were rewarded on. floor(fraction x train bars)
/// bars are held out; none: the splits as they are.
MarketSplits hold_out_validation(MarketSplits splits, double fraction, int gap);

}  // namespace foxrl
