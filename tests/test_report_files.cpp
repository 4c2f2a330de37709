#include "core/error.hpp"
#include "io/atomic_file.hpp"
#include "io/svg_chart.hpp"
#include "market/market_evaluation.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {
std::string read_all(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}
}  // namespace

TEST_CASE("atomic write replaces a file and reports failures with the path", "[io]") {
  const std::string path = std::string(P_tmpdir) + "/foxrl_atomic_test.txt";
  foxrl::write_file_atomically(path, "first");
  foxrl::write_file_atomically(path, "second version");
  CHECK(read_all(path) == "second version");
  std::remove(path.c_str());
  CHECK_THROWS_WITH(foxrl::write_file_atomically("/nonexistent-dir/x/file.txt", "x"),
                    Catch::Contains("/nonexistent-dir/x/file.txt"));
}

TEST_CASE("line chart holds one path per series, a legend, and skips non-finite points", "[io]") {
  const auto svg = foxrl::render_line_chart("Equity <test>", "bar", "equity",
                                            {{"agent", {1.0, 1.1, NAN, 1.3}}, {"buy & hold", {1.0, 0.9, 0.95, 1.0}}});
  CHECK(svg.rfind("<svg", 0) == 0);
  CHECK_THAT(svg, Catch::Contains("Equity &lt;test&gt;") && Catch::Contains("buy &amp; hold"));
  std::size_t paths = 0;
  for (auto pos = svg.find("<path"); pos != std::string::npos; pos = svg.find("<path", pos + 1)) ++paths;
  CHECK(paths == 2);
  // The NaN lifts the pen: the agent's line restarts with a move.
  const auto agent = svg.substr(svg.find("<path"), svg.find("/>", svg.find("<path")) - svg.find("<path"));
  std::size_t moves = 0;
  for (char c : agent) moves += c == 'M';
  CHECK(moves == 2);
  CHECK_THAT(svg, !Catch::Contains("nan"));
}

TEST_CASE("evaluation table keeps its columns for ordinary and astronomic returns", "[io][evaluation]") {
  foxrl::EvaluationReport report;
  report.split_description = "test split";
  report.bars = 10;
  foxrl::StrategyResult agent, flat;
  agent.name = "agent (greedy DQN)";
  agent.metrics.total_return = 5.344e53;  // compounding on a synthetic market
  agent.metrics.sharpe = 50.2;
  flat.name = "always flat";
  flat.metrics.total_return = -0.1234;
  report.strategies = {agent, flat};
  const std::string table = report.table();
  CHECK_THAT(table, Catch::Contains("5.344e+55%"));
  CHECK_THAT(table, Catch::Contains("-12.34%"));
  // Every row is as wide as the header.
  std::istringstream lines(table);
  std::string line, header;
  std::getline(lines, line);  // "Evaluation on ..."
  std::getline(lines, header);
  while (std::getline(lines, line)) CHECK(line.size() == header.size());
}

TEST_CASE("line chart on a log axis skips values <= 0 and labels x ticks at data positions", "[io]") {
  foxrl::ChartOptions options;
  options.log_y = true;
  options.x_labels = {"d0", "d1", "d2", "d3", "d4", "d5", "d6", "d7", "d8"};
  const auto svg = foxrl::render_line_chart("Equity", "bar", "equity",
                                            {{"agent", {1, 10, 100, -1, 1000, 100, 10, 1, 0.1}}}, options);
  // Y ticks at 5 evenly spaced log values from 0.1 to 1000: 0.1, 1, 10, 100, 1000.
  for (const char* tick : {">0.1<", ">1<", ">10<", ">100<", ">1000<"}) CHECK_THAT(svg, Catch::Contains(tick));
  // X ticks at positions 0, 2, 4, 6, 8 (whole positions of 8 x i / 4), with their labels.
  for (const char* tick : {">d0<", ">d2<", ">d4<", ">d6<", ">d8<"}) CHECK_THAT(svg, Catch::Contains(tick));
  CHECK_THAT(svg, !Catch::Contains(">d1<") && !Catch::Contains(">d3<"));
  // The end labels stay on the canvas.
  CHECK_THAT(svg, Catch::Contains("text-anchor=\"start\">d0<") && Catch::Contains("text-anchor=\"end\">d8<"));
  // -1 has no logarithm: the pen lifts there, so the line restarts once.
  const auto path = svg.substr(svg.find("<path"), svg.find("/>", svg.find("<path")) - svg.find("<path"));
  std::size_t moves = 0;
  for (char c : path) moves += c == 'M';
  CHECK(moves == 2);
  CHECK_THAT(svg, !Catch::Contains("nan") && !Catch::Contains("inf"));
  // Within one decade the ticks are round values (1, 2, 3, 5 x 10^k), not
  // the range's fifths.
  const auto narrow = foxrl::render_line_chart("Equity", "UTC", "equity", {{"agent", {1, 0.28, 1.7}}}, options);
  for (const char* tick : {">0.3<", ">0.5<", ">1<"}) CHECK_THAT(narrow, Catch::Contains(tick));
  CHECK_THAT(narrow, !Catch::Contains(">0.28<") && !Catch::Contains(">1.7<"));
}

