// ReplayBuffer against independent host references: a float64 model of the
// priorities and of the sum tree, a model of which transition each slot holds
// (synthetic observations encode (env, t), so every expected value is known
// exactly), and chi-square goodness-of-fit of the sampling frequencies.
#include "core/execution_context.hpp"
#include "core/kokkos_tools_audit.hpp"
#include "kernels/replay/sum_tree.hpp"
#include "replay/replay_buffer.hpp"
#include "support/device_copy.hpp"
#include "support/replay_synthetic.hpp"
#include "support/test_spaces.hpp"
#include "views/agents/dqn/learner_metrics.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <vector>

namespace {

template <class Exec>
using Mem = typename Exec::memory_space;

using foxrl::test::make_transitions;
using foxrl::test::small_config;
using foxrl::test::Synthetic;
using foxrl::test::to_device;
using foxrl::test::to_host;
using foxrl::test::transition_in_slot;

/// Host model of the priorities: the float32 priority each written slot
/// carries, updated with the same rules the buffer documents.
struct PriorityModel {
  std::int64_t capacity;
  float alpha;
  float eps;
  std::vector<float> priority;  ///< 0 = never written
  std::int64_t inserted = 0;
  float max_priority = 1.0f;

  PriorityModel(std::int64_t c, float a, float e) : capacity(c), alpha(a), eps(e), priority(c, 0.0f) {}
  std::int64_t size() const { return std::min(inserted, capacity); }
  void insert(int n) {
    for (int i = 0; i < n; ++i) priority[(inserted + i) % capacity] = max_priority;
    inserted += n;
  }
  void update(const std::vector<std::int64_t>& idx, const std::vector<float>& td) {
    std::map<std::int64_t, float> winner;  // largest priority wins
    for (std::size_t e = 0; e < idx.size(); ++e) {
      // Negative td (a rejected update's rows): unchanged; NaN or +inf (a
      // transition whose own target is broken): quarantined at priority 0.
      if (idx[e] < 0 || idx[e] >= size() || td[e] < 0.0f) continue;
      const float p = std::isfinite(td[e]) ? std::fabs(td[e]) + eps : 0.0f;
      auto it = winner.find(idx[e]);
      if (it == winner.end() || p > it->second) winner[idx[e]] = p;
      max_priority = std::max(max_priority, p);
    }
    for (const auto& [s, p] : winner) priority[s] = p;
  }
  double mass(std::int64_t s) const { return priority[s] > 0.0f ? std::pow(double(priority[s]), double(alpha)) : 0.0; }
};

/// Checks the device tree against a float64 model of the documented layout:
/// level 0 = C leaves, each next level = groups of 32 consecutive nodes
/// summed, until a level has at most 32 nodes; every level zero-padded to a
/// multiple of 32 and starting at a multiple of 32. Leaves against the model
/// (float64 pow vs the device's powf), every internal node against the
/// float64 sum of its subtree and, exactly, against the left-to-right float
/// sum of its 32 children (the tree is what a bottom-up rebuild gives).
template <class Exec>
void check_tree(const Exec& space, const foxrl::ReplayBuffer<Exec>& buffer, const PriorityModel& model) {
  constexpr int K = 32;
  const auto tree = to_host(space, buffer.storage().tree);
  const auto& shape = buffer.layout().tree_shape;
  std::vector<std::vector<double>> ref(1, std::vector<double>(model.capacity));
  for (std::int64_t s = 0; s < model.capacity; ++s) ref[0][s] = model.mass(s);
  while (ref.back().size() > std::size_t(K)) {
    const auto& below = ref.back();
    std::vector<double> up((below.size() + K - 1) / K, 0.0);
    for (std::size_t i = 0; i < below.size(); ++i) up[i / K] += below[i];
    ref.push_back(up);
  }
  REQUIRE(shape.levels == int(ref.size()));
  std::int64_t expected_offset = 0;
  for (int l = 0; l < shape.levels; ++l) {
    REQUIRE(shape.offset[l] == expected_offset);
    REQUIRE(shape.nodes[l] == std::int64_t(ref[l].size()));
    expected_offset += (std::int64_t(ref[l].size()) + K - 1) / K * K;
  }
  REQUIRE(std::int64_t(tree.extent(0)) == expected_offset);

  int leaf_bad = 0, node_bad = 0, exact_bad = 0, pad_bad = 0;
  for (int l = 0; l < shape.levels; ++l) {
    // Left-to-right float sums of 32 positives: at most 31 roundings of
    // relative 2^-24 per level, on top of the leaves' powf error.
    const double rtol = l * (K - 1) * std::ldexp(1.0, -24) + 2e-6;
    const std::int64_t n = std::int64_t(ref[l].size());
    for (std::int64_t i = 0; i < n; ++i) {
      const double got = tree(shape.offset[l] + i);
      if (std::fabs(got - ref[l][i]) > rtol * ref[l][i] + 1e-30) {
        if ((l == 0 ? leaf_bad : node_bad)++ < 3) {
          UNSCOPED_INFO("level " << l << " node " << i << ": " << got << " vs float64 " << ref[l][i]);
        }
      }
      if (l > 0) {
        float sum = 0.0f;
        for (int j = 0; j < K; ++j) sum += tree(shape.offset[l - 1] + i * K + j);
        if (tree(shape.offset[l] + i) != sum) ++exact_bad;
      }
    }
    const std::int64_t padded = (n + K - 1) / K * K;
    for (std::int64_t i = n; i < padded; ++i) pad_bad += tree(shape.offset[l] + i) != 0.0f ? 1 : 0;
  }
  CHECK(leaf_bad == 0);
  CHECK(node_bad == 0);
  CHECK(exact_bad == 0);
  CHECK(pad_bad == 0);
  const auto maxp = to_host(space, buffer.storage().max_priority);
  CHECK(maxp() == model.max_priority);
}

/// Counts how often each slot is drawn in `calls` samples of `batch` rows.
template <class Exec>
std::vector<std::int64_t> draw_histogram(const Exec& space, foxrl::ReplayBuffer<Exec>& buffer, int calls, int batch) {
  Kokkos::View<std::int64_t*, Mem<Exec>> counts(Kokkos::view_alloc(space, "foxrl::test::counts"), buffer.capacity());
  for (int c = 0; c < calls; ++c) {
    const auto b = buffer.sample(space, batch, 0.5f);
    const auto idx = b.indices;
    Kokkos::parallel_for(
        "foxrl::test::histogram", Kokkos::RangePolicy<Exec>(space, 0, batch),
        KOKKOS_LAMBDA(int k) { Kokkos::atomic_add(&counts(idx(k)), std::int64_t(1)); });
  }
  const auto h = to_host(space, counts);
  return std::vector<std::int64_t>(h.data(), h.data() + h.extent(0));
}

/// Upper critical value of chi-square with `df` degrees of freedom at
/// significance 0.001 (Wilson-Hilferty; z_{0.999} = 3.090232).
double chi_square_critical_0001(int df) {
  const double z = 3.090232;
  const double a = 2.0 / (9.0 * df);
  return df * std::pow(1.0 - a + z * std::sqrt(a), 3.0);
}

double chi_square(const std::vector<std::int64_t>& counts, const std::vector<double>& prob, std::int64_t draws) {
  double stat = 0.0;
  for (std::size_t i = 0; i < prob.size(); ++i) {
    if (prob[i] <= 0.0) continue;
    const double expected = prob[i] * double(draws);
    stat += (double(counts[i]) - expected) * (double(counts[i]) - expected) / expected;
  }
  return stat;
}

}  // namespace

