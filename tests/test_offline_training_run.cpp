// `foxrl train-offline` as a library run: its config table, the epoch
// loop's metric sums, the run directory (logs, metrics, checkpoint
// generations, refusals), and resume, which must continue bit for bit.
#include "config/offline_train_config.hpp"
#include "core/compat.hpp"
#include "core/error.hpp"
#include "core/execution_context.hpp"
#include "evaluate/collect_dataset.hpp"
#include "io/safetensors.hpp"
#include "kernels/offline/metric_sums.hpp"
#include "offline/dataset_file.hpp"
#include "support/dataset_builder.hpp"
#include "support/env_test_util.hpp"
#include "support/scoped_environment.hpp"
#include "support/test_spaces.hpp"
#include "train/offline_manifest.hpp"
#include "train/offline_training_run.hpp"

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <sstream>
#include <string>

#include <unistd.h>
#include <vector>

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

/// A random-policy CartPole dataset of `steps` transitions in `dir`.
std::string cartpole_dataset(const foxrl::test::TempDir& dir, std::int64_t steps) {
  foxrl::ExecutionContext<> context(7);
  foxrl::CollectOptions o;
  o.config.env = "cartpole";
  o.config.num_envs = 4;
  o.config.seed = 7;
  o.transitions = steps;
  o.out_path = dir.file("cartpole.safetensors");
  foxrl::collect_dataset(context.space(), o);
  return o.out_path;
}

/// A small, quick run of `algo` on `dataset` into `out_dir`.
foxrl::OfflineTrainConfig small_run(const std::string& dataset, const std::string& out_dir, const std::string& algo) {
  foxrl::OfflineTrainConfig c;
  c.algo = algo;
  c.dataset = dataset;
  c.out_dir = out_dir;
  c.hidden = {16, 8};
  c.batch_size = 32;
  c.updates_per_epoch = 20;
  c.eval_episodes = 4;
  c.epochs = 3;
  c.cql_target_update_every = 7;
  return c;
}

std::vector<std::string> run_lines(foxrl::OfflineTrainingRun& run) {
  auto lines = std::make_shared<std::vector<std::string>>();
  run.on_log([lines](const std::string& line) { lines->push_back(line); });
  run.run();
  return *lines;
}

std::string generation(const std::string& out_dir, int epoch) {
  char name[32];
  std::snprintf(name, sizeof name, "epoch-%08d", epoch);
  return out_dir + "/checkpoints/" + name;
}

/// metrics.jsonl without the wall-clock fields.
std::string metrics_without_timing(const std::string& path) {
  std::istringstream in(slurp(path));
  std::string line, out;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line);
    j.erase("seconds");
    j.erase("updates_per_s");
    out += j.dump() + "\n";
  }
  return out;
}

}  // namespace

