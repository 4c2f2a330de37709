#include "core/error.hpp"
#include "io/atomic_file.hpp"
#include "io/svg_chart.hpp"
#include "market/market_evaluation.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

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