TEMPLATE_TEST_CASE("ReplayBuffer keeps each transition's next observation across boundaries and wrap", "[replay]",
                   FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  // capacity not a multiple of num_envs; n * N = 6 pending successors.
  const Synthetic syn{3, 4, 2, 4};
  // A pool of 6 rows (no evictions here: at most 3 live boundaries), and
  // a row per slot (asked for by a pool as large as the ring or larger).
  for (const std::int64_t pool : {6, 10, 64}) {
    INFO("boundary_capacity " << pool);
    auto config = small_config(10, syn.obs_dim, syn.num_envs, syn.n_step);
    config.boundary_capacity = pool;
    foxrl::ReplayBuffer<Exec> buffer(space, config);
    REQUIRE(buffer.layout().boundary_per_slot == (pool >= 10));

    std::vector<std::int64_t> all(10);
    for (int s = 0; s < 10; ++s) all[s] = s;
    const auto slots = to_device(space, all);
    for (std::int64_t t = 0; t < 13; ++t) {
      buffer.insert(space, make_transitions(space, syn, t));
      REQUIRE(buffer.size() == std::min<std::int64_t>((t + 1) * 3, 10));
      REQUIRE(buffer.write_pointer() == ((t + 1) * 3) % 10);
      const std::int64_t size = buffer.size();
      const auto view = Kokkos::subview(slots, std::make_pair(std::int64_t(0), size));
      const auto batch = buffer.gather(space, view);
      const auto states = to_host(space, batch.states);
      const auto next = to_host(space, batch.next_states);
      const auto actions = to_host(space, batch.actions);
      const auto rewards = to_host(space, batch.rewards);
      const auto discounts = to_host(space, batch.discounts);
      const auto indices = to_host(space, batch.indices);
      for (std::int64_t s = 0; s < size; ++s) {
        const std::int64_t g = transition_in_slot(s, buffer.inserted(), 10);
        const int e = int(g % 3);
        const std::int64_t tt = g / 3;
        INFO("after insert " << t << ", slot " << s << " = env " << e << " iteration " << tt);
        CHECK(indices(s) == s);
        CHECK(actions(s) == Synthetic::action(e, tt));
        CHECK(rewards(s) == Synthetic::reward(e, tt));
        CHECK(discounts(s) == syn.discount(e, tt));
        for (int c = 0; c < syn.obs_dim; ++c) {
          CHECK(states(s, c) == Synthetic::obs(e, tt, c));
          CHECK(next(s, c) == syn.next_obs(e, tt, c));
        }
      }
    }
    CHECK(to_host(space, buffer.storage().boundary_evictions)() == 0);
  }
}

