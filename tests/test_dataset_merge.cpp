// `foxrl dataset merge`: rows concatenated in order, episodes cut (never
// joined) at the end of every part but the last, metadata of the merge,
// and refusals naming the file for datasets of different envs.
#include "core/error.hpp"
#include "core/execution_context.hpp"
#include "evaluate/collect_dataset.hpp"
#include "offline/dataset_file.hpp"
#include "offline/dataset_merge.hpp"
#include "offline/dataset_statistics.hpp"
#include "support/env_test_util.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace {

std::string collect(const foxrl::test::TempDir& dir, const std::string& name, std::string env, int envs,
                    std::int64_t steps, std::uint64_t seed) {
  foxrl::ExecutionContext<> context(seed);
  foxrl::CollectOptions o;
  o.config.env = env;
  o.config.num_envs = envs;
  o.config.seed = seed;
  if (env == "market") {
    o.config.synthetic_bars = 2000;
    o.config.window = 8;
  }
  o.transitions = steps;
  o.out_path = dir.file(name);
  foxrl::collect_dataset(context.space(), o);
  return o.out_path;
}

template <class T>
std::vector<T> values(const foxrl::DatasetFile& d, const std::string& name) {
  const auto& t = d.tensor(name);
  std::vector<T> out(static_cast<std::size_t>(t.numel()));
  std::memcpy(out.data(), t.data.data(), t.data.size());
  return out;
}

}  // namespace

TEST_CASE("dataset merge: rows in order, episodes cut at part ends, statistics of the parts", "[offline][merge]") {
  foxrl::test::TempDir dir;
  const std::string a = collect(dir, "a.safetensors", "cartpole", 4, 400, 3);
  const std::string b = collect(dir, "b.safetensors", "cartpole", 4, 240, 4);
  const std::string out = dir.file("merged.safetensors");
  const auto summary = foxrl::merge_datasets({a, b}, out);
  CHECK(summary.transitions == 640);
  CHECK(summary.row_order_known);

  const auto da = foxrl::read_dataset_file(a), db = foxrl::read_dataset_file(b), dm = foxrl::read_dataset_file(out);
  REQUIRE(dm.rows == 640);
  CHECK(dm.metadata.row_order_known);
  CHECK(dm.metadata.policy == "merged: random (400) + random (240)");
  CHECK(dm.file.metadata.at("merged_from") == a + "; " + b);
  for (const char* name : {"observations", "next_observations", "actions", "rewards", "terminated"}) {
    INFO(name);
    auto joined = da.tensor(name).data;
    joined.insert(joined.end(), db.tensor(name).data.begin(), db.tensor(name).data.end());
    CHECK(dm.tensor(name).data == joined);
  }
  // Truncated: a's flags, then its last row of each env cut unless it
  // ended its episode, then b's flags.
  const auto ta = values<std::uint8_t>(da, "truncated"), tb = values<std::uint8_t>(db, "truncated");
  const auto term_a = values<std::uint8_t>(da, "terminated");
  const auto tm = values<std::uint8_t>(dm, "truncated");
  int cut = 0;
  for (std::size_t r = 0; r < 400; ++r) {
    const bool last_of_env = r >= 396;
    const std::uint8_t expected = last_of_env && term_a[r] == 0 ? 1 : ta[r];
    CHECK(tm[r] == expected);
    cut += expected != ta[r];
  }
  for (std::size_t r = 0; r < 240; ++r) CHECK(tm[400 + r] == tb[r]);

  // a's unfinished episodes become complete (cut) ones; none is joined
  // with b's first episodes.
  const auto sa = foxrl::dataset_statistics(da), sb = foxrl::dataset_statistics(db), sm = foxrl::dataset_statistics(dm);
  REQUIRE(sm.episodes_exact);
  CHECK(sm.returns.count == sa.returns.count + cut + sb.returns.count);
  CHECK(sm.unfinished == sb.unfinished);
  CHECK(sm.terminated == sa.terminated + sb.terminated);
}

TEST_CASE("dataset merge: refuses one input and datasets of different envs", "[offline][merge]") {
  foxrl::test::TempDir dir;
  const std::string a = collect(dir, "a.safetensors", "cartpole", 4, 40, 3);
  const std::string b = collect(dir, "b.safetensors", "cartpole", 2, 40, 3);
  const std::string m = collect(dir, "m.safetensors", "market", 4, 40, 3);
  CHECK_THROWS_WITH(foxrl::merge_datasets({a}, dir.file("o1")), Catch::Contains("at least two"));
  CHECK_THROWS_WITH(foxrl::merge_datasets({a, m}, dir.file("o2")),
                    Catch::Contains("m.safetensors") && Catch::Contains("env market"));
  CHECK_THROWS_WITH(foxrl::merge_datasets({a, b}, dir.file("o3")),
                    Catch::Contains("b.safetensors") && Catch::Contains("num_envs 2"));
  CHECK_THROWS_WITH(foxrl::merge_datasets({a, dir.write("bad.safetensors", "junk")}, dir.file("o4")),
                    Catch::Contains("bad.safetensors"));
  CHECK(!std::filesystem::exists(dir.file("o2")));
}
