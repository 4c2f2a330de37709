// The replay buffer's boundary rows indexed by slot (ReplayLayout::
// boundary_per_slot): the same samples as a pool that never evicts, the
// default choice by observation width, the footprint, and trainer states
// that round-trip or are refused with a message.
#include "core/error.hpp"
#include "core/execution_context.hpp"
#include "io/state_archive.hpp"
#include "replay/replay_buffer.hpp"
#include "support/device_copy.hpp"
#include "support/env_test_util.hpp"
#include "support/replay_synthetic.hpp"
#include "support/scoped_environment.hpp"
#include "support/test_spaces.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace {

using foxrl::test::make_transitions;
using foxrl::test::small_config;
using foxrl::test::Synthetic;
using foxrl::test::to_device;
using foxrl::test::to_host;

/// Everything a sample returns, flattened: rows of s and s', actions,
/// rewards, discounts, slots and weights.
template <class Exec, class Batch>
std::vector<double> flatten(const Exec& space, const Batch& b) {
  std::vector<double> out;
  const auto states = to_host(space, b.states);
  const auto next = to_host(space, b.next_states);
  for (std::size_t k = 0; k < states.extent(0); ++k)
    for (std::size_t c = 0; c < states.extent(1); ++c) {
      out.push_back(states(k, c));
      out.push_back(next(k, c));
    }
  for (const auto& v : {to_host(space, b.rewards), to_host(space, b.discounts), to_host(space, b.is_weights)})
    for (std::size_t k = 0; k < v.extent(0); ++k) out.push_back(v(k));
  const auto actions = to_host(space, b.actions);
  const auto indices = to_host(space, b.indices);
  for (std::size_t k = 0; k < actions.extent(0); ++k) {
    out.push_back(actions(k));
    out.push_back(double(indices(k)));
  }
  return out;
}

}  // namespace

TEMPLATE_TEST_CASE("ReplayBuffer with a boundary row per slot samples what a pool that never evicts samples",
                   "[replay]", FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  // A pool one row short of the ring evicts only when every live slot but
  // one ends an episode: never with a boundary every 3 rows or more. Each
  // insert wraps differently (capacity not a multiple of the envs), n = 2,
  // priorities updated between samples; both insert schedules.
  struct Case {
    std::int64_t capacity;
    int num_envs;
    int boundary_period;
  };
  for (const float alpha : {0.6f, 0.0f})
    for (const bool spread : {false, true})
      for (const Case c : {Case{70, 4, 3}, Case{5000, 700, 4}}) {
        INFO("capacity " << c.capacity << ", " << c.num_envs << " envs, alpha " << alpha
                         << (spread ? ", spread" : ", one team"));
        const Synthetic syn{c.num_envs, 3, 2, c.boundary_period};
        std::vector<std::vector<double>> samples[2];
        std::vector<float> trees[2];
        for (const int per_slot : {0, 1}) {
          INFO((per_slot ? "a row per slot" : "a pool one row short of the ring"));
          auto config = small_config(c.capacity, syn.obs_dim, syn.num_envs, syn.n_step);
          config.alpha = alpha;
          config.boundary_capacity = per_slot ? c.capacity : c.capacity - 1;
          foxrl::ReplayBuffer<Exec> buffer(space, config);
          REQUIRE(buffer.layout().boundary_per_slot == (per_slot == 1));
          buffer.set_insert_spread(spread);
          std::mt19937_64 rng(5);
          std::uniform_real_distribution<float> err(0.1f, 4.0f);
          for (int step = 0; step < 3 * int(c.capacity / c.num_envs); ++step) {
            INFO("step " << step);
            buffer.insert(space, make_transitions(space, syn, step));
            const auto batch = buffer.sample(space, 64, 0.4f);
            samples[per_slot].push_back(flatten(space, batch));
            std::vector<float> td(64);
            for (auto& x : td) x = err(rng);
            buffer.update_priorities(space, batch.indices, to_device(space, td));
          }
          CHECK(to_host(space, buffer.storage().boundary_evictions)() == 0);
          const auto tree = to_host(space, buffer.storage().tree);
          trees[per_slot].assign(tree.data(), tree.data() + tree.extent(0));
        }
        REQUIRE(samples[0].size() == samples[1].size());
        int different = 0;
        for (std::size_t i = 0; i < samples[0].size(); ++i) different += samples[0][i] != samples[1][i] ? 1 : 0;
        CHECK(different == 0);
        CHECK(trees[0] == trees[1]);
      }
}