TEMPLATE_TEST_CASE("ReplayBuffer stops sampling transitions whose boundary row was reused", "[replay]",
                   FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  const Synthetic syn{4, 3, 1, 3};
  // 70 slots: two tree levels, so evicted leaves' ancestors are refreshed.
  constexpr std::int64_t C = 70;
  auto config = small_config(C, syn.obs_dim, syn.num_envs, syn.n_step);
  config.boundary_capacity = 5;
  config.alpha = 0.0f;
  foxrl::ReplayBuffer<Exec> buffer(space, config);

  // Host model of the boundary pool: rows handed out in transition order.
  std::vector<std::int64_t> owner(5, -1);
  std::set<std::int64_t> evicted;
  std::int64_t head = 0, inserted = 0;
  for (std::int64_t t = 0; t < 40; ++t) {
    for (int e = 0; e < 4; ++e) {
      if (!syn.boundary(e, t)) continue;
      const std::int64_t row = head++ % 5;
      if (owner[row] >= 0 && owner[row] >= inserted + 4 - C) evicted.insert(owner[row]);
      owner[row] = inserted + e;
    }
    inserted += 4;
    buffer.insert(space, make_transitions(space, syn, t));
  }
  std::set<std::int64_t> sampleable;
  for (std::int64_t s = 0; s < C; ++s) {
    if (evicted.count(transition_in_slot(s, inserted, C)) == 0) sampleable.insert(s);
  }
  REQUIRE(sampleable.size() < std::size_t(C));  // the scenario must evict something live
  REQUIRE(!sampleable.empty());

  const auto tree = to_host(space, buffer.storage().tree);
  const auto& shape = buffer.layout().tree_shape;
  REQUIRE(shape.levels == 2);
  for (std::int64_t s = 0; s < C; ++s) {
    INFO("slot " << s);
    CHECK((tree(shape.leaf(s)) > 0.0f) == (sampleable.count(s) == 1));
  }
  // alpha = 0: each top node counts the sampleable slots below it.
  for (std::int64_t i = 0; i < shape.nodes[1]; ++i) {
    float live = 0.0f;
    for (std::int64_t s = i * 32; s < std::min(C, (i + 1) * 32); ++s) live += float(sampleable.count(s));
    CHECK(tree(shape.node(1, i)) == live);
  }
  std::set<std::int64_t> seen;
  for (int call = 0; call < 20; ++call) {
    const auto batch = buffer.sample(space, 64, 1.0f);
    const auto idx = to_host(space, batch.indices);
    const auto states = to_host(space, batch.states);
    const auto next = to_host(space, batch.next_states);
    for (int k = 0; k < 64; ++k) {
      const std::int64_t g = transition_in_slot(idx(k), inserted, C);
      const int e = int(g % 4);
      const std::int64_t tt = g / 4;
      INFO("draw " << k << " slot " << idx(k));
      REQUIRE(sampleable.count(idx(k)) == 1);
      seen.insert(idx(k));
      for (int c = 0; c < syn.obs_dim; ++c) {
        CHECK(states(k, c) == Synthetic::obs(e, tt, c));
        CHECK(next(k, c) == syn.next_obs(e, tt, c));
      }
    }
  }
  CHECK(seen == sampleable);
  CHECK(to_host(space, buffer.storage().boundary_evictions)() > 0);
}

/// Nodes of the tree that are not the left-to-right float sum of their 32
/// children, plus nonzero padding: 0 for a tree a full rebuild would give.
int inexact_nodes(const Kokkos::View<float*, Kokkos::HostSpace>& tree, const foxrl::SumTreeShape& shape) {
  constexpr int K = 32;
  int bad = 0;
  for (int l = 0; l < shape.levels; ++l) {
    const std::int64_t padded = (shape.nodes[l] + K - 1) / K * K;
    for (std::int64_t i = 0; i < padded; ++i) {
      if (i >= shape.nodes[l]) {
        bad += tree(shape.offset[l] + i) != 0.0f ? 1 : 0;
      } else if (l > 0) {
        float sum = 0.0f;
        for (int j = 0; j < K; ++j) sum += tree(shape.offset[l - 1] + i * K + j);
        bad += tree(shape.offset[l] + i) != sum ? 1 : 0;
      }
    }
  }
  return bad;
}

