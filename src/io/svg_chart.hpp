#pragma once
// Line charts as standalone SVG files (equity curves, learning curves): no
// plotting dependency, readable in any browser.

#include <string>
#include <vector>

namespace foxrl {

struct ChartSeries {
  std::string name;
  std::vector<double> values;  ///< y values at x = 0, 1, 2, ...
};

/// How a chart draws its axes.
struct ChartOptions {
  /// Logarithmic y axis (equity curves that compound over years); values
  /// <= 0 are skipped like non-finite ones.
  bool log_y = false;
  /// Text of the x tick at each x position (e.g. the bars' dates); empty:
  /// the position itself.
  std::vector<std::string> x_labels;
};

/// Renders the series into an SVG document with axes, tick labels and a
/// legend. Non-finite values are skipped (gaps in the line). X ticks sit at
/// whole data positions.
std::string render_line_chart(const std::string& title, const std::string& x_label, const std::string& y_label,
                              const std::vector<ChartSeries>& series, const ChartOptions& options = {});

}  // namespace foxrl
