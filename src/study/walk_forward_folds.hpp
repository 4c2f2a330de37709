#pragma once
// The folds of a walk-forward evaluation over a series of bars: fold k
// trains on [start + k step, start + k step + train) and tests on the
// `test` that follows, with each length a count of bars or a calendar
// duration (study/walk_forward_spec.hpp). Host code, from the timestamps
// alone, before anything trains.

#include "study/walk_forward_spec.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace foxrl {

/// The most folds one walk-forward trains (each fold is a training run).
inline constexpr int kMaxWalkForwardFolds = 1000;

/// One fold as bar ranges of the series: train [train_begin, train_end),
/// test [test_begin, test_end), test_begin == train_end.
struct WalkForwardFold {
  int index = 0;
  int train_begin = 0, train_end = 0;
  int test_begin = 0, test_end = 0;
  int train_bars() const { return train_end - train_begin; }
  int test_bars() const { return test_end - test_begin; }
};

/// Where the folds of a series start and where its data ends.
struct WalkForwardSpan {
  /// Durations count from here (unix seconds): the config's start_date when
  /// it falls within the data (so `1y` folds can start on January 1st
  /// although the first bar comes later), else the first bar's timestamp.
  std::int64_t anchor = 0;
  /// The data's end in time: the last bar's timestamp plus one bar spacing
  /// (the median), the moment its last bar's period closes. A duration
  /// fold whose test period ends after it runs past the data.
  std::int64_t data_end = 0;
  std::string source;  ///< the data's name, for messages
};

/// The span of `timestamps` (strictly increasing, at least 2) with
/// `bar_seconds` its median spacing and `anchor` the first moment used
/// (0: the first bar); `source` names the data in messages.
WalkForwardSpan walk_forward_span(const std::vector<std::int64_t>& timestamps, std::int64_t bar_seconds,
                                  std::int64_t anchor = 0, std::string source = "the data");

/// The folds of `spec` over bars with these timestamps. Boundaries in bars
/// count bars; durations move a fold's nominal start and ends along the
/// calendar (advance_by_calendar) from span.anchor, and a period in time
/// holds the bars whose timestamps fall in it. When train, test and step
/// share a unit (years and months count as months), every boundary is
/// measured from the anchor (fold k's test ends at anchor + k step + train
/// + test exactly, so the folds' test periods tile without drift from
/// month ends); otherwise fold k starts at anchor + k step and its ends
/// follow one period after the other.
///
/// Folds stop at the first whose test period runs past the data (bars:
/// past the last bar; durations: past span.data_end): an incomplete last
/// period is dropped, never truncated, so every fold tests on a whole
/// period. UsageError naming --walk-forward, the spec and the data's date
/// range when not even one fold fits, and when the test periods of two
/// folds overlap (step shorter than test) or there are more than
/// kMaxWalkForwardFolds folds.
std::vector<WalkForwardFold> walk_forward_folds(const std::vector<std::int64_t>& timestamps,
                                                const WalkForwardSpan& span, const WalkForwardSpec& spec);

/// "YYYY-MM-DD .. YYYY-MM-DD" of bars [begin, end) (with the time of day
/// when bars are shorter than a day), for logs and messages.
std::string bar_range_text(const std::vector<std::int64_t>& timestamps, int begin, int end, std::int64_t bar_seconds);

}  // namespace foxrl