TEMPLATE_TEST_CASE("ReplayBuffer insert: the tree work spread over the copy teams gives team 0's storage bit for bit",
                   "[replay][sum_tree]", FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  // Boundaries every few rows and pools as small as allowed, so inserts
  // evict live rows. Rings of one level (20 slots: no node above the
  // leaves), two (70), a near-full wrap whose two ranges of new slots share
  // a level-1 node (90 of 100), and four levels with 2,500 rows per insert.
  struct Case {
    std::int64_t capacity;
    int num_envs;
    std::int64_t pool;
    int boundary_period;
    int steps;
  };
  for (const float alpha : {0.6f, 0.0f})
    for (const Case c : {Case{20, 12, 12, 3, 30}, Case{70, 4, 5, 3, 60}, Case{100, 90, 90, 4, 30},
                         Case{33000, 2500, 2500, 5, 30}, Case{70, 4, 70, 3, 60}, Case{33000, 2500, 33000, 5, 30}}) {
      std::vector<float> first_tree;
      std::vector<std::int64_t> first_refs;
      std::vector<float> first_boundary_rows;
      for (const bool spread : {false, true}) {
        INFO("capacity " << c.capacity << ", " << c.num_envs << " envs, alpha " << alpha
                         << (spread ? ", spread over the copy teams" : ", team 0 alone"));
        const Synthetic syn{c.num_envs, 3, 2, c.boundary_period};
        auto config = small_config(c.capacity, syn.obs_dim, syn.num_envs, syn.n_step);
        config.boundary_capacity = c.pool;
        config.alpha = alpha;
        foxrl::ReplayBuffer<Exec> buffer(space, config);
        buffer.set_insert_spread(spread);
        const auto& shape = buffer.layout().tree_shape;
        std::mt19937_64 rng(11);
        std::uniform_real_distribution<float> err(0.1f, 4.0f);
        for (int step = 0; step < c.steps; ++step) {
          INFO("step " << step);
          buffer.insert(space, make_transitions(space, syn, step));
          if (step % 2 == 1) {
            // New priorities, so new leaves (the largest priority seen) and
            // old ones differ and the maximum grows.
            const int n = 1 + int(rng() % std::uint64_t(c.num_envs));
            std::vector<std::int64_t> idx(n);
            std::vector<float> td(n);
            for (int e = 0; e < n; ++e) {
              idx[e] = std::int64_t(rng() % std::uint64_t(buffer.size()));
              td[e] = err(rng) * err(rng);
            }
            buffer.update_priorities(space, to_device(space, idx), to_device(space, td));
          }
          const auto tree = to_host(space, buffer.storage().tree);
          const auto refs = to_host(space, buffer.storage().next_ref);
          CHECK(inexact_nodes(tree, shape) == 0);
          int wrong_mass = 0;
          for (std::int64_t s = 0; s < buffer.size(); ++s) {
            wrong_mass += (tree(shape.leaf(s)) > 0.0f) != (refs(s) != foxrl::replay_next_evicted) ? 1 : 0;
          }
          CHECK(wrong_mass == 0);  // mass on every live slot, none on an evicted one
          CHECK(to_host(space, buffer.storage().insert_counts)(0) == 0);
          CHECK(to_host(space, buffer.storage().teams_done)() == 0);
        }
        const auto tree = to_host(space, buffer.storage().tree);
        std::vector<float> flat(tree.data(), tree.data() + tree.extent(0));
        flat.push_back(to_host(space, buffer.storage().max_priority)());
        const auto refs = to_host(space, buffer.storage().next_ref);
        const auto owners = to_host(space, buffer.storage().boundary_owner);
        std::vector<std::int64_t> ids(refs.data(), refs.data() + refs.extent(0));
        ids.insert(ids.end(), owners.data(), owners.data() + owners.extent(0));
        ids.push_back(to_host(space, buffer.storage().boundary_head)());
        const std::int64_t evictions = to_host(space, buffer.storage().boundary_evictions)();
        ids.push_back(evictions);
        const auto rows = to_host(space, buffer.storage().boundary_observations);
        std::vector<float> boundary_rows;
        // The pool's rows handed out (the others were never written), or
        // every row of a row per slot (zeroed until its slot ends an episode).
        const bool per_slot = buffer.layout().boundary_per_slot;
        REQUIRE(per_slot == (c.pool >= c.capacity));
        for (std::int64_t r = 0; r < std::int64_t(rows.extent(0)); ++r) {
          if (!per_slot && owners(r) < 0) continue;
          for (int k = 0; k < syn.obs_dim; ++k) boundary_rows.push_back(rows(r, k));
        }
        if (!per_slot && (c.capacity == 70 || c.capacity == 33000)) CHECK(evictions > 0);
        if (per_slot) CHECK(evictions == 0);
        if (!spread) {
          first_tree = flat;
          first_refs = ids;
          first_boundary_rows = boundary_rows;
        } else {
          CHECK(flat == first_tree);
          CHECK(ids == first_refs);
          CHECK(boundary_rows == first_boundary_rows);
        }
      }
    }
}