TEST_CASE("offline config: defaults, JSON and --set, errors naming the key", "[offline][train-offline]") {
  const foxrl::OfflineTrainConfig d;
  CHECK(d.algo == "iql");
  CHECK(d.expectile == 0.7);
  CHECK(d.iql_beta == 3.0);
  CHECK(d.max_weight == 100.0);
  CHECK(d.polyak_tau == 0.005);
  auto c = foxrl::OfflineTrainConfig::from_json_text(R"({"algo": "cql", "hidden": [64, 32], "cql_alpha": 2.5})",
                                                     "test.json");
  CHECK(c.algo == "cql");
  CHECK(c.hidden == std::vector<std::int64_t>{64, 32});
  CHECK(c.cql_alpha == 2.5);
  c.apply_overrides({"algo=bc", "batch_size=64", "hidden=8,4"});
  CHECK(c.algo == "bc");
  CHECK(c.batch_size == 64);
  CHECK(c.hidden == std::vector<std::int64_t>{8, 4});
  // Round trip through the JSON a checkpoint stores.
  const auto again = foxrl::OfflineTrainConfig::from_json_text(c.to_json(), "again");
  CHECK(again.to_json() == c.to_json());

  // The config layer knows no learner; the offline registry refuses an
  // online one where a run is set up (before its directory is touched).
  auto dqn = foxrl::OfflineTrainConfig::from_json_text(R"({"algo": "dqn", "dataset": "d.safetensors"})", "a.json");
  dqn.out_dir = (std::filesystem::temp_directory_path() /
                 ("foxrl_never_created_by_offline_config_test_" + std::to_string(::getpid())))
                    .string();
  CHECK_THROWS_WITH(foxrl::OfflineTrainingRun(dqn).run(),
                    Catch::Contains("algo 'dqn': not a registered offline algorithm (iql, cql, bc)"));
  CHECK_FALSE(std::filesystem::exists(dqn.out_dir));
  CHECK_THROWS_WITH(foxrl::OfflineTrainConfig::from_json_text(R"({"expectile": 1.0})", "b.json"),
                    Catch::Contains("'expectile'") && Catch::Contains("out of range"));
  CHECK_THROWS_WITH(foxrl::OfflineTrainConfig::from_json_text(R"({"epsilon": 0.1})", "c.json"),
                    Catch::Contains("'epsilon'") && Catch::Contains("unknown key") &&
                        Catch::Contains("foxrl train-offline --help-config"));
  CHECK_THROWS_WITH(c.apply_overrides({"batch_size=0"}), Catch::Contains("--set") && Catch::Contains("'batch_size'"));
  CHECK_THROWS_WITH(c.apply_overrides({"updates_per_epoch=ten"}), Catch::Contains("--set updates_per_epoch"));
  CHECK_THROWS_WITH(foxrl::OfflineTrainConfig{}.validate(),
                    Catch::Contains("'dataset'") && Catch::Contains("--dataset"));
  const std::string keys = foxrl::OfflineTrainConfig::describe();
  for (const char* key :
       {"algo", "dataset", "expectile", "iql_beta", "cql_alpha", "updates_per_epoch", "eval_episodes"})
    CHECK(keys.find(std::string("  ") + key + " = ") != std::string::npos);
}

TEMPLATE_TEST_CASE("offline metric sums: float64 sums of every update's metrics", "[offline][train-offline]",
                   FOXRL_TEST_SPACES) {
  using Exec = TestType;
  using Mem = typename Exec::memory_space;
  foxrl::ExecutionContext<Exec> context;
  const Exec& space = context.space();
  const int slots = 16, updates = 37;
  Kokkos::View<float*, Mem> metrics("metrics", slots);
  Kokkos::View<double*, Mem> sums("sums", slots);
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<double> expected(slots, 0.0);
  auto h = Kokkos::create_mirror_view(metrics);
  for (int u = 0; u < updates; ++u) {
    for (int k = 0; k < slots; ++k) {
      h(k) = normal(rng);
      expected[std::size_t(k)] += double(h(k));
    }
    Kokkos::deep_copy(space, metrics, h);
    foxrl::kernels::accumulate_metrics(space, Kokkos::View<const float*, Mem>(metrics), sums);
  }
  auto s = Kokkos::create_mirror_view(sums);
  Kokkos::deep_copy(space, s, sums);
  foxrl::compat::fence(space, "test");
  // Each term is a float converted exactly; the float64 sums of 37 terms
  // of size ~10 agree to ~1e-14 relative.
  for (int k = 0; k < slots; ++k) CHECK(s(k) == Approx(expected[std::size_t(k)]).margin(1e-12));
}