TEMPLATE_TEST_CASE("ReplayBuffer picks a boundary row per slot for narrow observations and counts its bytes",
                   "[replay]", FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  using Buffer = foxrl::ReplayBuffer<Exec>;
  const int widest = Buffer::boundary_per_slot_max_dim;
  for (const int dim : {4, widest, widest + 1, 65}) {
    INFO("obs_dim " << dim);
    const Buffer buffer(space, small_config(4096, dim, 8, 3));  // boundary_capacity 0: the default
    const bool per_slot = dim <= widest;
    CHECK(buffer.layout().boundary_per_slot == per_slot);
    CHECK(buffer.layout().boundary_capacity == (per_slot ? 4096 : 1024));
    // The ring (+ n N pending rows), action, reward, discount and next_ref,
    // the tree (levels of 4096, 128 and 4 nodes padded to 32 floats), and
    // the boundary rows: one per slot without owners, or a quarter of the
    // slots with an 8-byte owner each.
    const double obs_bytes = 4.0 * dim;
    const double ring = obs_bytes * (1.0 + 24.0 / 4096);
    const double scalars = 4 * 4 + 4.0 * (4096 + 128 + 32) / 4096;
    const double boundary = per_slot ? obs_bytes : (obs_bytes + 8) / 4;
    CHECK(buffer.bytes_per_transition() == Approx(ring + scalars + boundary).epsilon(1e-9));
  }
}

TEMPLATE_TEST_CASE("ReplayBuffer state with a boundary row per slot round-trips, and a pool's state is refused by it",
                   "[replay][checkpoint]", FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  const Synthetic syn{5, 4, 2, 3};
  // A directory of this process alone: CTest runs each backend's instance
  // of this test as its own process, side by side under -j.
  const foxrl::test::TempDir temp;
  const std::filesystem::path dir = temp.path();
  using Buffer = foxrl::ReplayBuffer<Exec>;

  const auto save = [&](Buffer& buffer, const std::string& path) {
    foxrl::StateWriter<Exec> w;
    typename Buffer::HostState h;
    buffer.visit_host_state(w, space, h);
    buffer.visit_state(w, space, h, 5000);
    w.write(space, path);
  };
  const auto load = [&](Buffer& buffer, const std::string& path) {
    foxrl::StateReader<Exec> r(path);
    typename Buffer::HostState h;
    buffer.visit_host_state(r, space, h);
    buffer.visit_state(r, space, h, 5000);
    r.apply(space);
    buffer.restore_host_state(h);
  };

  auto config = small_config(60, syn.obs_dim, syn.num_envs, syn.n_step);  // boundary rows per slot by default
  Buffer saved(space, config);
  REQUIRE(saved.layout().boundary_per_slot);
  for (int t = 0; t < 17; ++t) saved.insert(space, make_transitions(space, syn, t));  // wrapped
  const std::string path = (dir / "per_slot.safetensors").string();
  save(saved, path);
  Buffer resumed(space, config);
  load(resumed, path);
  // Both go on alike: the same inserts, the same samples.
  for (int t = 17; t < 30; ++t) {
    INFO("insert " << t);
    saved.insert(space, make_transitions(space, syn, t));
    resumed.insert(space, make_transitions(space, syn, t));
    CHECK(flatten(space, saved.sample(space, 32, 0.4f)) == flatten(space, resumed.sample(space, 32, 0.4f)));
  }

  // A state written with a pool (boundary_capacity a quarter of the slots,
  // the default of wider observations).
  const std::string pool_path = (dir / "pool.safetensors").string();
  auto pool_config = config;
  pool_config.boundary_capacity = std::max<std::int64_t>(config.num_envs, config.capacity / 4);
  std::optional<Buffer> pool;
  pool.emplace(space, pool_config);
  REQUIRE(!pool->layout().boundary_per_slot);
  for (int t = 0; t < 17; ++t) pool->insert(space, make_transitions(space, syn, t));
  save(*pool, pool_path);
  Buffer per_slot(space, config);
  CHECK_THROWS_WITH(load(per_slot, pool_path),
                    Catch::Contains("replay.boundary_rows") && Catch::Contains("in a row per slot") &&
                        Catch::Contains("boundary_capacity") && Catch::Contains("pool.safetensors"));
  // A buffer with the pool resumes it, and goes on like the buffer that wrote it.
  std::optional<Buffer> pooled;
  pooled.emplace(space, pool_config);
  load(*pooled, pool_path);
  for (int t = 17; t < 30; ++t) {
    INFO("insert " << t << " after the pool's state");
    pool->insert(space, make_transitions(space, syn, t));
    pooled->insert(space, make_transitions(space, syn, t));
    CHECK(flatten(space, pool->sample(space, 32, 0.4f)) == flatten(space, pooled->sample(space, 32, 0.4f)));
  }
}
