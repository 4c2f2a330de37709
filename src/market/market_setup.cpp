#include "market/market_setup.hpp"

#include "core/error.hpp"

#include <algorithm>
#include <sstream>

namespace foxrl {

MarketSetup prepare_market(const TrainConfig& config) {
  MarketSetup m;
  if (config.data.empty()) {
    m.series = make_synthetic_market(config.synthetic, static_cast<std::size_t>(config.synthetic_bars), config.seed);
  } else {
    LoadOptions options;
    options.skip_bad_rows = config.skip_bad_rows;
    options.allow_implausible_bars = config.allow_implausible_bars;
    m.series = load_market_csv(config.data, options, &m.load_report);
  }
  const int bars = static_cast<int>(m.series.size());
  if (config.train_end.empty() && config.test_start.empty()) {
    m.splits = split_by_fraction(bars, 0.70, 0.15);
  } else {
    if (config.train_end.empty() || config.test_start.empty()) {
      throw UsageError("config: set both 'train_end' and 'test_start', or neither (70/15/15 % split)");
    }
    const std::int64_t train_end = parse_timestamp(config.train_end);
    // A date alone means the whole day.
    const std::int64_t last_train = config.train_end.size() <= 10 ? train_end + 86399 : train_end;
    m.splits = split_by_timestamp(m.series, last_train + 1, parse_timestamp(config.test_start));
  }
  return m;
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
  out << "; train " << span(splits.train) << ", validation " << span(splits.validation) << ", test "
      << span(splits.test);
  return out.str();
}

std::vector<std::uint8_t> market_normalize_mask(const ObservationSpec& spec) {
  std::vector<std::uint8_t> mask(static_cast<std::size_t>(spec.obs_dim()), 1);
  if (spec.set == FeatureSet::returns) mask.back() = 0;
  return mask;
}

double bars_per_year(const MarketSeries& series) {
  if (series.size() < 3) return 252.0;
  std::vector<std::int64_t> gaps;
  for (std::size_t i = 1; i < series.size(); ++i) gaps.push_back(series.timestamp[i] - series.timestamp[i - 1]);
  std::nth_element(gaps.begin(), gaps.begin() + gaps.size() / 2, gaps.end());
  const double gap = static_cast<double>(gaps[gaps.size() / 2]);
  if (gap >= 86400 * 0.5) return 252.0;  // daily bars: trading days
  // Intraday bars trade around the clock five days a week (FX-like).
  return 5.0 * 52.0 * 86400.0 / std::max(gap, 1.0);
}

}  // namespace foxrl