TEST_CASE("offline run: logs, metrics, checkpoints, and a resumed run equals the uninterrupted one bit for bit",
          "[offline][train-offline]") {
  // One run id for both runs: the checkpoint files carry it, so they can
  // be compared byte for byte.
  const foxrl::test::ScopedEnvironment same_id("FOXRL_RUN_ID", "offline-resume-test");
  foxrl::test::TempDir dir;
  const std::string data = cartpole_dataset(dir, 600);
  for (const std::string algo : {"iql", "cql", "bc"}) {
    INFO(algo);
    const std::string full = dir.file("full-" + algo), part = dir.file("part-" + algo);
    {
      foxrl::OfflineTrainingRun run(small_run(data, full, algo));
      const auto lines = run_lines(run);
      REQUIRE(lines.size() >= 4);
      CHECK(lines[0].find("train-offline: " + algo) != std::string::npos);
      CHECK(lines[0].find("600 transitions of cartpole") != std::string::npos);
    }
    for (const char* f :
         {"train.log", "metrics.jsonl", "config.json", "evaluation_episodes.json", "learning_curve_return.svg"})
      CHECK(std::filesystem::exists(full + "/" + f));
    // Every epoch's metrics line holds its counters, losses and evaluation.
    std::istringstream metrics(slurp(full + "/metrics.jsonl"));
    std::string line;
    int epochs = 0;
    while (std::getline(metrics, line)) {
      const auto j = nlohmann::json::parse(line);
      ++epochs;
      CHECK(j.at("epoch") == epochs);
      CHECK(j.at("updates") == 20 * epochs);
      CHECK(j.at("eval_episodes").get<int>() + 0 <= 4);
      CHECK(std::isfinite(j.at("eval_return_mean").get<double>()));
    }
    CHECK(epochs == 3);
    const auto eval = nlohmann::json::parse(slurp(full + "/evaluation_episodes.json"));
    CHECK(eval.at("epoch") == 3);
    CHECK(eval.at("returns").size() == 4);
    // keep_checkpoints 2: epochs 2 and 3.
    CHECK(!std::filesystem::exists(generation(full, 1)));
    CHECK(std::filesystem::exists(generation(full, 2) + "/learner.safetensors"));

    // Epoch 1, then resumed up to 3.
    auto first = small_run(data, part, algo);
    first.epochs = 1;
    { foxrl::OfflineTrainingRun(first).run(); }
    auto rest = small_run(data, part, algo);
    {
      foxrl::OfflineTrainingRun run(rest, true);
      const auto lines = run_lines(run);
      bool said = false;
      for (const auto& l : lines) said = said || l.find("resumed from the checkpoint of epoch 1 (20 updates)") == 0;
      CHECK(said);
    }
    CHECK(slurp(generation(part, 3) + "/learner.safetensors") == slurp(generation(full, 3) + "/learner.safetensors"));
    CHECK(metrics_without_timing(part + "/metrics.jsonl") == metrics_without_timing(full + "/metrics.jsonl"));
  }
}

TEST_CASE("offline run: refusals and a damaged newest generation", "[offline][train-offline]") {
  foxrl::test::TempDir dir;
  const std::string data = cartpole_dataset(dir, 400);
  const std::string out = dir.file("run");
  auto c = small_run(data, out, "iql");
  c.epochs = 2;
  c.keep_checkpoints = 3;
  { foxrl::OfflineTrainingRun(c).run(); }
  // A fresh run does not replace a run unnoticed.
  CHECK_THROWS_WITH(foxrl::OfflineTrainingRun(c).run(),
                    Catch::Contains("already holds a run") && Catch::Contains("train-offline --resume"));
  // A resume may not change what shapes the run, nor shrink epochs.
  auto changed = c;
  changed.lr = 0.1;
  CHECK_THROWS_WITH(foxrl::OfflineTrainingRun(changed, true).run(),
                    Catch::Contains("lr") && Catch::Contains("0.1") && Catch::Contains("only epochs"));
  auto fewer = c;
  fewer.epochs = 1;
  CHECK_THROWS_WITH(foxrl::OfflineTrainingRun(fewer, true).run(), Catch::Contains("may only grow"));
  // Another dataset of another size: named.
  const std::string other = dir.file("other.safetensors");
  {
    foxrl::test::TempDir sub;
    std::filesystem::copy_file(cartpole_dataset(sub, 300), other);
  }
  auto moved = c;
  moved.dataset = other;
  moved.epochs = 3;
  CHECK_THROWS_WITH(foxrl::OfflineTrainingRun(moved, true).run(),
                    Catch::Contains("400 transitions") && Catch::Contains("300"));

  // Damage the newest manifest: the resume falls back to epoch 1 and sets
  // epoch 2 aside.
  const std::string newest = generation(out, 2) + "/" + foxrl::OfflineManifest::manifest_file;
  std::string text = slurp(newest);
  const auto at = text.find("\"updates\": 40");
  REQUIRE(at != std::string::npos);
  text.replace(at, 13, "\"updates\": 41");
  std::ofstream(newest, std::ios::binary) << text;
  CHECK_THROWS_WITH(foxrl::OfflineManifest::read(generation(out, 2)),
                    Catch::Contains(newest) && Catch::Contains("checksum mismatch"));
  auto more = c;
  more.epochs = 2;
  foxrl::OfflineTrainingRun run(more, true);
  const auto lines = run_lines(run);
  bool warned = false;
  for (const auto& l : lines) warned = warned || l.find("warning: resumed from the older checkpoint") == 0;
  CHECK(warned);
  CHECK(std::filesystem::exists(out + "/checkpoints/damaged-epoch-00000002"));
  CHECK(std::filesystem::exists(generation(out, 2) + "/learner.safetensors"));  // written again
}

