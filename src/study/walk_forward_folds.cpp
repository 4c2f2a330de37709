#include "study/walk_forward_folds.hpp"

#include "core/error.hpp"
#include "market/market_data.hpp"

#include <algorithm>

namespace foxrl {
namespace {

using Unit = WalkForwardPeriod::Unit;

/// A boundary of a fold: the first bar at or after it and its nominal time
/// (for durations, the calendar moment, which may fall between bars).
struct Boundary {
  std::int64_t bar = 0;
  std::int64_t time = 0;
  bool past_end = false;  ///< beyond the data: no fold reaches it
};

/// The unit a period is counted in when periods are compared: years are
/// twelve months.
Unit common_unit(const WalkForwardPeriod& p) { return p.unit == Unit::years ? Unit::months : p.unit; }
std::int64_t count_in_common_unit(const WalkForwardPeriod& p) { return p.unit == Unit::years ? 12 * p.count : p.count; }

class Timeline {
 public:
  Timeline(const std::vector<std::int64_t>& timestamps, const WalkForwardSpan& span)
      : t_(timestamps), span_(span), n_(static_cast<std::int64_t>(timestamps.size())) {}

  Boundary anchor() const { return {0, span_.anchor, false}; }

  /// Bar `bar` (at most one past the last) and its time.
  Boundary at_bar(std::int64_t bar) const {
    if (bar > n_) return {n_, span_.data_end, true};
    return {bar, bar < n_ ? t_[static_cast<std::size_t>(bar)] : span_.data_end, false};
  }

  /// `b` moved by `times` x `period`.
  Boundary advance(const Boundary& b, const WalkForwardPeriod& period, std::int64_t times) const {
    if (b.past_end || times == 0) return b;
    if (period.is_bars()) return at_bar(b.bar + period.count * times);
    return at_time(advance_by_calendar(b.time, period, times));
  }

 private:
  Boundary at_time(std::int64_t time) const {
    if (time > span_.data_end) return {n_, time, true};
    return {std::lower_bound(t_.begin(), t_.end(), time) - t_.begin(), time, false};
  }

  const std::vector<std::int64_t>& t_;
  WalkForwardSpan span_;
  std::int64_t n_;
};

std::string date_text(std::int64_t t, std::int64_t bar_seconds) {
  const std::string iso = format_timestamp(t);
  return bar_seconds >= 86400 ? iso.substr(0, 10) : iso.substr(0, 10) + " " + iso.substr(11, 5);
}

}  // namespace

WalkForwardSpan walk_forward_span(const std::vector<std::int64_t>& timestamps, std::int64_t bar_seconds,
                                  std::int64_t anchor, std::string source) {
  if (timestamps.size() < 2) throw LogicError("walk_forward_span: fewer than 2 bars");
  WalkForwardSpan span;
  span.anchor = anchor != 0 ? std::min(anchor, timestamps.front()) : timestamps.front();
  span.data_end = timestamps.back() + std::max<std::int64_t>(bar_seconds, 1);
  span.source = std::move(source);
  return span;
}

std::vector<WalkForwardFold> walk_forward_folds(const std::vector<std::int64_t>& timestamps,
                                                const WalkForwardSpan& span, const WalkForwardSpec& spec) {
  if (timestamps.size() < 2) throw LogicError("walk_forward_folds: fewer than 2 bars");
  const Timeline line(timestamps, span);
  const bool one_unit =
      common_unit(spec.train) == common_unit(spec.test) && common_unit(spec.test) == common_unit(spec.step);
  const WalkForwardPeriod unit{common_unit(spec.step), 1};
  const std::int64_t bar_seconds = span.data_end - timestamps.back();
  const std::string where = "--walk-forward " + spec.text() + ": " + span.source + " spans " +
                            bar_range_text(timestamps, 0, static_cast<int>(timestamps.size()), bar_seconds) + " (" +
                            std::to_string(timestamps.size()) + " bars)";

  const Boundary first_train_end = line.advance(line.anchor(), spec.train, 1);
  std::vector<WalkForwardFold> folds;
  for (std::int64_t k = 0;; ++k) {
    Boundary start, train_end, test_end;
    if (one_unit) {
      const std::int64_t s = count_in_common_unit(spec.step) * k;
      const std::int64_t tr = count_in_common_unit(spec.train), te = count_in_common_unit(spec.test);
      start = line.advance(line.anchor(), unit, s);
      train_end = line.advance(line.anchor(), unit, s + tr);
      test_end = line.advance(line.anchor(), unit, s + tr + te);
    } else {
      // Units that differ: the test periods move by `step` from the first
      // one, so a step as long as test tests each bar once. (Each fold's
      // own start + train would not: 5 months after Jan 30 and after Jan 31
      // are both Jun 30, and two folds would test the same day.)
      train_end = line.advance(first_train_end, spec.step, k);
      start = spec.train.is_bars() ? line.at_bar(std::max<std::int64_t>(train_end.bar - spec.train.count, 0))
                                   : line.advance(line.anchor(), spec.step, k);
      test_end = line.advance(train_end, spec.test, 1);
    }
    if (test_end.past_end) {
      if (k == 0) {
        throw UsageError(where + ", which holds no whole fold: the first test period would end at " +
                         (spec.test.is_bars() && spec.train.is_bars()
                              ? "bar " + std::to_string(spec.train.count + spec.test.count)
                              : date_text(test_end.time, bar_seconds)) +
                         "; shorten train or test");
      }
      break;
    }
    if (k >= kMaxWalkForwardFolds) {
      throw UsageError(where + ", which gives more than " + std::to_string(kMaxWalkForwardFolds) +
                       " folds (each a training run); take a longer step");
    }
    WalkForwardFold f;
    f.index = static_cast<int>(k);
    f.train_begin = static_cast<int>(start.bar);
    f.train_end = f.test_begin = static_cast<int>(train_end.bar);
    f.test_end = static_cast<int>(test_end.bar);
    if (!folds.empty() && f.test_begin < folds.back().test_end) {
      const WalkForwardFold& prev = folds.back();
      throw UsageError("--walk-forward " + spec.text() + ": the test periods of folds " + std::to_string(prev.index) +
                       " (" + bar_range_text(timestamps, prev.test_begin, prev.test_end, bar_seconds) + ") and " +
                       std::to_string(f.index) + " (" +
                       bar_range_text(timestamps, f.test_begin, f.test_end, bar_seconds) +
                       ") overlap; step must be at least test, so each bar is tested once");
    }
    folds.push_back(f);
  }
  return folds;
}

std::string bar_range_text(const std::vector<std::int64_t>& timestamps, int begin, int end, std::int64_t bar_seconds) {
  if (end <= begin) return "no bars";
  return date_text(timestamps[static_cast<std::size_t>(begin)], bar_seconds) + " .. " +
         date_text(timestamps[static_cast<std::size_t>(end - 1)], bar_seconds);
}

}  // namespace foxrl
