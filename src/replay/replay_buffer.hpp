#pragma once
// ReplayBuffer: prioritized experience replay (proportional PER, Schaul et
// al. 2016) kept entirely in the memory space of the run's instance. Insert,
// sample and priority update are one kernel launch each on that instance; the
// host keeps only the counters it can know without a read-back (inserts are
// always num_envs rows). Layout, budget and decisions: docs/replay.md.

#include "core/compat.hpp"
#include "core/error.hpp"
#include "core/kernel_paths.hpp"
#include "core/validate.hpp"
#include "kernels/core/call_once.hpp"
#include "kernels/replay/replay_kernels.hpp"
#include "kernels/replay/replay_uniform_update.hpp"
#include "views/collect/transition_batch.hpp"
#include "views/replay/batch.hpp"
#include "views/replay/replay_storage.hpp"

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>

namespace foxrl {

/// Hyperparameters and sizes of a ReplayBuffer.
struct ReplayConfig {
  std::int64_t capacity = 0;  ///< transitions kept (ring); >= num_envs
  int obs_dim = 0;
  int num_envs = 0;      ///< rows of every insert (enforced)
  int n_step = 1;        ///< a successor observation arrives n_step inserts later
  int max_batch = 1024;  ///< largest sample/gather batch (buffers are preallocated)
  float alpha = 0.6f;    ///< priority exponent; 0 gives uniform replay
  float eps = 1e-6f;     ///< priority = |td| + eps
  /// Rows kept for next observations at episode boundaries; 0 picks
  /// capacity for observations of at most boundary_per_slot_max_dim
  /// components, else
  /// max(num_envs, capacity / 4). capacity or more: a row
  /// per slot (nothing handed out, nothing evicted). Fewer: a pool whose
  /// oldest boundary transitions still in the ring stop being sampled when
  /// it is exceeded (see docs/replay.md).
  std::int64_t boundary_capacity = 0;
  std::uint64_t seed = 0;  ///< root of the counter-based sampling stream
};

/// Prioritized replay ring in device memory. Not thread-safe; every call
/// that launches work takes the run's instance first.
template <class ExecSpace>
class ReplayBuffer {
 public:
  using execution_space = ExecSpace;
  using memory_space = typename ExecSpace::memory_space;
  using index_view = Kokkos::View<const std::int64_t*, memory_space>;
  using error_view = Kokkos::View<const float*, memory_space>;

  static constexpr int max_batch_limit = 1 << 16;
  /// The widest observation whose boundary rows default to one per slot:
  /// 64 bytes a slot, what a pool of a quarter of the slots costs at about
  /// 60 components, and no scan, hand-out or eviction in the insert.
  static constexpr int boundary_per_slot_max_dim = 16;

  ReplayBuffer(const ExecSpace& space, const ReplayConfig& config) : config_(config) {
    validate(config_);
    layout_.capacity = config_.capacity;
    layout_.num_envs = config_.num_envs;
    layout_.n_step = config_.n_step;
    layout_.obs_dim = config_.obs_dim;
    layout_.lookahead = std::int64_t(config_.n_step) * config_.num_envs;
    layout_.obs_rows = layout_.capacity + layout_.lookahead;
    layout_.boundary_capacity = config_.boundary_capacity > 0 ? config_.boundary_capacity
                                : config_.obs_dim <= boundary_per_slot_max_dim
                                    ? config_.capacity
                                    : std::max<std::int64_t>(config_.num_envs, config_.capacity / 4);
    layout_.boundary_per_slot = layout_.boundary_capacity >= layout_.capacity;
    if (layout_.boundary_per_slot) layout_.boundary_capacity = layout_.capacity;
    if (layout_.boundary_capacity < config_.num_envs) {
      throw UsageError("foxrl::ReplayBuffer: boundary_capacity " + std::to_string(layout_.boundary_capacity) +
                       " is below num_envs " + std::to_string(config_.num_envs) +
                       " (one insert may hold num_envs boundaries)");
    }
    layout_.tree_shape = SumTreeShape::for_leaves(layout_.capacity);
    allocate(space);
    choose_team_sizes(space);
  }

  /// Where the kernels read the buffer's counters: its host counters, or a
  /// trainer's device clock holding the same values (a captured graph then
  /// reads them afresh on every replay).
  struct CounterReads {
    kernels::CounterRead inserted;      ///< transitions written so far
    kernels::CounterRead sample_calls;  ///< sample calls so far
  };
  CounterReads host_counters() const {
    return {kernels::CounterRead::host(inserted_),
            kernels::CounterRead::host(static_cast<std::int64_t>(sample_calls_))};
  }

  /// Appends one row per env at slots (ptr + i) % capacity with the current
  /// maximum priority. `batch.size()` must equal num_envs on every call.
  void insert(const ExecSpace& space, const TransitionBatch<memory_space>& batch) {
    insert(space, batch, host_counters().inserted);
  }

