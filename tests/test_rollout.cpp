// Rollouts: the CartPole trace from an explicit initial state follows the
// float64 Gymnasium equations, the CSV holds exactly the trace, and bad
// action files are rejected with the line number.
#include "core/execution_context.hpp"
#include "envs/rollout.hpp"
#include "support/env_test_util.hpp"
#include "support/test_spaces.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

TEMPLATE_TEST_CASE("CartPole rollout from an initial state follows the Gymnasium equations", "[rollout]",
                   FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context;
  foxrl::RolloutOptions options;
  options.config.env = "cartpole";
  options.config.seed = 9;
  options.initial_state = {0.01f, -0.02f, 0.03f, 0.04f};
  // Push right until the pole falls past 12 degrees, then keep going into the next episode.
  std::vector<std::int32_t> actions(40, 1);
  const auto trace = foxrl::rollout(context.space(), options, actions);
  REQUIRE(trace.size() == actions.size());
  REQUIRE(trace.obs_dim == 4);
  for (int k = 0; k < 4; ++k)
    CHECK(trace.observations[static_cast<std::size_t>(k)] ==
          static_cast<float>(options.initial_state[static_cast<std::size_t>(k)]));
  bool seen_termination = false;
  for (std::size_t step = 0; step + 1 < trace.size(); ++step) {
    double s[4];
    for (int k = 0; k < 4; ++k) s[k] = trace.observations[step * 4 + k];
    foxrl::test::cartpole_step_f64(s, trace.actions[step]);
    CHECK(trace.terminated[step] == (foxrl::test::cartpole_terminal_f64(s) ? 1 : 0));
    CHECK(trace.rewards[step] == 1.0f);
    if (trace.terminated[step]) {
      seen_termination = true;
      continue;  // the next observation is a reset one
    }
    for (int k = 0; k < 4; ++k) {
      INFO("step " << step << " component " << k);
      CHECK(std::fabs(trace.observations[(step + 1) * 4 + k] - s[k]) <= 2e-6 * std::max(1.0, std::fabs(s[k])));
    }
  }
  CHECK(seen_termination);
}

TEST_CASE("rollout writes the expected CSV and validates the action file", "[rollout]") {
  foxrl::test::TempDir dir;
  foxrl::RolloutOptions options;
  options.config.env = "cartpole";
  options.config.seed = 4;
  options.actions_path = dir.write("actions.txt", "# a comment\n0\n1\n\n1\n0\n");
  options.out_path = dir.file("out.csv");
  const auto trace = foxrl::run_rollout(options);
  REQUIRE(trace.size() == 4);
  std::ifstream in(options.out_path);
  std::string line;
  std::getline(in, line);
  CHECK(line == "step,obs_0,obs_1,obs_2,obs_3,action,reward,terminated,truncated");
  std::size_t rows = 0;
  while (std::getline(in, line)) {
    std::stringstream ss(line);
    std::string cell;
    std::vector<std::string> cells;
    while (std::getline(ss, cell, ',')) cells.push_back(cell);
    REQUIRE(cells.size() == 9);
    CHECK(std::stoul(cells[0]) == rows);
    for (int k = 0; k < 4; ++k)
      CHECK(std::stof(cells[static_cast<std::size_t>(1 + k)]) == trace.observations[rows * 4 + k]);
    CHECK(std::stoi(cells[5]) == trace.actions[rows]);
    CHECK(std::stof(cells[6]) == trace.rewards[rows]);
    CHECK(std::stoi(cells[7]) == trace.terminated[rows]);
    CHECK(std::stoi(cells[8]) == trace.truncated[rows]);
    ++rows;
  }
  CHECK(rows == 4);
  const std::vector<std::int32_t> expected_actions{0, 1, 1, 0};
  CHECK(trace.actions == expected_actions);

  // Bad action files name the file and line.
  CHECK_THROWS_WITH(foxrl::read_action_file(dir.write("bad.txt", "0\n1\n2\n"), 2),
                    Catch::Contains("bad.txt:3") && Catch::Contains("'2'"));
  CHECK_THROWS_WITH(foxrl::read_action_file(dir.write("bad2.txt", "1\nx1\n"), 3),
                    Catch::Contains("bad2.txt:2") && Catch::Contains("'x1'"));
  CHECK_THROWS_WITH(foxrl::read_action_file(dir.write("empty.txt", "\n# nothing\n"), 3), Catch::Contains("no actions"));
  // A NUL, binary bytes and a 1 MB line: quoted short and escaped.
  CHECK_THROWS_WITH(foxrl::read_action_file(dir.write("nul.txt", std::string("0\n1\n\0x\xff\n", 8)), 2),
                    Catch::Contains("nul.txt:3: action '\\x00x\\xff' is not an integer in [0, 2)"));
  CHECK_THROWS_WITH(foxrl::read_action_file(dir.write("long.txt", std::string(1 << 20, '7')), 2),
                    Catch::Contains("long.txt:1: action '777") && Catch::Contains("...' (1048576 bytes)"));
  // A byte-order mark before the first action is not part of it.
  CHECK(foxrl::read_action_file(dir.write("bom.txt",
                                          "\xEF\xBB\xBF"
                                          "1\n0\n"),
                                2) == std::vector<std::int32_t>{1, 0});
  CHECK_THROWS_AS(foxrl::parse_initial_state("1,2,3,nan"), foxrl::UsageError);
  CHECK_THROWS_AS(foxrl::parse_initial_state(""), foxrl::UsageError);
  const auto s = foxrl::parse_initial_state(" 0.5, -1 ,2e-2,0");
  REQUIRE(s.size() == 4);
  CHECK(s[0] == 0.5);
  CHECK(s[1] == -1.0);
  CHECK(s[2] == 0.02);
  // The env takes as many values as it has state variables.
  {
    foxrl::RolloutOptions three;
    three.config.env = "cartpole";
    three.actions_path = dir.write("one.txt", "1\n");
    three.initial_state = foxrl::parse_initial_state("1,2,3");
    CHECK_THROWS_WITH(foxrl::run_rollout(three), Catch::Contains("takes 4 numbers x,x_dot,theta,theta_dot, got 3"));
  }

  // Market rollout on the synthetic series: rewards use the next bar's return.
  options.config.env = "market";
  options.actions_path = dir.write("m.txt", "2\n2\n0\n1\n");
  options.config.episode_length = 3;
  options.config.synthetic = "benchmark";
  options.config.synthetic_bars = 500;
  const auto market_trace = foxrl::run_rollout(options);
  REQUIRE(market_trace.size() == 4);
  CHECK(market_trace.obs_dim == 65);
  CHECK(market_trace.truncated[2] == 1);
  CHECK(market_trace.observations[64] == 0.0f);       // flat at the start
  CHECK(market_trace.observations[65 + 64] == 1.0f);  // long after action 2
  options.initial_state = {0, 0, 0, 0};
  CHECK_THROWS_AS(foxrl::run_rollout(options), foxrl::UsageError);
}