TEST_CASE("offline run: a missing or malformed dataset is named", "[offline][train-offline]") {
  foxrl::test::TempDir dir;
  auto c = small_run(dir.file("absent.safetensors"), dir.file("run"), "iql");
  CHECK_THROWS_AS(foxrl::OfflineTrainingRun(c).run(), foxrl::UsageError);
  CHECK_THROWS_WITH(foxrl::OfflineTrainingRun(c).run(), Catch::Contains("absent.safetensors"));
  c.dataset = dir.write("junk.safetensors", "not a safetensors file");
  CHECK_THROWS_WITH(foxrl::OfflineTrainingRun(c).run(), Catch::Contains("junk.safetensors"));
}

TEST_CASE("offline run: a transition that breaks the Q losses is rejected by the guards and logged",
          "[offline][train-offline][guard]") {
  foxrl::test::TempDir dir;
  // 2 envs x 20 episodes of 10 unit rewards, one reward at the largest
  // magnitude a dataset may hold (kMaxDatasetMagnitude, so the dataset
  // loads; 1e30 is refused when it is read): every batch that samples it
  // gives the Q networks a squared TD error a million million times the
  // running median, a loss spike.
  std::vector<std::vector<foxrl::test::EpisodeSpec>> episodes(2);
  for (auto& env : episodes)
    for (int e = 0; e < 20; ++e) env.push_back({std::vector<float>(10, 1.0f), true, false});
  episodes[1][4].rewards[6] = foxrl::kMaxDatasetMagnitude;
  const std::string dataset = dir.file("poisoned.safetensors");
  foxrl::test::HostDataset::from_episodes(episodes).write(dataset);
  for (const std::string algo : {"iql", "cql"}) {
    DYNAMIC_SECTION(algo) {
      auto c = small_run(dataset, dir.file("run-" + algo), algo);
      c.updates_per_epoch = 40;
      c.eval_episodes = 2;
      foxrl::OfflineTrainingRun run(c);
      const auto lines = run_lines(run);
      std::int64_t rejected = 0;
      std::istringstream in(slurp(c.out_dir + "/metrics.jsonl"));
      std::string line;
      while (std::getline(in, line)) {
        const auto j = nlohmann::json::parse(line);
        rejected = j.at("rejected_total").get<std::int64_t>();
      }
      // 120 batches of 32 out of 400 rows: the row is drawn in about 9 of
      // them (0 with probability (1 - 32/400)^120 ~ 5e-5; the seed is fixed).
      CHECK(rejected > 0);
      bool logged = false;
      for (const auto& l : lines) logged = logged || l.find("guard: ") != std::string::npos;
      CHECK(logged);
      // The weights, targets and moments the run ends with are all finite.
      const auto file = foxrl::safetensors::read(generation(c.out_dir, 3) + "/learner.safetensors");
      std::int64_t floats = 0, nonfinite = 0;
      for (const auto& t : file.tensors) {
        if (t.dtype != "F32") continue;
        for (std::size_t i = 0; i + 4 <= t.data.size(); i += 4) {
          float x;
          std::memcpy(&x, t.data.data() + i, 4);
          ++floats;
          nonfinite += !std::isfinite(x);
        }
      }
      CHECK(floats > 0);
      CHECK(nonfinite == 0);
      CHECK(std::filesystem::exists(generation(c.out_dir, 3) + "/guard.safetensors"));
    }
  }
}
