// foxrl_fuzz_seeds <corpus root>: trains the fuzzers' tiny trainers
// (tiny_trainer.hpp) for one epoch, checkpoints them, and writes the files
// as seeds: <root>/trainer_state/, <root>/checkpoint/ (the market learner's
// checkpoint.safetensors and both checkpoint.json), <root>/safetensors/,
// <root>/config_json/ and <root>/dataset/ (datasets collected in the tiny
// envs). ci/run-fuzzers.sh adds them to each run's corpus, so the fuzzers
// start from files of the format this build writes.
#include "evaluate/collect_dataset.hpp"
#include "tiny_trainer.hpp"

#include <Kokkos_Core.hpp>

#include <unistd.h>

#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>

namespace fs = std::filesystem;

namespace {

void copy_into(const fs::path& from, const fs::path& dir, const std::string& name) {
  fs::create_directories(dir);
  fs::copy_file(from, dir / name, fs::copy_options::overwrite_existing);
}

void seeds_of(const std::string& env, const fs::path& root, const fs::path& scratch) {
  const fs::path run = scratch / env;
  fs::create_directories(run);
  foxrl::fuzz::Trainer t(foxrl::fuzz::tiny_config(env, run.string()));
  t.run_epoch();
  t.save_checkpoint(run.string());
  copy_into(run / foxrl::trainer_state_file, root / "trainer_state", env + ".safetensors");
  copy_into(run / "checkpoint.json", root / "checkpoint", env + ".json");
  if (env == "market") copy_into(run / "checkpoint.safetensors", root / "checkpoint", "market.safetensors");
  copy_into(run / "checkpoint.safetensors", root / "safetensors", env + "_checkpoint.safetensors");
  fs::create_directories(root / "config_json");
  std::ofstream(root / "config_json" / ("tiny_" + env + ".json")) << t.config().to_json() << "\n";
  // Datasets of the tiny env: random actions, and for CartPole the trained
  // policy's epsilon-greedy ones. The tiny market config's synthetic_bars
  // (400) is below the range a config file may hold, so the market run's
  // checkpoint.json is not readable as a policy, and its dataset is
  // recorded with the smallest readable series instead.
  fs::create_directories(root / "dataset");
  foxrl::CollectOptions o;
  o.config = t.config();
  if (env == "market") o.config.synthetic_bars = 1000;
  o.transitions = 41;  // a partial last iteration
  o.out_path = (root / "dataset" / (env + "_random.safetensors")).string();
  foxrl::collect_dataset(t.context().space(), o);
  if (env == "cartpole") {
    o.policy = "epsilon-greedy";
    o.epsilon = 0.3;
    o.run_dir = run.string();
    o.out_path = (root / "dataset" / (env + "_policy.safetensors")).string();
    foxrl::collect_dataset(t.context().space(), o);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: foxrl_fuzz_seeds <corpus root>\n");
    return 2;
  }
  Kokkos::initialize();
  int rc = 0;
  const fs::path scratch = fs::temp_directory_path() / ("foxrl_fuzz_seeds_" + std::to_string(::getpid()));
  try {
    for (const char* env : {"cartpole", "market"}) seeds_of(env, argv[1], scratch);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "foxrl_fuzz_seeds: %s\n", e.what());
    rc = 1;
  }
  Kokkos::finalize();
  std::error_code ignored;
  fs::remove_all(scratch, ignored);
  return rc;
}
