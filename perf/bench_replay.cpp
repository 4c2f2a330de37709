// Replay buffer micro-benchmark: insert of num_envs transitions, sample of a
// batch, priority update of a batch, and sample + update together, at
// capacities 2^20 and 2^24 (--quick: 2^12 and 2^14 for host runs). Under
// uniform replay (alpha = 0, market-throughput's setting) insert, sample and
// update are also timed with and without the shortcuts for unchanged masses,
// and at alpha 0.6 the insert also with its tree work on team 0 alone; one
// more run has an episode boundary every 16 rows instead of every 256.
//
// Per measurement one JSON line: median microseconds of single operations
// (each followed by an instance fence, so launch and sync latency included),
// the stream cost (ops enqueued back to back, one fence, divided), the
// effective bandwidth (bytes the operation must move / median time), and
// kernel launches per operation from KokkosToolsAudit. docs/replay.md derives
// the floor (launches x launch latency + bytes / bandwidth).
#include "core/compat.hpp"
#include "core/execution_context.hpp"
#include "core/kokkos_tools_audit.hpp"
#include "kernels/replay/sum_tree.hpp"
#include "replay/replay_buffer.hpp"

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace {

using Exec = Kokkos::DefaultExecutionSpace;
using Mem = Exec::memory_space;

struct Options {
  bool quick = false;
  int repeats = 200;
  int stream_ops = 100;
};

/// Random synthetic transitions; one row in `boundary_period` ends at an
/// episode boundary.
foxrl::TransitionBatch<Mem> make_transitions(const Exec& space, int n, int dim, std::uint64_t seed,
                                             int boundary_period) {
  using TB = foxrl::TransitionBatch<Mem>;
  TB b;
  auto alloc = [&](const char* name) {
    return Kokkos::view_alloc(space, Kokkos::WithoutInitializing, std::string("foxrl::bench::") + name);
  };
  b.observations = TB::matrix(alloc("obs"), n, dim);
  b.next_observations = TB::matrix(alloc("next_obs"), n, dim);
  b.actions = Kokkos::View<std::int32_t*, Mem>(alloc("actions"), n);
  b.rewards = TB::vector(alloc("rewards"), n);
  b.discounts = TB::vector(alloc("discounts"), n);
  b.next_is_successor = Kokkos::View<std::uint8_t*, Mem>(alloc("next_is_successor"), n);
  auto obs = b.observations;
  auto next = b.next_observations;
  auto act = b.actions;
  auto rew = b.rewards;
  auto dis = b.discounts;
  auto succ = b.next_is_successor;
  Kokkos::parallel_for(
      "foxrl::bench::make_transitions", Kokkos::RangePolicy<Exec>(space, 0, n), KOKKOS_LAMBDA(int i) {
        for (int c = 0; c < dim; ++c) {
          obs(i, c) = foxrl::kernels::counter_uniform(seed, 2 * i, c);
          next(i, c) = foxrl::kernels::counter_uniform(seed, 2 * i + 1, c);
        }
        act(i) = i % 3;
        rew(i) = foxrl::kernels::counter_uniform(seed, i, 1000);
        const bool boundary = i % boundary_period == 17 % boundary_period;
        dis(i) = boundary ? 0.0f : 0.97f;
        succ(i) = boundary ? 0 : 1;
      });
  return b;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// Median microseconds of `op` followed by a fence, after warm-up.
double time_single(const Exec& space, int repeats, const std::function<void()>& op) {
  for (int i = 0; i < 5; ++i) op();
  foxrl::compat::fence(space, "foxrl::bench::warmup");
  std::vector<double> us;
  us.reserve(repeats);
  for (int i = 0; i < repeats; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    op();
    foxrl::compat::fence(space, "foxrl::bench::op");
    const auto t1 = std::chrono::steady_clock::now();
    us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
  }
  return median(us);
}

/// Microseconds per op when `ops` are enqueued back to back (median of 5).
double time_stream(const Exec& space, int ops, const std::function<void()>& op) {
  std::vector<double> us;
  for (int r = 0; r < 5; ++r) {
    foxrl::compat::fence(space, "foxrl::bench::stream_start");
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < ops; ++i) op();
    foxrl::compat::fence(space, "foxrl::bench::stream_end");
    const auto t1 = std::chrono::steady_clock::now();
    us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / ops);
  }
  return median(us);
}