  /// The same with the kernel reading the insert count from `inserted`.
  void insert(const ExecSpace& space, const TransitionBatch<memory_space>& batch, kernels::CounterRead inserted) {
    check_batch(batch);
    const int chunks = (config_.num_envs + insert_rows_per_team_ - 1) / insert_rows_per_team_;
    kernels::replay_insert(space, insert_functor(batch, inserted), chunks, insert_team_size_);
    inserted_ += config_.num_envs;
  }

  /// The insert of `batch` as work for one team of another launch
  /// (kernels::ReplayInsertFunctor::whole_in_team; the collector runs it in
  /// its one-team record: kernels::record_step's `after`), the same writes
  /// as insert(). Only where insert_fits_one_team(). Counts the insert: the
  /// caller must launch it.
  struct InsertInTeam {
    using member_type = typename Kokkos::TeamPolicy<ExecSpace>::member_type;
    kernels::ReplayInsertFunctor<ExecSpace> insert;
    int threads = 1;  ///< the insert's own team size
    std::size_t scratch_bytes() const {
      return kernels::ReplayInsertFunctor<ExecSpace>::scratch_bytes(insert.refresh_groups);
    }
    int team_threads() const { return threads; }
    KOKKOS_INLINE_FUNCTION void operator()(const member_type& team) const { insert.whole_in_team(team); }
  };
  InsertInTeam insert_in_team(const TransitionBatch<memory_space>& batch, kernels::CounterRead inserted) {
    if (!insert_fits_one_team())
      throw LogicError("foxrl::ReplayBuffer::insert_in_team: an insert of " + std::to_string(config_.num_envs) +
                       " rows spreads over several teams");
    check_batch(batch);
    InsertInTeam in;
    in.insert = insert_functor(batch, inserted);
    in.threads = insert_team_size_;
    inserted_ += config_.num_envs;
    return in;
  }
  /// Whether one team does all of an insert (no tree work spread over copy
  /// teams): insert_in_team() takes it then.
  bool insert_fits_one_team() const { return !insert_spread_; }

  /// Draws `batch_size` transitions by stratified proportional sampling
  /// (draw k uniform in stratum k of the total mass, counter-based RNG of
  /// (seed, call number, k)) and returns them with importance weights
  /// (size P_i)^-beta normalised by the batch maximum. The returned Views
  /// alias buffers that the next sample or gather overwrites.
  Batch<memory_space> sample(const ExecSpace& space, int batch_size, float beta) {
    if (!(beta >= 0.0f)) {
      throw UsageError("foxrl::ReplayBuffer::sample: beta must be >= 0, got " + std::to_string(beta));
    }
    return launch_sample(space, batch_size, kernels::BetaSchedule::fixed(beta), kernels::CounterRead::host(0),
                         host_counters(), index_view(), "foxrl::Replay::sample");
  }

  /// The same with beta = `beta` at the update count `beta_clock` and the
  /// buffer's counters read from `at` when the kernel runs, and every
  /// observation component the batch receives passed through
  /// `transform(component, value)` (a device functor; e.g. the signal
  /// adapter's normalisation, SignalAdapter::element_normalizer).
  template <class Transform = kernels::KeepObservation>
  Batch<memory_space> sample(const ExecSpace& space, int batch_size, const kernels::BetaSchedule& beta,
                             kernels::CounterRead beta_clock, const CounterReads& at,
                             const Transform& transform = Transform()) {
    if (!(beta.start >= 0.0)) {
      throw UsageError("foxrl::ReplayBuffer::sample: beta must be >= 0, got " + std::to_string(beta.start));
    }
    return launch_sample(space, batch_size, beta, beta_clock, at, index_view(), "foxrl::Replay::sample", transform);
  }

  /// Counts an insert, or a sample call, whose launch ran in a replayed graph.
  void count_replayed_insert() { inserted_ += config_.num_envs; }
  void count_replayed_sample() { ++sample_calls_; }

  /// The transitions in `slots` (clamped to [0, size)), weights 1: the same
  /// gather as sample, for evaluation and inspection. An evicted slot (its
  /// boundary row was reused; never sampled) returns its state as next state.
  Batch<memory_space> gather(const ExecSpace& space, const index_view& slots) {
    return launch_sample(space, static_cast<int>(slots.extent(0)), kernels::BetaSchedule::fixed(0.0f),
                         kernels::CounterRead::host(0), host_counters(), slots, "foxrl::Replay::gather");
  }

  /// Sets the priorities of `indices` to |td| + eps (td_abs: |td| per
  /// entry, on the device) and raises max_priority_seen. Duplicates: the
  /// largest priority wins. Entries outside [0, size), evicted slots and
  /// non-finite td leave their leaf unchanged.
  void update_priorities(const ExecSpace& space, const index_view& indices, const error_view& td_abs) {
    update_priorities(space, indices, td_abs, host_counters().inserted);
  }

