#include "io/svg_chart.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <utility>
#include <vector>

namespace foxrl {
namespace {

constexpr double kWidth = 800, kHeight = 450;
constexpr double kLeft = 70, kRight = 170, kTop = 40, kBottom = 50;
const char* const kColours[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"};

std::string escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string number(double v) {
  std::ostringstream s;
  s.precision(4);
  s << v;
  return s.str();
}

/// Y ticks in axis units: 5 evenly spaced on a linear axis; on a log axis
/// (log10 units) the round values 1, 2, 3, 5 x 10^k inside the range, or
/// powers of 10 (every n-th) when those are too many, or 5 evenly spaced
/// when the range holds fewer than 3 round values.
std::vector<double> y_ticks(double lo, double hi, bool log_axis) {
  std::vector<double> even;
  for (int i = 0; i <= 4; ++i) even.push_back(lo + (hi - lo) * i / 4);
  if (!log_axis) return even;
  const double eps = 1e-9 * std::max(1.0, hi - lo);
  const auto first_decade = static_cast<int>(std::floor(lo)), last_decade = static_cast<int>(std::ceil(hi));
  std::vector<double> round;
  for (int k = first_decade; k <= last_decade; ++k) {
    for (const double m : {1.0, 2.0, 3.0, 5.0}) {
      const double y = k + std::log10(m);
      if (y >= lo - eps && y <= hi + eps) round.push_back(y);
    }
  }
  if (round.size() > 8) {
    round.clear();
    const int step = std::max(1, (last_decade - first_decade) / 6);
    for (int k = first_decade; k <= last_decade; ++k) {
      if ((k - first_decade) % step == 0 && k >= lo - eps && k <= hi + eps) round.push_back(k);
    }
  }
  return round.size() >= 3 ? round : even;
}

}  // namespace

std::string render_line_chart(const std::string& title, const std::string& x_label, const std::string& y_label,
                              const std::vector<ChartSeries>& series, const ChartOptions& options) {
  // On a log axis the chart works in log10(value); a value it cannot place
  // (non-finite, or <= 0 on a log axis) lifts the pen.
  const auto axis = [&](double v) {
    if (options.log_y) return v > 0 ? std::log10(v) : std::numeric_limits<double>::quiet_NaN();
    return v;
  };
  double y_min = std::numeric_limits<double>::infinity();
  double y_max = -y_min;
  std::size_t x_count = 1;
  for (const auto& s : series) {
    x_count = std::max(x_count, s.values.size());
    for (double v : s.values) {
      const double a = axis(v);
      if (std::isfinite(a)) {
        y_min = std::min(y_min, a);
        y_max = std::max(y_max, a);
      }
    }
  }
  if (!std::isfinite(y_min)) y_min = 0, y_max = 1;
  if (y_max - y_min < 1e-12) y_min -= 0.5, y_max += 0.5;
  const double plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
  // Y tick labels first: the left margin makes room for the longest (about
  // 7 pixels a character) beside the axis title.
  std::vector<std::pair<double, std::string>> y_labels;
  std::size_t longest_tick = 0;
  for (const double y : y_ticks(y_min, y_max, options.log_y)) {
    y_labels.emplace_back(y, number(options.log_y ? std::pow(10.0, y) : y));
    longest_tick = std::max(longest_tick, y_labels.back().second.size());
  }
  const double left = std::max(kLeft, 34.0 + 7.0 * static_cast<double>(longest_tick));
  // The legend's column widens the canvas for long names (about 7 pixels a
  // character at 12 px) instead of letting them run off its edge.
  std::size_t longest = 0;
  for (const auto& s : series) longest = std::max(longest, s.name.size());
  // A long title (about 8.5 pixels a character at 15 px) widens it too.
  const double width = std::max(left + plot_w + std::max(kRight, 52.0 + 7.0 * static_cast<double>(longest)),
                                20.0 + 8.5 * static_cast<double>(title.size()));
  const double x_span = x_count > 1 ? static_cast<double>(x_count - 1) : 1.0;
  auto px = [&](double x) { return left + x / x_span * plot_w; };
  auto py = [&](double y) { return kTop + (y_max - y) / (y_max - y_min) * plot_h; };

  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << kHeight
      << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      << "<text x=\"" << width / 2 << "\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">" << escape(title)
      << "</text>\n";
  for (const auto& [y, label] : y_labels) {
    svg << "<line x1=\"" << left << "\" x2=\"" << left + plot_w << "\" y1=\"" << py(y) << "\" y2=\"" << py(y)
        << "\" stroke=\"#ddd\"/>\n<text x=\"" << left - 6 << "\" y=\"" << py(y) + 4 << "\" text-anchor=\"end\">"
        << label << "</text>\n";
  }
  // As many X ticks (5 at most) as their labels fit without overlapping:
  // the end labels hang inwards from the plot's edges, the others are
  // centred, so neighbours need 1.5 label widths apart (about 7 pixels a
  // character) plus a gap.
  std::size_t longest_x_label = 0;
  for (const auto& label : options.x_labels) longest_x_label = std::max(longest_x_label, label.size());
  if (options.x_labels.empty()) longest_x_label = number(x_span).size();
  const double min_spacing = 1.5 * 7.0 * static_cast<double>(longest_x_label) + 12.0;
  int intervals = 4;
  while (intervals > 1 && plot_w / intervals < min_spacing) --intervals;
  for (int i = 0; i <= intervals; ++i) {
    // Ticks at whole data positions, labelled with that position's text.
    const auto x = static_cast<std::size_t>(std::llround(x_span * i / intervals));
    if (i > 0 && x == static_cast<std::size_t>(std::llround(x_span * (i - 1) / intervals))) continue;
    const std::string label = x < options.x_labels.size() ? options.x_labels[x] : number(static_cast<double>(x));
    const char* anchor = i == 0 ? "start" : (i == intervals ? "end" : "middle");  // the end labels stay on the canvas
    svg << "<text x=\"" << px(static_cast<double>(x)) << "\" y=\"" << kTop + plot_h + 18 << "\" text-anchor=\""
        << anchor << "\">" << escape(label) << "</text>\n";
  }
  svg << "<rect x=\"" << left << "\" y=\"" << kTop << "\" width=\"" << plot_w << "\" height=\"" << plot_h
      << "\" fill=\"none\" stroke=\"#333\"/>\n"
      << "<text x=\"" << left + plot_w / 2 << "\" y=\"" << kHeight - 10 << "\" text-anchor=\"middle\">"
      << escape(x_label) << "</text>\n"
      << "<text transform=\"translate(16," << kTop + plot_h / 2 << ") rotate(-90)\" text-anchor=\"middle\">"
      << escape(y_label) << "</text>\n";
  for (std::size_t k = 0; k < series.size(); ++k) {
    const char* colour = kColours[k % (sizeof(kColours) / sizeof(kColours[0]))];
    // A point cloud too large for the page is thinned to about two per pixel.
    const std::size_t n = series[k].values.size();
    const std::size_t stride = std::max<std::size_t>(1, n / static_cast<std::size_t>(2 * plot_w));
    svg << "<path fill=\"none\" stroke=\"" << colour << "\" stroke-width=\"1.5\" d=\"";
    bool pen_down = false;
    for (std::size_t i = 0; i < n; i = (i + stride < n || i + 1 == n) ? i + stride : n - 1) {
      // (thinned, the last point is still drawn: the curve ends where the data ends)
      const double v = axis(series[k].values[i]);
      if (!std::isfinite(v)) {
        pen_down = false;
        continue;
      }
      svg << (pen_down ? "L" : "M") << number(px(static_cast<double>(i))) << "," << number(py(v)) << " ";
      pen_down = true;
    }
    svg << "\"/>\n";
    const double ly = kTop + 14 + 18 * static_cast<double>(k);
    svg << "<line x1=\"" << left + plot_w + 12 << "\" x2=\"" << left + plot_w + 36 << "\" y1=\"" << ly - 4 << "\" y2=\""
        << ly - 4 << "\" stroke=\"" << colour << "\" stroke-width=\"2\"/>\n<text x=\"" << left + plot_w + 42
        << "\" y=\"" << ly << "\">" << escape(series[k].name) << "</text>\n";
  }
  svg << "</svg>\n";
  return svg.str();
}

}  // namespace foxrl