std::size_t launches_of(const std::function<void()>& op) { return foxrl::audit(op).launches.size(); }

void report(const std::string& op, const std::string& config, double median_us, double stream_us, int repeats,
            double bytes, std::size_t launches, double bytes_per_transition) {
  std::printf(
      "{\"bench\":\"replay_%s\",\"config\":\"%s\",\"median_us\":%.2f,\"stream_us\":%.2f,"
      "\"repeats\":%d,\"backend\":\"%s\",\"bytes\":%.0f,\"gb_per_s\":%.3f,\"launches\":%zu,"
      "\"bytes_per_transition\":%.2f}\n",
      op.c_str(), config.c_str(), median_us, stream_us, repeats, Exec::name(), bytes, bytes / (median_us * 1e3),
      launches, bytes_per_transition);
  std::fflush(stdout);
}

/// One row in 256 ends an episode by default (episodes of ~256 steps, as
/// in the market configs); 16 is CartPole's early episodes (cartpole-
/// throughput: one in 10-200), where the insert's boundary work dominates.
void run(const Options& opt, std::int64_t capacity, int obs_dim, float alpha, int boundary_period = 256) {
  foxrl::ExecutionContext<Exec> context(1);
  const Exec& space = context.space();
  const int num_envs = 4096, batch = 1024, n_step = 3;
  foxrl::ReplayConfig config;
  config.capacity = capacity;
  config.obs_dim = obs_dim;
  config.num_envs = num_envs;
  config.n_step = n_step;
  config.max_batch = batch;
  config.seed = 7;
  config.alpha = alpha;
  foxrl::ReplayBuffer<Exec> buffer(space, config);
  const auto transitions = make_transitions(space, num_envs, obs_dim, 11, boundary_period);
  Kokkos::View<float*, Mem> td(Kokkos::view_alloc(space, Kokkos::WithoutInitializing, "foxrl::bench::td"), batch);
  Kokkos::parallel_for(
      "foxrl::bench::make_td", Kokkos::RangePolicy<Exec>(space, 0, batch),
      KOKKOS_LAMBDA(int k) { td(k) = 4.0f * foxrl::kernels::counter_uniform(3, 0, k); });
  // Fill the ring so sampling and updates see a full tree.
  while (buffer.size() < buffer.capacity()) buffer.insert(space, transitions);
  context.fence("bench::filled");

  const std::string cfg = "capacity=" + std::to_string(capacity) + " obs_dim=" + std::to_string(obs_dim) +
                          " num_envs=" + std::to_string(num_envs) + " batch=" + std::to_string(batch) +
                          " n_step=" + std::to_string(n_step) + (alpha == 0.0f ? " alpha=0" : "") +
                          (boundary_period != 256 ? " boundaries=1/" + std::to_string(boundary_period) : "");
  const double D = obs_dim;
  const double levels = buffer.layout().tree_shape.levels;
  const double bpt = buffer.bytes_per_transition();
  // Bytes each operation must move at least (reads + writes):
  //  insert, per row: obs and next obs read and written (16 D), scalars in
  //  (13) and out (action, reward, discount, next_ref, leaf: 20), the leaf
  //  read back by its level-1 refresh (4; upper levels are 1/32 of that);
  //  sample, per draw: descent (one 128-byte line of 32 children per
  //  level), two rows gathered (16 D), slot scalars read (16) and batch
  //  scalars written (24);
  //  update, per entry: index, td, next_ref, leaf (20) and its ancestors
  //  (132 per level: 32 children read, one node written).
  const double insert_bytes = num_envs * (16.0 * D + 13 + 20 + 4);
  const double sample_bytes = batch * (128.0 * levels + 16.0 * D + 40);
  const double update_bytes = batch * (20.0 + 132.0 * (levels - 1));

  auto insert = [&] { buffer.insert(space, transitions); };
  foxrl::Batch<Mem> last = buffer.sample(space, batch, 0.5f);
  auto sample = [&] { last = buffer.sample(space, batch, 0.5f); };
  auto update = [&] { buffer.update_priorities(space, last.indices, td); };
  auto both = [&] {
    last = buffer.sample(space, batch, 0.5f);
    buffer.update_priorities(space, last.indices, td);
  };
  const int reps = opt.repeats;
  const int ops = opt.stream_ops;
  if (alpha == 0.0f) {
    // Uniform replay: the shortcuts for unchanged masses against the
    // general path (the ring is full and every mass is 1).
    for (const bool shortcuts : {true, false}) {
      buffer.set_unchanged_mass_shortcuts(shortcuts);
      const std::string suffix = shortcuts ? "" : "_general";
      const std::vector<std::pair<std::string, std::function<void()>>> ops_of{
          {"insert", insert}, {"sample", sample}, {"update", update}};
      const double bytes_of[] = {insert_bytes, sample_bytes, update_bytes};
      for (std::size_t i = 0; i < ops_of.size(); ++i) {
        const auto& op = ops_of[i].second;
        report(ops_of[i].first + suffix, cfg, time_single(space, reps, op), time_stream(space, ops, op), reps,
               bytes_of[i], launches_of([&] {
                 op();
                 context.fence("bench::audit");
               }),
               bpt);
      }
    }
    return;
  }
  report("insert", cfg, time_single(space, reps, insert), time_stream(space, ops, insert), reps, insert_bytes,
         launches_of([&] {
           insert();
           context.fence("bench::audit");
         }),
         bpt);
  // The insert's tree work on team 0 alone, against the default (spread
  // over the copy teams when there are two or more).
  const bool spread = buffer.insert_spread();
  buffer.set_insert_spread(false);
  report("insert_team0", cfg, time_single(space, reps, insert), time_stream(space, ops, insert), reps, insert_bytes,
         launches_of([&] {
           insert();
           context.fence("bench::audit");
         }),
         bpt);
  buffer.set_insert_spread(spread);
  report("sample", cfg, time_single(space, reps, sample), time_stream(space, ops, sample), reps, sample_bytes,
         launches_of([&] {
           sample();
           context.fence("bench::audit");
         }),
         bpt);
  report("update", cfg, time_single(space, reps, update), time_stream(space, ops, update), reps, update_bytes,
         launches_of([&] {
           update();
           context.fence("bench::audit");
         }),
         bpt);
  report("sample_update", cfg, time_single(space, reps, both), time_stream(space, ops, both), reps,
         sample_bytes + update_bytes, launches_of([&] {
           both();
           context.fence("bench::audit");
         }),
         bpt);
}

}  // namespace

int main(int argc, char* argv[]) {
  Options opt;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) {
      opt.quick = true;
      opt.repeats = 15;
      opt.stream_ops = 10;
    }
  }
  Kokkos::ScopeGuard guard(argc, argv);
  const std::vector<std::int64_t> capacities =
      opt.quick ? std::vector<std::int64_t>{1 << 12, 1 << 14} : std::vector<std::int64_t>{1 << 20, 1 << 24};
  for (const auto capacity : capacities) {
    for (const int dim : {65, 4}) run(opt, capacity, dim, 0.6f);
  }
  run(opt, capacities.front(), 65, 0.0f);
  run(opt, capacities.front(), 4, 0.6f, 16);
  return 0;
}
