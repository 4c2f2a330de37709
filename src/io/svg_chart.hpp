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

/// Renders the series into an SVG document with axes, tick labels and a
/// legend. Non-finite values are skipped (gaps in the line).
std::string render_line_chart(const std::string& title, const std::string& x_label, const std::string& y_label,
                              const std::vector<ChartSeries>& series);

}  // namespace foxrl
