// `foxrl dataset info` and the statistics behind it, on a hand-built dataset
// whose episodes are known: counts, flags, the action histogram and the
// behaviour episodes' returns (complete episodes only, followed through the
// interleaved rows of several envs) against values computed here from the
// episode list; a dataset whose rows break the recorded order gets no
// return statistics and says why.
#include "offline/dataset_file.hpp"
#include "offline/dataset_statistics.hpp"
#include "support/dataset_builder.hpp"
#include "support/env_test_util.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <sys/wait.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

using foxrl::test::EpisodeSpec;
using foxrl::test::HostDataset;

/// Three envs; env 2's last step falls in the partial last iteration's gap
/// (7, 7 and 6 steps: 20 rows).
HostDataset known_episodes() {
  return HostDataset::from_episodes({
      {EpisodeSpec{{1, 2, 3}, true, false}, EpisodeSpec{{0.5f, 0.5f}, false, true}, EpisodeSpec{{4, 4}, false, false}},
      {EpisodeSpec{{10}, true, false}, EpisodeSpec{{-1, -2, -3}, true, false}, EpisodeSpec{{2, 2, 2}, false, true}},
      {EpisodeSpec{{0.25f, 0.25f, 0.25f, 0.25f, 0.25f, 0.25f}, false, false}},
  });
}

/// The complete episodes of known_episodes(), by hand.
const std::vector<double> known_returns = {6, 1, 10, -6, 6};
const std::vector<double> known_lengths = {3, 2, 1, 3, 3};

struct Expected {
  double mean, std, min, max;
};