TEMPLATE_TEST_CASE("ReplayBuffer sum tree matches a float64 model after random inserts and updates",
                   "[replay][sum_tree]", FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  // 100 slots: leaves + a top level of 4 nodes (one update team per top
  // node). 33000 slots: four levels (33000, 1032, 33, 2), inserts that wrap
  // and updates large enough to need several staged chunks per level.
  struct Case {
    std::int64_t capacity;
    int num_envs;
    int max_update;
    int steps;
  };
  // alpha = 0 (uniform replay) too, where every update leaves the leaves
  // as they are but for the rare non-finite td (quarantine), with and
  // without the shortcuts for leaves that keep their mass (the insert's and
  // the update's skip, the sample's unit draws). A sample after every step
  // compares the draws and weights too.
  std::map<std::pair<std::int64_t, float>, std::vector<float>> final_tree;  // per capacity and alpha, first run
  std::map<std::pair<std::int64_t, float>, std::vector<float>> first_draws;
  for (const float alpha : {0.6f, 0.0f})
    for (const bool shortcuts : {true, false})
      for (const bool below_top : {false, true})
        for (const Case c : {Case{100, 6, 40, 90}, Case{33000, 2500, 1500, 60}}) {
          INFO("capacity " << c.capacity << ", alpha " << alpha << ", update teams own nodes "
                           << (below_top ? "below the top" : "at the top") << (shortcuts ? ", shortcuts" : ""));
          const Synthetic syn{c.num_envs, 2, 3, 0};
          auto config = small_config(c.capacity, syn.obs_dim, syn.num_envs, syn.n_step);
          config.alpha = alpha;
          foxrl::ReplayBuffer<Exec> buffer(space, config);
          buffer.set_update_owner_below_top(below_top);
          buffer.set_unchanged_mass_shortcuts(shortcuts);
          // Both insert schedules meet both settings of each switch above;
          // under alpha = 0 with the shortcuts, the flat uniform update runs
          // in one of the two owner settings (it ignores the owner level)
          // and the tree-owner update in the other.
          buffer.set_insert_spread(shortcuts != below_top);
          buffer.set_flat_uniform_update(below_top);
          PriorityModel model(c.capacity, config.alpha, config.eps);

          std::mt19937_64 rng(7);
          std::int64_t t = 0;
          std::vector<float> draws;
          // How often the shortcuts' conditions held (alpha = 0): the ring
          // full and every slot at mass 1 at an insert or a sample.
          int unit_inserts = 0, unit_samples = 0;
          const auto all_units = [&] {
            for (std::int64_t s = 0; s < model.size(); ++s)
              if (model.mass(s) != 1.0) return false;
            return true;
          };
          for (int step = 0; step < c.steps; ++step) {
            if (buffer.size() == 0 || rng() % 3 == 0) {
              if (alpha == 0.0f && model.size() == c.capacity && all_units()) ++unit_inserts;
              buffer.insert(space, make_transitions(space, syn, t++));
              model.insert(syn.num_envs);
            } else {
              const int n = 1 + int(rng() % std::uint64_t(c.max_update));
              std::vector<std::int64_t> idx(n);
              std::vector<float> td(n);
              std::uniform_real_distribution<float> err(0.0f, 4.0f);
              for (int e = 0; e < n; ++e) {
                idx[e] = std::int64_t(rng() % std::uint64_t(buffer.size()));
                td[e] = err(rng) * err(rng);  // spread over several orders of magnitude
                if (rng() % 200 == 0) td[e] = std::numeric_limits<float>::quiet_NaN();  // quarantine
              }
              buffer.update_priorities(space, to_device(space, idx), to_device(space, td));
              model.update(idx, td);
            }
            INFO("step " << step);
            check_tree(space, buffer, model);
            if (alpha == 0.0f && all_units()) ++unit_samples;
            const auto batch = buffer.sample(space, 37, 0.5f);
            const auto slots = to_host(space, batch.indices);
            const auto weights = to_host(space, batch.is_weights);
            for (int k = 0; k < 37; ++k) {
              draws.push_back(static_cast<float>(slots(k)));
              draws.push_back(weights(k));
            }
          }
          INFO("unit inserts " << unit_inserts << ", unit samples " << unit_samples);
          if (alpha == 0.0f) {
            if (c.capacity == 100) CHECK(unit_inserts > 0);  // the larger ring always holds a quarantine when full
            CHECK(unit_samples > 0);
            CHECK(unit_samples < c.steps);  // quarantines interrupt the unit draws
          }
          // Same draws, same tree (and maximum priority) bit for bit, whichever level the teams own,
          // whether the shortcuts are taken and whichever update uniform replay runs.
          const auto tree = to_host(space, buffer.storage().tree);
          std::vector<float> flat(tree.data(), tree.data() + tree.extent(0));
          flat.push_back(to_host(space, buffer.storage().max_priority)());
          const auto key = std::make_pair(c.capacity, alpha);
          if (final_tree.count(key) == 0) {
            final_tree[key] = flat;
            first_draws[key] = draws;
          } else {
            CHECK(flat == final_tree[key]);
            CHECK(draws == first_draws[key]);
          }
        }
}

/// A draw's target given outright (sum_tree_draw's target_of).
struct FixedTarget {
  float target = 0.0f;
  KOKKOS_INLINE_FUNCTION float operator()(float /*total*/) const { return target; }
};

TEST_CASE("sum_tree_unit_draw is the descent on a tree of unit masses", "[replay][sum_tree]") {
  // Host trees whose first `filled` leaves hold 1, built like the device's
  // (every node the left-to-right sum of its children); targets at and
  // around every kind of edge: integers, just below them, the total and past it.
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  for (const std::int64_t capacity : {1, 7, 32, 33, 100, 1025, 33000, 70000}) {
    const auto shape = foxrl::SumTreeShape::for_leaves(capacity);
    for (const std::int64_t filled : {std::int64_t(1), capacity / 2 + 1, capacity - 1, capacity}) {
      if (filled < 1) continue;
      Kokkos::View<float*, Kokkos::HostSpace> tree("foxrl::test::unit_tree", shape.size);
      for (std::int64_t s = 0; s < filled; ++s) tree(shape.leaf(s)) = 1.0f;
      for (int level = 1; level < shape.levels; ++level)
        for (std::int64_t i = 0; i < shape.nodes[level]; ++i) {
          float sum = 0.0f;
          for (int j = 0; j < foxrl::sum_tree_fanout; ++j) sum += tree(shape.offset[level - 1] + i * 32 + j);
          tree(shape.node(level, i)) = sum;
        }
      const float total = foxrl::kernels::sum_tree_total(tree, shape);
      INFO("capacity " << capacity << ", filled " << filled);
      REQUIRE(foxrl::kernels::sum_tree_all_units(total, filled));
      CHECK_FALSE(foxrl::kernels::sum_tree_all_units(total, filled + 1));
      std::vector<float> targets{0.0f, total, std::nextafter(total, 0.0f), std::nextafter(total, 2 * total),
                                 total + 3.0f};
      for (int i = 0; i < 200; ++i) {
        const float whole = std::floor(unit(rng) * total);
        targets.push_back(whole);
        targets.push_back(std::nextafter(whole, 0.0f));
        targets.push_back(std::nextafter(whole, total));
        targets.push_back(foxrl::kernels::stratified_target(i % 64, unit(rng), 64, total));
      }
      for (const float target : targets) {
        INFO("target " << target);
        const auto descent = foxrl::kernels::sum_tree_draw(tree, shape, filled, FixedTarget{target});
        const auto shortcut = foxrl::kernels::sum_tree_unit_draw(target, filled);
        CHECK(shortcut.slot == descent.slot);
        CHECK(shortcut.mass == descent.mass);
      }
    }
  }
}