  /// The same with the kernel reading the insert count from `inserted`,
  /// and `then()` (a device functor) called once after the update in the
  /// same launch, by its last team (in a one-thread launch of its own,
  /// "foxrl::Replay::after_update", when there is nothing to update).
  template <class Then = kernels::NoLastTeamWork>
  void update_priorities(const ExecSpace& space, const index_view& indices, const error_view& td_abs,
                         kernels::CounterRead inserted, const Then& then = Then()) {
    if (indices.extent(0) != td_abs.extent(0)) {
      throw LogicError("foxrl::ReplayBuffer::update_priorities: " + std::to_string(indices.extent(0)) +
                       " indices but " + std::to_string(td_abs.extent(0)) + " td errors");
    }
    if (indices.extent(0) == 0 || size() == 0) {
      if constexpr (!std::is_same_v<Then, kernels::NoLastTeamWork>)
        kernels::call_once(space, "foxrl::Replay::after_update", then);
      return;
    }
    kernels::ReplayUpdateFunctor<ExecSpace, Then> functor;
    functor.then = then;
    functor.layout = layout_;
    functor.storage = storage_;
    functor.indices = indices;
    functor.td_abs = td_abs;
    functor.inserted = inserted;
    functor.alpha = config_.alpha;
    functor.eps = config_.eps;
    functor.refresh_groups = update_refresh_groups_;
    const std::size_t scratch = kernels::ReplayUpdateFunctor<ExecSpace, Then>::scratch_bytes(
        static_cast<int>(indices.extent(0)), update_refresh_groups_);
    // Team scratch of a few tens of KB is on-chip on every GPU; larger
    // batches fall back to level 1 (global memory) scratch.
    functor.scratch_level = scratch <= max_fast_scratch ? 0 : 1;
    // One team per node of the owner level: each owns a disjoint subtree.
    const int top = layout_.tree_shape.top();
    functor.owner_level = update_below_top_ && top >= 2 ? top - 1 : top;
    functor.skip_unchanged = unchanged_mass_shortcuts_;
    if (updates_flat()) {
      // Uniform replay: one flat pass over the entries; the tree-owner
      // update runs (in its last team) only where a leaf must change.
      functor.owner_level = top;
      kernels::ReplayUniformUpdateFunctor<ExecSpace, Then> flat;
      flat.general = functor;
      flat.changed = uniform_changed_;
      flat.entries_per_team = uniform_entries_per_team_;
      kernels::replay_uniform_update(space, flat, uniform_team_size_, scratch);
      return;
    }
    const int league = static_cast<int>(layout_.tree_shape.nodes[functor.owner_level]);
    kernels::replay_update_priorities(space, functor, league, update_team_size_, scratch);
  }

  /// Which tree level's nodes the priority update's teams own: the top
  /// (false, the default) or the level below it (true).
  /// Both give the same tree bit for bit; this only moves work between
  /// teams (tests run both on every backend).
  void set_update_owner_below_top(bool below) { update_below_top_ = below; }
  /// Whether the kernels take the shortcuts of leaves that keep their mass
  /// (true, the default), or the general path every time (false). Both give
  /// the same tree, draws and weights bit for bit (tests run both). Under
  /// uniform replay (alpha = 0) every mass is 1 but a quarantined slot's:
  /// the insert and the priority update leave unchanged leaves and their
  /// ancestors alone, and while every slot holds 1 a draw is the floor of
  /// its target, without the descent or the weights' last pass.
  void set_unchanged_mass_shortcuts(bool on) { unchanged_mass_shortcuts_ = on; }
  /// Whether a priority update under uniform replay (alpha = 0, with the
  /// shortcuts on) is one flat pass over its entries that leaves the tree to
  /// its last team only where a leaf must change
  /// (kernels/replay/replay_uniform_update.hpp; the default unless
  /// the kernel path flat_uniform_update off), or the tree-owner update (false). The
  /// same tree and maximum priority bit for bit (tests run both).
  void set_flat_uniform_update(bool on) { flat_uniform_update_ = on; }
  /// Whether update_priorities() runs the flat pass (see
  /// set_flat_uniform_update): uniform replay with the shortcuts on.
  bool updates_flat() const { return config_.alpha == 0.0f && unchanged_mass_shortcuts_ && flat_uniform_update_; }
  /// Whether the insert's copy teams write the new leaves and their level-1
  /// nodes, and the last team to finish the levels above (the default when
  /// an insert has two or more copy teams), or team 0 does all the tree work
  /// after its boundary work (false). The same tree bit for bit (tests run
  /// both).
  void set_insert_spread(bool on) { insert_spread_ = on; }
  bool insert_spread() const { return insert_spread_; }