Expected reference(const std::vector<double>& v) {
  double mean = 0;
  for (double x : v) mean += x / double(v.size());
  double var = 0;
  for (double x : v) var += (x - mean) * (x - mean) / double(v.size());
  double lo = v[0], hi = v[0];
  for (double x : v) lo = std::min(lo, x), hi = std::max(hi, x);
  return {mean, std::sqrt(var), lo, hi};
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST_CASE("dataset statistics: counts, histogram and episode returns of known episodes", "[offline][dataset-info]") {
  foxrl::test::TempDir dir;
  const HostDataset ref = known_episodes();
  REQUIRE(ref.rows() == 20);
  const std::string path = dir.file("known.safetensors");
  ref.write(path);
  const auto stats = foxrl::dataset_statistics(foxrl::read_dataset_file(path));
  CHECK(stats.transitions == 20);
  CHECK(stats.obs_dim == 4);
  CHECK(stats.num_actions == 2);
  CHECK(stats.num_envs == 3);
  CHECK(stats.terminated == 3);
  CHECK(stats.truncated == 2);
  std::vector<std::int64_t> histogram(2, 0);
  for (const auto a : ref.actions) ++histogram[std::size_t(a)];
  CHECK(stats.action_counts == histogram);
  REQUIRE(stats.episodes_exact);
  CHECK(stats.why.empty());
  CHECK(stats.unfinished == 2);  // env 0's and env 2's last episodes
  const Expected r = reference(known_returns);
  CHECK(r.mean == Approx(3.4).epsilon(1e-15));
  CHECK(r.std == Approx(std::sqrt(30.24)).epsilon(1e-15));
  CHECK(stats.returns.count == 5);
  CHECK(stats.returns.mean == Approx(r.mean).epsilon(1e-12));
  CHECK(stats.returns.std == Approx(r.std).epsilon(1e-12));
  CHECK(stats.returns.min == -6);
  CHECK(stats.returns.max == 10);
  const Expected l = reference(known_lengths);
  CHECK(stats.lengths.count == 5);
  CHECK(stats.lengths.mean == Approx(l.mean).epsilon(1e-12));
  CHECK(stats.lengths.std == Approx(l.std).epsilon(1e-12));
  CHECK(stats.lengths.min == 1);
  CHECK(stats.lengths.max == 3);
}

TEST_CASE("dataset statistics: rows out of the recorded order give no episode returns", "[offline][dataset-info]") {
  foxrl::test::TempDir dir;
  HostDataset ref = known_episodes();
  SECTION("two rows of one env swapped") {
    // Rows 3 and 6 are env 0's steps 1 and 2 (inside its first episode).
    for (int j = 0; j < 4; ++j) std::swap(ref.observations[3 * 4 + j], ref.observations[6 * 4 + j]);
    const std::string path = dir.file("swapped.safetensors");
    ref.write(path);
    const auto stats = foxrl::dataset_statistics(foxrl::read_dataset_file(path));
    CHECK_FALSE(stats.episodes_exact);
    CHECK_THAT(stats.why, Catch::Contains("row 3's observation is not row 0's next observation"));
    CHECK(stats.returns.count == 0);
    CHECK(stats.transitions == 20);  // the counts still hold
    CHECK(stats.terminated == 3);
  }
  SECTION("no row order in the metadata") {
    auto f = ref.file();
    f.metadata.erase("row_order");
    const std::string path = dir.file("unordered.safetensors");
    foxrl::safetensors::write(path, f);
    const auto stats = foxrl::dataset_statistics(foxrl::read_dataset_file(path));
    CHECK_FALSE(stats.episodes_exact);
    CHECK_THAT(stats.why, Catch::Contains("'row_order'"));
  }
}

#ifdef FOXRL_CLI_PATH
TEST_CASE("foxrl dataset info prints the statistics of known episodes", "[offline][dataset-info][cli]") {
  foxrl::test::TempDir dir;
  const HostDataset ref = known_episodes();
  const std::string path = dir.file("known.safetensors");
  ref.write(path);
  const std::string cli = std::string("\"") + FOXRL_CLI_PATH + "\" dataset info ";
  REQUIRE(std::system((cli + "--json \"" + path + "\" > \"" + dir.file("info.json") + "\"").c_str()) == 0);
  const auto j = nlohmann::json::parse(slurp(dir.file("info.json")));
  CHECK(j.at("file") == path);
  CHECK(j.at("env") == "cartpole");
  CHECK(j.at("transitions") == 20);
  CHECK(j.at("obs_dim") == 4);
  CHECK(j.at("num_actions") == 2);
  CHECK(j.at("num_envs") == 3);
  CHECK(j.at("terminated") == 3);
  CHECK(j.at("truncated") == 2);
  std::vector<std::int64_t> histogram(2, 0);
  for (const auto a : ref.actions) ++histogram[std::size_t(a)];
  CHECK(j.at("action_counts").get<std::vector<std::int64_t>>() == histogram);
  const auto& e = j.at("episodes");
  CHECK(e.at("exact") == true);
  CHECK(e.at("complete") == 5);
  CHECK(e.at("unfinished") == 2);
  const Expected r = reference(known_returns);
  CHECK(e.at("return").at("count") == 5);
  CHECK(e.at("return").at("mean").get<double>() == Approx(r.mean).epsilon(1e-12));
  CHECK(e.at("return").at("std").get<double>() == Approx(r.std).epsilon(1e-12));
  CHECK(e.at("return").at("min").get<double>() == -6);
  CHECK(e.at("return").at("max").get<double>() == 10);

  REQUIRE(std::system((cli + "\"" + path + "\" > \"" + dir.file("info.txt") + "\"").c_str()) == 0);
  const std::string text = slurp(dir.file("info.txt"));
  INFO(text);
  CHECK_THAT(text, Catch::Contains("transitions:       20\n"));
  CHECK_THAT(text, Catch::Contains("observation dim:   4\n"));
  CHECK_THAT(text, Catch::Contains("actions:           2\n"));
  CHECK_THAT(text, Catch::Contains("env:               cartpole, 3 envs side by side\n"));
  CHECK_THAT(text, Catch::Contains("terminated:        3 (15.0%)\n"));
  CHECK_THAT(text, Catch::Contains("truncated:         2 (10.0%)\n"));
  CHECK_THAT(text, Catch::Contains("episodes:          5 complete, 2 unfinished"));
  // mean 3.4, population std sqrt(30.24) = 5.49909..., min -6, max 10.
  CHECK_THAT(text, Catch::Contains("episode return:    mean 3.4, std 5.49909, min -6, max 10\n"));
  CHECK_THAT(text, Catch::Contains("  0: " + std::to_string(histogram[0]) + " ("));
  CHECK_THAT(text, Catch::Contains("  1: " + std::to_string(histogram[1]) + " ("));
}

TEST_CASE("foxrl dataset info on a directory says it is a directory and exits 2", "[offline][dataset-info][cli]") {
  foxrl::test::TempDir dir;
  const std::string command =
      std::string("\"") + FOXRL_CLI_PATH + "\" dataset info \"" + dir.path() + "\" 2> \"" + dir.file("err.txt") + "\"";
  const int status = std::system(command.c_str());
  const std::string err = slurp(dir.file("err.txt"));
  INFO(err);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 2);
  CHECK_THAT(err,
             Catch::Contains(dir.path()) && Catch::Contains("is a directory") && !Catch::Contains("header length"));
}

TEST_CASE("foxrl dataset info refuses a dataset whose config metadata lost a bit, exit 2 naming the key",
          "[offline][dataset-info][cli]") {
  foxrl::test::TempDir dir;
  const std::string path = dir.file("flipped.safetensors");
  known_episodes().write(path);
  std::string bytes = slurp(path);
  const std::string from = "\\\"cost_bps\\\": 5";  // inside the metadata's JSON string
  const auto at = bytes.find(from);
  REQUIRE(at != std::string::npos);
  bytes[at + from.size() - 1] = '7';  // '5' 0x35 -> '7' 0x37: one bit
  { std::ofstream(path, std::ios::binary) << bytes; }
  const std::string command = std::string("\"") + FOXRL_CLI_PATH + "\" dataset info \"" + path + "\" > \"" +
                              dir.file("out.txt") + "\" 2> \"" + dir.file("err.txt") + "\"";
  const int status = std::system(command.c_str());
  const std::string err = slurp(dir.file("err.txt"));
  INFO(err);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 2);
  CHECK_THAT(err, Catch::Contains(path) && Catch::Contains("metadata 'config'") && Catch::Contains("checksum"));
  CHECK_THAT(slurp(dir.file("out.txt")), !Catch::Contains("checksums verified"));
}
#endif