TEMPLATE_TEST_CASE("ReplayBuffer duplicate indices in one update: the largest priority wins", "[replay]",
                   FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  const Synthetic syn{4, 2, 1, 0};
  auto config = small_config(16, syn.obs_dim, syn.num_envs, syn.n_step);
  const std::vector<std::int64_t> idx{5, 5, 7, 5, 9, 7, 40, -1};
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> td{1.0f, 3.0f, 2.0f, 0.5f, nan, 0.25f, 9.0f, 9.0f};

  std::vector<std::vector<float>> trees;
  for (int run = 0; run < 2; ++run) {
    foxrl::ReplayBuffer<Exec> buffer(space, config);
    PriorityModel model(16, config.alpha, config.eps);
    for (int t = 0; t < 3; ++t) {
      buffer.insert(space, make_transitions(space, syn, t));
      model.insert(4);
    }
    buffer.update_priorities(space, to_device(space, idx), to_device(space, td));
    model.update(idx, td);  // 40 and -1 are outside [0, size): ignored
    check_tree(space, buffer, model);
    const auto tree = to_host(space, buffer.storage().tree);
    const auto& shape = buffer.layout().tree_shape;
    CHECK(tree(shape.leaf(5)) == Approx(std::pow(3.0 + 1e-6, 0.6)).epsilon(2e-6));
    CHECK(tree(shape.leaf(7)) == Approx(std::pow(2.0 + 1e-6, 0.6)).epsilon(2e-6));
    CHECK(tree(shape.leaf(9)) == 0.0f);  // NaN td: quarantined
    trees.emplace_back(tree.data(), tree.data() + tree.extent(0));
  }
  CHECK(trees[0] == trees[1]);
}

TEMPLATE_TEST_CASE(
    "ReplayBuffer: negative td errors (a rejected update's) change no priority, non-finite "
    "ones quarantine their transition",
    "[replay][guard]", FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  const Synthetic syn{4, 2, 1, 0};
  auto config = small_config(16, syn.obs_dim, syn.num_envs, syn.n_step);
  foxrl::ReplayBuffer<Exec> buffer(space, config);
  PriorityModel model(16, config.alpha, config.eps);
  for (int t = 0; t < 3; ++t) {
    buffer.insert(space, make_transitions(space, syn, t));
    model.insert(4);
  }
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  buffer.update_priorities(space, to_device(space, std::vector<std::int64_t>{1, 2, 3}),
                           to_device(space, std::vector<float>{0.5f, 2.0f, 0.125f}));
  model.update({1, 2, 3}, {0.5f, 2.0f, 0.125f});
  const auto tree_before = to_host(space, buffer.storage().tree);
  const std::vector<float> before(tree_before.data(), tree_before.data() + tree_before.extent(0));
  const float max_before = to_host(space, buffer.storage().max_priority)();

  // What the learner hands over for a rejected update's healthy rows.
  const std::vector<std::int64_t> idx{1, 2, 3, 4, 5, 6};
  buffer.update_priorities(space, to_device(space, idx),
                           to_device(space, std::vector<float>(6, foxrl::keep_priority_td)));
  const auto tree_after = to_host(space, buffer.storage().tree);
  CHECK(std::vector<float>(tree_after.data(), tree_after.data() + tree_after.extent(0)) == before);
  CHECK(to_host(space, buffer.storage().max_priority)() == max_before);

  // Mixed: NaN and +inf rows get priority 0 (never sampled again), negative
  // ones (-inf included) stay, finite ones are written.
  const std::vector<float> td{inf, -inf, 4.0f, nan, 0.25f, foxrl::keep_priority_td};
  buffer.update_priorities(space, to_device(space, idx), to_device(space, td));
  model.update(idx, td);
  check_tree(space, buffer, model);
  const auto tree = to_host(space, buffer.storage().tree);
  const auto& shape = buffer.layout().tree_shape;
  CHECK(tree(shape.leaf(1)) == 0.0f);
  CHECK(tree(shape.leaf(2)) == before[shape.leaf(2)]);
  CHECK(tree(shape.leaf(3)) == Approx(std::pow(4.0 + 1e-6, 0.6)).epsilon(2e-6));
  CHECK(tree(shape.leaf(4)) == 0.0f);
  CHECK(tree(shape.leaf(6)) == before[shape.leaf(6)]);
  std::size_t nonfinite_nodes = 0;
  for (std::size_t i = 0; i < tree.extent(0); ++i) nonfinite_nodes += !std::isfinite(tree(i));
  CHECK(nonfinite_nodes == 0);
  CHECK(to_host(space, buffer.storage().max_priority)() == Approx(4.0 + 1e-6).epsilon(1e-7));
}