  /// Transitions stored: min(inserted, capacity).
  std::int64_t size() const { return std::min(inserted_, layout_.capacity); }
  std::int64_t capacity() const { return layout_.capacity; }
  /// Slot the next insert's row 0 goes to.
  std::int64_t write_pointer() const { return inserted_ % layout_.capacity; }
  /// Transitions inserted since construction.
  std::int64_t inserted() const { return inserted_; }
  /// Calls of sample() so far (the RNG stream of the next call).
  std::uint64_t sample_calls() const { return sample_calls_; }
  /// Sets the host counters after storage() was restored from a saved
  /// trainer state (resume): the next insert and sample continue the saved
  /// run's slots and RNG stream.
  void restore_counters(std::int64_t inserted, std::uint64_t sample_calls) {
    if (inserted < 0) throw UsageError("foxrl::ReplayBuffer::restore_counters: negative insert count");
    inserted_ = inserted;
    sample_calls_ = sample_calls;
  }

  /// Device bytes of everything that scales with capacity, per transition.
  double bytes_per_transition() const {
    return static_cast<double>(storage_bytes()) / static_cast<double>(layout_.capacity);
  }
  /// Device bytes of the ring, boundary pool and sum tree.
  std::size_t storage_bytes() const {
    const auto& s = storage_;
    return bytes(s.observations) + bytes(s.actions) + bytes(s.rewards) + bytes(s.discounts) + bytes(s.next_ref) +
           bytes(s.boundary_observations) + bytes(s.boundary_owner) + bytes(s.tree);
  }

  const ReplayConfig& config() const { return config_; }
  const ReplayLayout& layout() const { return layout_; }
  /// The device state, for tests and diagnostics (e.g. copying the tree).
  const ReplayStorage<memory_space>& storage() const { return storage_; }

 private:
  template <class View>
  static std::size_t bytes(const View& v) {
    return v.span() * sizeof(typename View::value_type);
  }

  static constexpr std::size_t max_fast_scratch = 32 * 1024;

  static void validate(const ReplayConfig& c) {
    const std::string owner = "foxrl::ReplayConfig";
    require_at_least(owner, "num_envs", c.num_envs, 1);
    require_at_least(owner, "obs_dim", c.obs_dim, 1);
    require_at_least(owner, "n_step", c.n_step, 1);
    require(c.capacity >= c.num_envs, owner, "capacity", c.capacity, "must hold one insert (num_envs rows)");
    require(c.capacity <= (std::int64_t(1) << 30), owner, "capacity", c.capacity, "slots are 32-bit: at most 2^30");
    require_in_range(owner, "max_batch", c.max_batch, 1, max_batch_limit);
    require_at_least(owner, "alpha", c.alpha, 0.0f);
    require_positive(owner, "eps", c.eps);
    require_at_least(owner, "boundary_capacity", c.boundary_capacity, std::int64_t(0));
  }

  void check_batch(const TransitionBatch<memory_space>& b) const {
    auto fail = [](const std::string& field, std::size_t got, std::size_t want) {
      throw LogicError("foxrl::ReplayBuffer::insert: TransitionBatch." + field + " has extent " + std::to_string(got) +
                       ", expected " + std::to_string(want));
    };
    const std::size_t n = static_cast<std::size_t>(config_.num_envs);
    const std::size_t d = static_cast<std::size_t>(config_.obs_dim);
    if (b.observations.extent(0) != n) fail("observations", b.observations.extent(0), n);
    if (b.observations.extent(1) != d) fail("observations(dim 1)", b.observations.extent(1), d);
    if (b.next_observations.extent(0) != n) fail("next_observations", b.next_observations.extent(0), n);
    if (b.next_observations.extent(1) != d) {
      fail("next_observations(dim 1)", b.next_observations.extent(1), d);
    }
    if (b.actions.extent(0) != n) fail("actions", b.actions.extent(0), n);
    if (b.rewards.extent(0) != n) fail("rewards", b.rewards.extent(0), n);
    if (b.discounts.extent(0) != n) fail("discounts", b.discounts.extent(0), n);
    if (b.next_is_successor.extent(0) != n) fail("next_is_successor", b.next_is_successor.extent(0), n);
  }

