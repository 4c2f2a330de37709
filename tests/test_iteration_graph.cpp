// The trainer's iteration as one captured graph (CUDA): a run that replays
// it gives the same checkpoint, byte for byte, as a run that launches every
// kernel of an iteration directly (the kernel path iteration_graph on and off), through the shapes an iteration
// takes: collect only, collect and insert, with and without updates
// (train_every 2), two updates each (the second sees the first's sample
// count and update count), hard target copies in some of them, replay
// wrap-around and boundary evictions (the tiny config). Host backends run
// the same clock-driven launches without a graph.
#include "core/kernel_paths.hpp"
#include "support/env_test_util.hpp"
#include "support/same_checkpoint.hpp"
#include "support/scoped_environment.hpp"
#include "support/test_spaces.hpp"
#include "support/tiny_trainer_config.hpp"
#include "train/online_trainer.hpp"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>
#include <type_traits>

namespace {

template <class Exec>
constexpr bool is_cuda() {
#ifdef KOKKOS_ENABLE_CUDA
  return std::is_same_v<Exec, Kokkos::Cuda>;
#else
  return false;
#endif
}

/// Replays of the iteration graph, and captures that failed.
struct GraphCounts {
  std::int64_t replays = -1;
  int failed_captures = -1;
};

template <class Exec>
GraphCounts run_and_save(const foxrl::TrainConfig& config, const std::string& dir) {
  foxrl::DqnTrainer<Exec> trainer(config);
  trainer.set_run_id("iteration-graph-test");
  for (std::int64_t e = 0; e < config.epochs; ++e) trainer.run_epoch();
  trainer.save_checkpoint(dir);
  return {trainer.iteration_graph_replays(), trainer.iteration_graph_failed_captures()};
}

}  // namespace

TEMPLATE_TEST_CASE("a replayed iteration graph trains exactly as direct launches", "[trainer][graph]",
                   FOXRL_TEST_SPACES) {
  using Exec = TestType;
  const std::string env = GENERATE(std::string("cartpole"), std::string("market"));
  INFO("env " << env);
  const foxrl::test::TempDir graphed_dir, direct_dir;
  const std::string graphed = graphed_dir.path(), direct = direct_dir.path();
  auto config = foxrl::test::tiny_iteration_shapes_config(env, graphed, 3);

  GraphCounts graphs, direct_graphs;
  {
    foxrl::test::ScopedEnvironment on("FOXRL_KERNEL_PATHS_OFF", nullptr);
    graphs = run_and_save<Exec>(config, graphed);
  }
  {
    foxrl::test::ScopedEnvironment off("FOXRL_KERNEL_PATHS_OFF", "iteration_graph");
    config.out_dir = direct;
    direct_graphs = run_and_save<Exec>(config, direct);
  }
  CHECK(direct_graphs.replays == 0);
  // Every launch of an iteration must be capturable: a failed capture
  // silently falls back to direct launches, several times slower for a few envs.
  CHECK(graphs.failed_captures == 0);
  if (is_cuda<Exec>() && foxrl::kernel_path_on(foxrl::KernelPath::cuda_graphs))
    CHECK(graphs.replays > config.epochs * config.iterations_per_epoch / 2);  // most iterations replay
  else
    CHECK(graphs.replays == 0);

  foxrl::test::check_same_checkpoint(graphed, direct);
}