TEMPLATE_TEST_CASE("ReplayBuffer sampling frequencies follow p^alpha (chi-square, 10^6 draws)", "[replay][statistics]",
                   FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  const Synthetic syn{8, 2, 1, 0};
  auto config = small_config(64, syn.obs_dim, syn.num_envs, syn.n_step);
  foxrl::ReplayBuffer<Exec> buffer(space, config);
  PriorityModel model(64, config.alpha, config.eps);
  for (int t = 0; t < 8; ++t) {
    buffer.insert(space, make_transitions(space, syn, t));
    model.insert(8);
  }
  std::vector<std::int64_t> idx(64);
  std::vector<float> td(64);
  for (int s = 0; s < 64; ++s) {
    idx[s] = s;
    td[s] = 0.01f + 0.37f * float((s * 11) % 17) + (s % 5 == 0 ? 6.0f : 0.0f);
  }
  buffer.update_priorities(space, to_device(space, idx), to_device(space, td));
  model.update(idx, td);

  const int calls = 977, batch = 1024;  // 1,000,448 draws
  const auto counts = draw_histogram(space, buffer, calls, batch);
  double total = 0.0;
  for (int s = 0; s < 64; ++s) total += model.mass(s);
  std::vector<double> prob(64);
  for (int s = 0; s < 64; ++s) prob[s] = model.mass(s) / total;
  const double stat = chi_square(counts, prob, std::int64_t(calls) * batch);
  const double critical = chi_square_critical_0001(63);
  INFO("chi-square " << stat << ", critical value (df 63, p = 0.001) " << critical);
  CHECK(stat < critical);

  // The same test must reject a wrong distribution: uniform is far off here.
  const std::vector<double> uniform(64, 1.0 / 64.0);
  CHECK(chi_square(counts, uniform, std::int64_t(calls) * batch) > critical);
}

TEMPLATE_TEST_CASE("ReplayBuffer with alpha = 0 samples the filled slots uniformly, never the others",
                   "[replay][statistics]", FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  const Synthetic syn{8, 2, 1, 0};
  auto config = small_config(64, syn.obs_dim, syn.num_envs, syn.n_step);
  config.alpha = 0.0f;
  foxrl::ReplayBuffer<Exec> buffer(space, config);
  for (int t = 0; t < 5; ++t) buffer.insert(space, make_transitions(space, syn, t));  // 40 of 64
  std::vector<std::int64_t> idx(40);
  std::vector<float> td(40);
  for (int s = 0; s < 40; ++s) {
    idx[s] = s;
    td[s] = 0.1f * float(s + 1);  // ignored by alpha = 0
  }
  buffer.update_priorities(space, to_device(space, idx), to_device(space, td));

  const int calls = 400, batch = 1000;
  const auto counts = draw_histogram(space, buffer, calls, batch);
  for (int s = 40; s < 64; ++s) CHECK(counts[s] == 0);
  const std::vector<double> prob(40, 1.0 / 40.0);
  const double stat = chi_square(counts, prob, std::int64_t(calls) * batch);
  INFO("chi-square " << stat);
  CHECK(stat < chi_square_critical_0001(39));

  const auto weights = to_host(space, buffer.sample(space, 256, 0.7f).is_weights);
  for (int k = 0; k < 256; ++k) CHECK(weights(k) == 1.0f);
}