  template <class Transform = kernels::KeepObservation>
  Batch<memory_space> launch_sample(const ExecSpace& space, int batch_size, const kernels::BetaSchedule& beta,
                                    kernels::CounterRead beta_clock, const CounterReads& at, const index_view& given,
                                    const char* label, const Transform& transform = Transform()) {
    if (batch_size < 1 || batch_size > config_.max_batch) {
      throw LogicError(std::string(label) + ": batch size " + std::to_string(batch_size) +
                       " outside [1, max_batch = " + std::to_string(config_.max_batch) + "]");
    }
    if (size() == 0) {
      throw LogicError(std::string(label) + ": the replay buffer is empty");
    }
    const auto rows = std::make_pair(0, batch_size);
    Batch<memory_space> out;
    // s' rows right after s rows: the online network's forward at s and s'
    // reads them as one [2B, obs_dim] input (DenseOps::forward).
    out.states = Kokkos::subview(stacked_states_, rows, Kokkos::ALL);
    out.next_states = Kokkos::subview(stacked_states_, std::make_pair(batch_size, 2 * batch_size), Kokkos::ALL);
    out.actions = Kokkos::subview(batch_.actions, rows);
    out.rewards = Kokkos::subview(batch_.rewards, rows);
    out.discounts = Kokkos::subview(batch_.discounts, rows);
    out.indices = Kokkos::subview(batch_.indices, rows);
    out.is_weights = Kokkos::subview(batch_.is_weights, rows);

    kernels::ReplaySampleFunctor<ExecSpace, Transform> functor;
    functor.transform = transform;
    functor.layout = layout_;
    functor.storage = storage_;
    functor.out = out;
    functor.given = given;
    functor.inserted = at.inserted;
    functor.seed = config_.seed;
    functor.call = at.sample_calls;
    functor.beta = beta;
    functor.beta_clock = beta_clock;
    functor.batch_size = batch_size;
    functor.rows_per_team = sample_rows_per_team_;
    functor.unit_masses = unchanged_mass_shortcuts_ && config_.alpha == 0.0f;
    const int league = (batch_size + sample_rows_per_team_ - 1) / sample_rows_per_team_;
    kernels::replay_sample(space, functor, league, sample_team_size_, label);
    if (given.extent(0) == 0) ++sample_calls_;
    return out;
  }

  void allocate(const ExecSpace& space) {
    using matrix = typename ReplayStorage<memory_space>::matrix;
    using vector = typename ReplayStorage<memory_space>::vector;
    const auto C = layout_.capacity;
    const auto D = layout_.obs_dim;
    auto uninit = [&](const std::string& name) {
      return Kokkos::view_alloc(space, Kokkos::WithoutInitializing, "foxrl::Replay::" + name);
    };
    auto zeroed = [&](const std::string& name) { return Kokkos::view_alloc(space, "foxrl::Replay::" + name); };
    auto& s = storage_;
    // Rows are written before they are read (a slot is read only once it
    // holds a transition), so the large arrays need no initialisation. The
    // observation ring is zeroed all the same: its rows ahead of the write
    // pointer are saved with the trainer state, and a boundary leaves its
    // successor row unwritten, so zeros keep saved states a function of the
    // run alone (one fill at setup).
    s.observations = matrix(zeroed("observations"), layout_.obs_rows, D);
    s.actions = Kokkos::View<std::int32_t*, memory_space>(uninit("actions"), C);
    s.rewards = vector(uninit("rewards"), C);
    s.discounts = vector(uninit("discounts"), C);
    s.next_ref = Kokkos::View<std::int32_t*, memory_space>(uninit("next_ref"), C);
    // A row per slot is saved with the trainer state whether or not its slot
    // ended an episode: zeroed, like the ring, so saved states are a
    // function of the run alone. No owners then: row s belongs to slot s.
    const bool per_slot = layout_.boundary_per_slot;
    s.boundary_observations = per_slot ? matrix(zeroed("boundary_observations"), layout_.boundary_capacity, D)
                                       : matrix(uninit("boundary_observations"), layout_.boundary_capacity, D);
    s.boundary_owner =
        Kokkos::View<std::int64_t*, memory_space>(uninit("boundary_owner"), per_slot ? 0 : layout_.boundary_capacity);
    Kokkos::deep_copy(space, s.boundary_owner, std::int64_t(-1));
    s.boundary_head = Kokkos::View<std::int64_t, memory_space>(zeroed("boundary_head"));
    s.boundary_evictions = Kokkos::View<std::int64_t, memory_space>(zeroed("boundary_evictions"));
    s.evicted_slots = Kokkos::View<std::int32_t*, memory_space>(uninit("evicted_slots"), layout_.num_envs);
    s.insert_counts = Kokkos::View<std::int32_t*, memory_space>(zeroed("insert_counts"), 2);
    // Never-written leaves must carry zero mass.
    s.tree = vector(zeroed("tree"), layout_.tree_shape.size);
    s.max_priority = Kokkos::View<float, memory_space>(uninit("max_priority"));
    Kokkos::deep_copy(space, s.max_priority, 1.0f);
    s.teams_done = Kokkos::View<std::int32_t, memory_space>(zeroed("teams_done"));
    // Not part of the saved state: zero between launches.
    uniform_changed_ = Kokkos::View<std::int32_t, memory_space>(zeroed("uniform_update_changed"));
    s.batch_min_mass = Kokkos::View<std::int32_t, memory_space>(uninit("batch_min_mass"));
    Kokkos::deep_copy(space, s.batch_min_mass, kernels::replay_idle_batch_min_mass());

    const int B = config_.max_batch;
    stacked_states_ = typename Batch<memory_space>::matrix(uninit("batch_states"), 2 * B, D);
    batch_.actions = Kokkos::View<std::int32_t*, memory_space>(uninit("batch_actions"), B);
    batch_.rewards = vector(uninit("batch_rewards"), B);
    batch_.discounts = vector(uninit("batch_discounts"), B);
    batch_.indices = Kokkos::View<std::int64_t*, memory_space>(uninit("batch_indices"), B);
    batch_.is_weights = vector(uninit("batch_is_weights"), B);
  }