TEST_CASE("line chart draws the last point of a thinned series", "[io]") {
  // 10000 points on a 560-pixel plot are thinned with a stride of 8; 9999 is
  // not a multiple of it, and the line must still end at the last x.
  std::vector<double> values(10000);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<double>(i);
  const auto svg = foxrl::render_line_chart("t", "x", "y", {{"s", values}});
  const auto start = svg.find(" d=\"", svg.find("<path")) + 4;
  const auto path = svg.substr(start, svg.find('"', start) - start);
  // The plot's right edge: kLeft 70 + plot width 560.
  CHECK_THAT(path, Catch::Contains("L630,"));
}

TEST_CASE("line chart widens its canvas for long legend names", "[io]") {
  const auto width_of = [](const std::string& svg) {
    const auto at = svg.find("width=\"") + 7;
    return std::stod(svg.substr(at, svg.find('"', at) - at));
  };
  const auto short_names = foxrl::render_line_chart("t", "x", "y", {{"agent", {1, 2}}});
  CHECK(width_of(short_names) == 800);
  // 30 characters at about 7 pixels each, after the 52-pixel swatch.
  const auto long_names = foxrl::render_line_chart("t", "x", "y", {{std::string(30, 'n'), {1, 2}}});
  CHECK(width_of(long_names) == 70 + 560 + 52 + 7 * 30);
}

TEST_CASE("line chart makes room on the left for long y tick labels", "[io]") {
  // Ticks 0.0001 .. 0.0014 print with up to 4 significant digits, e.g.
  // "0.000425": the plot's frame moves right of 70 pixels to fit them.
  const auto svg = foxrl::render_line_chart("Loss", "epoch", "loss", {{"loss", {0.0014, 0.0001}}});
  std::size_t longest = 0;
  for (auto at = svg.find("text-anchor=\"end\">"); at != std::string::npos;
       at = svg.find("text-anchor=\"end\">", at + 1)) {
    const auto start = at + 18;
    longest = std::max(longest, svg.find('<', start) - start);
  }
  REQUIRE(longest >= 8);
  const double left = 34.0 + 7.0 * static_cast<double>(longest);
  std::ostringstream frame;
  frame << "<rect x=\"" << left << "\" y=\"40\" width=\"560\"";
  CHECK_THAT(svg, Catch::Contains(frame.str()));
}

TEST_CASE("line chart spaces long x tick labels so that none overlaps its neighbours", "[io]") {
  foxrl::ChartOptions options;
  for (int i = 0; i < 97; ++i) options.x_labels.push_back("2017-03-" + std::to_string(10 + i % 20) + " 07:00");
  const auto svg =
      foxrl::render_line_chart("Equity", "UTC", "equity", {{"agent", std::vector<double>(97, 1.0)}}, options);
  // Each x label's extent at about 7 pixels a character (the chart's own
  // estimate), from its anchor: start hangs right, end hangs left, middle
  // is centred.
  struct Extent {
    double from, to;
  };
  std::vector<Extent> extents;
  for (auto at = svg.find("<text x=\""); at != std::string::npos; at = svg.find("<text x=\"", at + 1)) {
    const auto close = svg.find('>', at);
    const std::string tag = svg.substr(at, close - at);
    const std::string text = svg.substr(close + 1, svg.find('<', close) - close - 1);
    if (text.rfind("2017-", 0) != 0) continue;
    const double x = std::stod(tag.substr(9));
    const double w = 7.0 * static_cast<double>(text.size());
    if (tag.find("\"start\"") != std::string::npos)
      extents.push_back({x, x + w});
    else if (tag.find("\"end\"") != std::string::npos)
      extents.push_back({x - w, x});
    else
      extents.push_back({x - w / 2, x + w / 2});
  }
  REQUIRE(extents.size() >= 2);
  CHECK(extents.size() < 5);  // 16-character labels do not fit five to 560 pixels
  for (std::size_t i = 1; i < extents.size(); ++i) {
    INFO("label " << i);
    CHECK(extents[i].from >= extents[i - 1].to + 6.0);
  }
  // Short labels keep five ticks.
  foxrl::ChartOptions short_labels;
  for (int i = 0; i < 9; ++i) short_labels.x_labels.push_back("e" + std::to_string(i));
  const auto five = foxrl::render_line_chart("t", "x", "y", {{"s", std::vector<double>(9, 1.0)}}, short_labels);
  for (const char* tick : {">e0<", ">e2<", ">e4<", ">e6<", ">e8<"}) CHECK_THAT(five, Catch::Contains(tick));
}

TEST_CASE("line chart widens its canvas for a long title", "[io]") {
  const std::string title(100, 't');
  const auto svg = foxrl::render_line_chart(title, "x", "y", {{"s", {1, 2}}});
  const auto at = svg.find("width=\"") + 7;
  // 100 characters at about 8.5 pixels each at 15 px, plus a margin.
  CHECK(std::stod(svg.substr(at, svg.find('"', at) - at)) >= 850.0);
}