TEMPLATE_TEST_CASE("ReplayBuffer importance weights and draws match a host reference", "[replay]", FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  const Synthetic syn{8, 3, 2, 0};
  auto config = small_config(200, syn.obs_dim, syn.num_envs, syn.n_step);
  foxrl::ReplayBuffer<Exec> buffer(space, config);
  PriorityModel model(200, config.alpha, config.eps);
  for (int t = 0; t < 20; ++t) {  // 160 of 200 slots
    buffer.insert(space, make_transitions(space, syn, t));
    model.insert(8);
  }
  std::vector<std::int64_t> idx(160);
  std::vector<float> td(160);
  for (int s = 0; s < 160; ++s) {
    idx[s] = s;
    td[s] = std::exp(0.05f * float((s * 37) % 101)) * 0.01f;
  }
  buffer.update_priorities(space, to_device(space, idx), to_device(space, td));
  model.update(idx, td);

  buffer.sample(space, 300, 0.4f);  // advances the RNG stream: the next call is call 1
  const float beta = 0.4f;
  const int B = 512;
  const auto batch = buffer.sample(space, B, beta);
  const auto indices = to_host(space, batch.indices);
  const auto weights = to_host(space, batch.is_weights);
  const auto tree = to_host(space, buffer.storage().tree);

  double total = 0.0;
  std::vector<double> cumulative(201, 0.0);  // mass of slots < s
  for (int s = 0; s < 200; ++s) {
    total += model.mass(s);
    cumulative[s + 1] = total;
  }
  const double size = double(buffer.size());
  std::vector<double> w(B);
  double w_max = 0.0;
  for (int k = 0; k < B; ++k) {
    w[k] = std::pow(size * model.mass(indices(k)) / total, -double(beta));
    w_max = std::max(w_max, w[k]);
  }
  for (int k = 0; k < B; ++k) {
    INFO("draw " << k << " slot " << indices(k));
    REQUIRE(indices(k) >= 0);
    REQUIRE(indices(k) < 160);
    CHECK(double(weights(k)) == Approx(w[k] / w_max).epsilon(1e-5));
    // Draw k comes from stratum k, so slots are non-decreasing in k ...
    if (k > 0) CHECK(indices(k) >= indices(k - 1));
    // ... its slot's cumulative-mass interval holds the float64 target (up
    // to the tree's float rounding) ...
    const float u = foxrl::kernels::counter_uniform(config.seed, 1, std::uint64_t(k));
    const double target = (double(k) + double(u)) * total / double(B);
    const double slack = 1e-5 * total;
    CHECK(cumulative[indices(k)] <= target + slack);
    CHECK(target <= cumulative[indices(k) + 1] + slack);
    // ... and it is the host descent of the same tree with the same counter.
    const auto draw = foxrl::kernels::sum_tree_draw(tree, buffer.layout().tree_shape, buffer.size(),
                                                    foxrl::kernels::StratifiedTarget{k, u, B});
    CHECK(draw.slot == indices(k));
  }
}

TEMPLATE_TEST_CASE("ReplayBuffer insert, sample and update stay on the context's instance", "[replay][audit]",
                   FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  const Synthetic syn{16, 5, 3, 4};
  auto config = small_config(1000, syn.obs_dim, syn.num_envs, syn.n_step);
  foxrl::ReplayBuffer<Exec> buffer(space, config);
  const auto transitions = make_transitions(space, syn, 0);
  std::vector<float> td_host(128);
  for (int k = 0; k < 128; ++k) td_host[k] = 0.01f * float(k);
  const auto td = to_device(space, td_host);
  auto iteration = [&] {
    buffer.insert(space, transitions);
    const auto batch = buffer.sample(space, 128, 0.5f);
    buffer.update_priorities(space, batch.indices, td);
  };
  iteration();  // a backend may size its internal scratch on first use
  context.fence("test::setup");

  const auto record = foxrl::audit([&] {
    iteration();
    context.fence("test::done");
  });
  const auto violations = record.violations(foxrl::tools_device_id(space));
  INFO("violations: " << violations.size() << (violations.empty() ? "" : ", first: " + violations.front()));
  CHECK(violations.empty());
  CHECK(record.launches.size() == 3);  // one kernel per operation
  for (const auto& a : record.allocations) {
    INFO("allocation " << a.label);
    CHECK(a.label.rfind("foxrl::", 0) != 0);  // the buffer allocates nothing per call
  }
}

TEMPLATE_TEST_CASE("ReplayBuffer rejects bad input and reports its footprint", "[replay]", FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::ExecutionContext<Exec> context;
  const auto& space = context.space();
  const Synthetic syn{4, 65, 3, 0};
  auto config = small_config(4096, syn.obs_dim, syn.num_envs, syn.n_step);
  config.boundary_capacity = 64;
  foxrl::ReplayBuffer<Exec> buffer(space, config);
  // Calls a program gets wrong are LogicErrors; a bad config is the user's.
  CHECK_THROWS_AS(buffer.sample(space, 8, 0.4f), foxrl::LogicError);  // empty
  buffer.insert(space, make_transitions(space, syn, 0));
  CHECK_THROWS_AS(buffer.sample(space, 0, 0.4f), foxrl::LogicError);
  CHECK_THROWS_AS(buffer.sample(space, 1025, 0.4f), foxrl::LogicError);
  const Synthetic wrong{5, 65, 3, 0};
  CHECK_THROWS_AS(buffer.insert(space, make_transitions(space, wrong, 1)), foxrl::LogicError);
  auto bad = config;
  bad.capacity = 3;
  CHECK_THROWS_AS(foxrl::ReplayBuffer<Exec>(space, bad), foxrl::UsageError);
  CHECK_THROWS_WITH(foxrl::ReplayBuffer<Exec>(space, bad),
                    Catch::Contains("foxrl::ReplayConfig") && Catch::Contains("capacity = 3"));
  bad = config;
  bad.alpha = -0.5f;
  CHECK_THROWS_WITH(foxrl::ReplayBuffer<Exec>(space, bad), Catch::Contains("alpha = -0.5: must be >= 0"));

  // obs stored once (+ n*N pending rows and a small boundary pool), plus
  // action, reward, discount, next_ref (4 bytes each) and the tree: levels
  // of 4096, 128 and 4 nodes, each padded to a multiple of 32 floats.
  const double obs_bytes = 4.0 * syn.obs_dim;
  const double scalars = 4 * 4 + 4.0 * (4096 + 128 + 32) / 4096;
  const double pending = obs_bytes * (3.0 * 4) / 4096 + (obs_bytes + 8) * 64 / 4096;
  CHECK(buffer.bytes_per_transition() == Approx(obs_bytes + scalars + pending).epsilon(1e-9));
}