  kernels::ReplayInsertFunctor<ExecSpace> insert_functor(const TransitionBatch<memory_space>& batch,
                                                         kernels::CounterRead inserted) const {
    kernels::ReplayInsertFunctor<ExecSpace> functor;
    functor.layout = layout_;
    functor.storage = storage_;
    functor.batch = batch;
    functor.inserted = inserted;
    functor.alpha = config_.alpha;
    functor.rows_per_team = insert_rows_per_team_;
    functor.refresh_groups = insert_refresh_groups_;
    functor.skip_unchanged = unchanged_mass_shortcuts_;
    functor.spread = insert_spread_;
    return functor;
  }

  void choose_team_sizes(const ExecSpace& space) {
    // Host backends run teams of one thread (parallelism over the league);
    // devices run wide teams. Each size is asked of the policy type the
    // launch uses (compat::light): on CUDA that is another kernel
    // instantiation, whose register count may allow fewer threads.
    constexpr bool device = !Kokkos::SpaceAccessibility<Kokkos::HostSpace, memory_space>::accessible;
    {
      // Teams own the top-level nodes (32 at 2^20 slots, ~32 entries each
      // at a batch of 1024). Owning the level below (1024 teams, ~1 entry
      // each) measured slower on the H200: 23.8 us per update against
      // 13.3 us (stream, 2^20 slots), since every team scans the whole
      // batch; set_update_owner_below_top() keeps it for experiments. 64
      // nodes of children (8 KB) per staged chunk.
      kernels::ReplayUpdateFunctor<ExecSpace> f;
      Kokkos::TeamPolicy<ExecSpace> p(space, 1, 1);
      update_team_size_ = device ? std::min(512, compat::light(p).team_size_max(f, Kokkos::ParallelForTag())) : 1;
      update_refresh_groups_ = 64;
      update_below_top_ = false;
      // The flat uniform update: one entry per thread in teams of 256 (4
      // teams at a batch of 1024); host backends one team for the batch.
      kernels::ReplayUniformUpdateFunctor<ExecSpace, kernels::NoLastTeamWork> u;
      uniform_team_size_ = device ? std::min(256, compat::light(p).team_size_max(u, Kokkos::ParallelForTag())) : 1;
      uniform_entries_per_team_ = device ? uniform_team_size_ : config_.max_batch;
    }
    {
      // 4096 contiguous new leaves have 129-130 level-1 ancestors: 2-3 per
      // copy team when spread, all of them when team 0 refreshes alone; 256
      // nodes of children (32 KB) stage them in one chunk.
      kernels::ReplayInsertFunctor<ExecSpace> f;
      Kokkos::TeamPolicy<ExecSpace> p(space, 1, 1);
      insert_refresh_groups_ = device ? 256 : 64;
      p.set_scratch_size(
          0, Kokkos::PerTeam(kernels::ReplayInsertFunctor<ExecSpace>::scratch_bytes(insert_refresh_groups_)));
      insert_team_size_ = device ? std::min(1024, compat::light(p).team_size_max(f, Kokkos::ParallelForTag())) : 1;
      insert_rows_per_team_ = std::clamp(insert_team_size_ * 4 / layout_.obs_dim, 16, 64);
      // One copy team has nothing to spread to: team 0 alone skips the ticket.
      insert_spread_ = (config_.num_envs + insert_rows_per_team_ - 1) / insert_rows_per_team_ >= 2;
    }
    {
      // Few draws per team, so the descents (each a chain of dependent loads)
      // spread over many SMs instead of queueing on a few; the team's threads
      // then copy the rows, and the last team's threads convert all
      // weights (4 per thread at a batch of 1024).
      kernels::ReplaySampleFunctor<ExecSpace> f;
      Kokkos::TeamPolicy<ExecSpace> p(space, 1, 1);
      p.set_scratch_size(0, Kokkos::PerTeam(kernels::ReplaySampleFunctor<ExecSpace>::scratch_bytes(64)));
      sample_team_size_ = device ? std::min(256, compat::light(p).team_size_max(f, Kokkos::ParallelForTag())) : 1;
      sample_rows_per_team_ = device ? 8 : 64;
    }
  }

