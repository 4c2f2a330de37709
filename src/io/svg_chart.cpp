#include "io/svg_chart.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

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

}  // namespace

std::string render_line_chart(const std::string& title, const std::string& x_label, const std::string& y_label,
                              const std::vector<ChartSeries>& series) {
  double y_min = std::numeric_limits<double>::infinity();
  double y_max = -y_min;
  std::size_t x_count = 1;
  for (const auto& s : series) {
    x_count = std::max(x_count, s.values.size());
    for (double v : s.values) {
      if (std::isfinite(v)) {
        y_min = std::min(y_min, v);
        y_max = std::max(y_max, v);
      }
    }
  }
  if (!std::isfinite(y_min)) y_min = 0, y_max = 1;
  if (y_max - y_min < 1e-12) y_min -= 0.5, y_max += 0.5;
  const double plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
  const double x_span = x_count > 1 ? static_cast<double>(x_count - 1) : 1.0;
  auto px = [&](double x) { return kLeft + x / x_span * plot_w; };
  auto py = [&](double y) { return kTop + (y_max - y) / (y_max - y_min) * plot_h; };

  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kWidth << "\" height=\"" << kHeight
      << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      << "<text x=\"" << kWidth / 2 << "\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">" << escape(title)
      << "</text>\n";
  for (int i = 0; i <= 4; ++i) {
    const double y = y_min + (y_max - y_min) * i / 4;
    svg << "<line x1=\"" << kLeft << "\" x2=\"" << kLeft + plot_w << "\" y1=\"" << py(y) << "\" y2=\"" << py(y)
        << "\" stroke=\"#ddd\"/>\n<text x=\"" << kLeft - 6 << "\" y=\"" << py(y) + 4 << "\" text-anchor=\"end\">"
        << number(y) << "</text>\n";
    const double x = x_span * i / 4;
    svg << "<text x=\"" << px(x) << "\" y=\"" << kTop + plot_h + 18 << "\" text-anchor=\"middle\">"
        << number(std::round(x)) << "</text>\n";
  }
  svg << "<rect x=\"" << kLeft << "\" y=\"" << kTop << "\" width=\"" << plot_w << "\" height=\"" << plot_h
      << "\" fill=\"none\" stroke=\"#333\"/>\n"
      << "<text x=\"" << kLeft + plot_w / 2 << "\" y=\"" << kHeight - 10 << "\" text-anchor=\"middle\">"
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
    for (std::size_t i = 0; i < n; i += stride) {
      const double v = series[k].values[i];
      if (!std::isfinite(v)) {
        pen_down = false;
        continue;
      }
      svg << (pen_down ? "L" : "M") << number(px(static_cast<double>(i))) << "," << number(py(v)) << " ";
      pen_down = true;
    }
    svg << "\"/>\n";
    const double ly = kTop + 14 + 18 * static_cast<double>(k);
    svg << "<line x1=\"" << kLeft + plot_w + 12 << "\" x2=\"" << kLeft + plot_w + 36 << "\" y1=\"" << ly - 4
        << "\" y2=\"" << ly - 4 << "\" stroke=\"" << colour << "\" stroke-width=\"2\"/>\n<text x=\""
        << kLeft + plot_w + 42 << "\" y=\"" << ly << "\">" << escape(series[k].name) << "</text>\n";
  }
  svg << "</svg>\n";
  return svg.str();
}

}  // namespace foxrl