  ReplayConfig config_;
  ReplayLayout layout_;
  ReplayStorage<memory_space> storage_;
  Batch<memory_space> batch_;  ///< max_batch-sized buffers behind every returned Batch (not its states)
  /// [2 max_batch, obs_dim]: a sample of B rows puts s in rows [0, B) and s'
  /// in rows [B, 2B), one block the online forward takes in one product.
  typename Batch<memory_space>::matrix stacked_states_;
  std::int64_t inserted_ = 0;
  std::uint64_t sample_calls_ = 0;
  int update_team_size_ = 1;
  int update_refresh_groups_ = 64;
  bool update_below_top_ = false;  ///< owner level below the top (GPUs)
  bool unchanged_mass_shortcuts_ = true;
  bool flat_uniform_update_ = kernel_path_on(KernelPath::flat_uniform_update);
  int uniform_team_size_ = 1;
  int uniform_entries_per_team_ = 1;
  Kokkos::View<std::int32_t, memory_space> uniform_changed_;  ///< the flat uniform update's count
  int insert_team_size_ = 1;
  int insert_refresh_groups_ = 64;
  int insert_rows_per_team_ = 16;
  bool insert_spread_ = false;
  int sample_team_size_ = 1;
  int sample_rows_per_team_ = 1;

 public:
  /// The host counters a trainer state holds for the buffer; they come
  /// before its tensors, whose row counts they give.
  struct HostState {
    std::int64_t inserted = 0;
    std::int64_t sample_calls = 0;
    std::int64_t boundary_rows = 0;  ///< boundary rows handed out (= the device's boundary_head)
  };

  /// Saving: fills `h` from the buffer (copies the boundary head to the
  /// host: fences) and writes it. Loading: reads `h` and checks it; the
  /// buffer is not touched until restore_host_state().
  template <class Archive>
  void visit_host_state(Archive& a, const ExecSpace& space, HostState& h) const {
    if constexpr (Archive::saving) {
      h.inserted = inserted_;
      h.sample_calls = static_cast<std::int64_t>(sample_calls_);
      Kokkos::View<std::int64_t, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> head(&h.boundary_rows);
      Kokkos::deep_copy(space, head, storage_.boundary_head);
      compat::fence(space, "foxrl::ReplayBuffer::save_boundary_head");
    }
    a.scalar("replay.inserted", h.inserted);
    a.scalar("replay.sample_calls", h.sample_calls);
    a.scalar("replay.boundary_rows", h.boundary_rows);
    if constexpr (!Archive::saving) {
      if (h.inserted < 0) a.fail("replay.inserted", "negative counter " + std::to_string(h.inserted));
      if (h.boundary_rows < 0) a.fail("replay.boundary_rows", "negative counter " + std::to_string(h.boundary_rows));
      // A buffer with a row per slot hands out no rows: a state that did
      // kept its boundary observations in a pool this buffer cannot read.
      if (layout_.boundary_per_slot && h.boundary_rows != 0)
        a.fail("replay.boundary_rows",
               "is " + std::to_string(h.boundary_rows) +
                   ": the state keeps its episode-boundary observations in a pool of handed-out rows, and this "
                   "buffer keeps them in a row per slot (observations of at most " +
                   std::to_string(boundary_per_slot_max_dim) +
                   " components): a buffer with the state's boundary_capacity (a pool) reads it");
    }
  }

  /// Rows of the boundary pool that hold a next observation: those handed
  /// out, or a row per filled slot.
  std::int64_t boundary_rows_in_use(const HostState& h) const {
    const auto& lay = layout_;
    return lay.boundary_per_slot ? std::min(h.inserted, lay.capacity)
                                 : std::min(lay.boundary_capacity, h.boundary_rows);
  }

  /// The device state, only what has been written: the observation ring
  /// up to the successors written n*N rows ahead of the pointer, the slot
  /// arrays of filled slots, the boundary rows handed out, owners, sum
  /// tree and maximum priority. The insert's evicted-slot list is scratch.
  /// Loading also checks the values (check_state) before anything is
  /// copied; `num_actions` bounds the stored actions.
  template <class Archive>
  void visit_state(Archive& a, const ExecSpace& space, const HostState& h, int num_actions) {
    const auto& lay = layout_;
    const auto& st = storage_;
    const std::int64_t slots = std::min(h.inserted, lay.capacity);
    a.tensor(space, "replay.observations", st.observations, std::min(lay.obs_rows, h.inserted + lay.lookahead));
    a.tensor(space, "replay.actions", st.actions, slots);
    a.tensor(space, "replay.rewards", st.rewards, slots);
    a.tensor(space, "replay.discounts", st.discounts, slots);
    a.tensor(space, "replay.next_ref", st.next_ref, slots);
    a.tensor(space, "replay.boundary_observations", st.boundary_observations, boundary_rows_in_use(h));
    a.tensor(space, "replay.boundary_owner", st.boundary_owner);
    a.tensor(space, "replay.boundary_head", st.boundary_head);
    a.tensor(space, "replay.boundary_evictions", st.boundary_evictions);
    a.tensor(space, "replay.tree", st.tree);
    a.tensor(space, "replay.max_priority", st.max_priority);
    a.tensor(space, "replay.teams_done", st.teams_done);
    a.tensor(space, "replay.batch_min_mass", st.batch_min_mass);
    if constexpr (!Archive::saving) check_state(a, h, num_actions);
  }

  /// Checks the values of a loaded state (on the reader's host bytes) that
  /// kernels use as indices or masses: actions below `num_actions`,
  /// next_ref a boundary row in use or a marker, owners and counters in
  /// range, priorities finite and positive, the sum tree consistent, the
  /// sampler's cross-team scalars idle. UsageError naming the tensor.
  template <class Reader>
  void check_state(const Reader& a, const HostState& h, int num_actions) const {
    const auto& lay = layout_;
    const std::int64_t slots = std::min(h.inserted, lay.capacity);
    const std::int64_t pool = boundary_rows_in_use(h);
    a.template require_each<std::int32_t>(
        "replay.actions", -1, [&](std::int32_t x) { return x >= 0 && x < num_actions; },
        "must be an action in [0, " + std::to_string(num_actions) + ")");
    a.template require_each<float>(
        "replay.rewards", -1, [](float x) { return std::isfinite(x); }, "must be finite");
    a.template require_each<float>(
        "replay.discounts", -1, [](float x) { return x >= 0.0f && x <= 1.0f; }, "must be in [0, 1]");
    a.template require_each<std::int32_t>(
        "replay.next_ref", -1,
        [&](std::int32_t r) {
          return r == replay_next_is_successor || r == replay_next_evicted || (r >= 0 && r < pool);
        },
        "must be -1 (successor), -2 (evicted) or a boundary row below the " + std::to_string(pool) + " rows in use");
    a.template require_each<std::int64_t>(
        "replay.boundary_owner", -1, [&](std::int64_t g) { return g >= -1 && g < h.inserted; },
        "must be -1 (free) or a transition below replay.inserted = " + std::to_string(h.inserted));
    a.template require_each<std::int64_t>(
        "replay.boundary_head", -1, [&](std::int64_t x) { return x == h.boundary_rows; },
        "must equal replay.boundary_rows = " + std::to_string(h.boundary_rows));
    a.template require_each<std::int64_t>(
        "replay.boundary_evictions", -1, [&](std::int64_t x) { return x >= 0 && x <= h.inserted; },
        "must be in [0, replay.inserted = " + std::to_string(h.inserted) + "]");
    a.template require_each<float>(
        "replay.max_priority", -1, [](float x) { return std::isfinite(x) && x > 0.0f; }, "must be finite and > 0");
    a.template require_each<std::int32_t>(
        "replay.teams_done", -1, [](std::int32_t x) { return x == 0; }, "must be 0 between launches");
    const std::int32_t idle = kernels::replay_idle_batch_min_mass();
    a.template require_each<std::int32_t>(
        "replay.batch_min_mass", -1, [&](std::int32_t x) { return x == idle; },
        "must be " + std::to_string(idle) + " between launches");
    check_tree(a, slots);
  }

 private:
  /// Leaves: finite, >= 0, zero past the filled slots and at evicted slots;
  /// every node the sum of its K children (up to float rounding: 1e-4 of
  /// the sum covers any order of K additions); padding zero.
  template <class Reader>
  void check_tree(const Reader& a, std::int64_t slots) const {
    const char* name = "replay.tree";
    const auto& shape = layout_.tree_shape;
    const auto tree = a.template values<float>(name);
    const auto next_ref = a.template values<std::int32_t>("replay.next_ref");
    const auto padded = [&](int level) { return level + 1 < shape.levels ? shape.offset[level + 1] : shape.size; };
    for (std::int64_t i = 0; i < padded(0); ++i) {
      const float x = tree[i];
      if (i < slots) {
        if (!(std::isfinite(x) && x >= 0.0f)) a.fail_value(name, tree.index(i), x, "a leaf must be finite and >= 0");
        if (next_ref[i] == replay_next_evicted && x != 0.0f)
          a.fail_value(name, tree.index(i), x, "the leaf of an evicted slot must be 0");
      } else if (x != 0.0f) {
        a.fail_value(name, tree.index(i), x, "the leaf of an empty slot must be 0");
      }
    }
    for (int level = 1; level < shape.levels; ++level) {
      for (std::int64_t i = shape.offset[level]; i < padded(level); ++i) {
        const std::int64_t node = i - shape.offset[level];
        double sum = 0.0;
        if (node < shape.nodes[level])
          for (int j = 0; j < sum_tree_fanout; ++j) sum += tree[shape.offset[level - 1] + node * sum_tree_fanout + j];
        const float x = tree[i];
        if (!(std::abs(static_cast<double>(x) - sum) <= 1e-4 * sum))
          a.fail_value(name, tree.index(i), x,
                       "a node of level " + std::to_string(level) + " must be the sum of its children (" +
                           format_value(sum) + ")");
      }
    }
  }

 public:
  /// After the reader applied visit_state's copies: the next insert and
  /// sample continue the saved run's slots and RNG stream.
  void restore_host_state(const HostState& h) {
    restore_counters(h.inserted, static_cast<std::uint64_t>(h.sample_calls));
  }
};

}  // namespace foxrl
