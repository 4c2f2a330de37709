#pragma once
// OnlineTrainer<ExecSpace, Learner>: the main job, for any registered online
// learner (agents/learner_registry.hpp; DqnTrainer is the DQN one). Owns
// the run's ExecutionContext and every component; one iteration = one
// collector step of all envs and, once `learning_starts` env steps are in,
// `updates_per_iteration` updates (sample, normalise, the learner's update,
// priority update). OnlineTrainerBase is what a run (train/training_run.hpp)
// asks of it at epoch boundaries; make_online_trainer builds the one
// `config.algo` names. Nothing in
// an iteration reads back to the host (the training guard decides on the
// device): at the end of each epoch the guard's snapshot, one labelled
// fence and one copy of the device counters into the epoch's record.
// The components come from the run's setup (train/run_spec.hpp); each saves its
// own state (train/trainer_state.hpp composes them). The epoch loop, logs,
// metrics and checkpoint cadence of a whole run are TrainingRun's
// (train/training_run.hpp).
//
// Kokkos Tools regions mark the phases of an iteration for profilers:
// "foxrl::DqnTrainer::collect" (forward, action selection, env step, n-step
// windows, episode statistics), "::insert" (the finished n-step transitions
// into replay), "::sample" (replay sample and the batch's normalisation),
// "::update" (the learner's fused step, the priority write-back and the
// epoch's metric sums), "::clock" (advancing the device-resident counters
// of the iteration, train/iteration_clock.hpp) and
// "::epoch_bookkeeping" (clearing the sums at the
// start of an epoch; the guard's snapshot, the epoch's fence and the
// read-back at its end). The target network's hard or Polyak copy is not a
// phase of its own: it is fused into the update's Adam launch (only there
// is the guard's verdict on the step known on the device), so its cost is
// inside "::update" and a separate region would need a separate launch.
//
// Data-parallel training (a Communicator of more than one rank,
// dist/communicator.hpp): every rank runs its own envs, collector and
// replay shard from its own seed (dist::rank_seed; rank 0 keeps the
// config's), the learner's weights start from the same seed, and every
// update replaces the gradients and the loss metrics by their means over
// the ranks between compute_gradients and apply_gradients (the learner's
// gradient hook, dist/gradient_reducer.hpp), so the guard decides alike
// and the weights stay identical; each epoch ends with a cross-rank
// checksum of the weights (dist/replica_check.hpp) and a reduction of the
// record (env steps, experiences and episodes summed, the return a mean).
// Each rank checkpoints its own trainer state (trainer_state.rank-R for
// R > 0); the manifest records the rank count, and a resume needs the same.
// One rank runs exactly the single-process code.

#include "agents/learner_registry.hpp"
#include "collect/action_selector.hpp"
#include "collect/experience_collector.hpp"
#include "config/resume_check.hpp"
#include "config/train_config.hpp"
#include "core/compat.hpp"
#include "core/execution_context.hpp"
#include "core/host_mirror.hpp"
#include "core/kernel_paths.hpp"
#include "core/stream_graph.hpp"
#include "dist/communicator.hpp"
#include "dist/gradient_reducer.hpp"
#include "dist/replica_check.hpp"
#include "envs/vector_env.hpp"
#include "kernels/agents/dqn/epoch_metric_sums.hpp"
#include "kernels/collect/record_step.hpp"
#include "kernels/replay/beta_schedule.hpp"
#include "market/market_setup.hpp"
#include "market/signal_adapter.hpp"
#include "market/validation_backtest.hpp"
#include "replay/replay_buffer.hpp"
#include "train/iteration_clock.hpp"
#include "train/run_manifest.hpp"
#include "train/run_spec.hpp"
#include "train/trainer_state.hpp"
#include "train/training_log.hpp"

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>

namespace foxrl {

/// What a run asks of an online trainer at epoch boundaries, whatever its
/// learner (the iterations run inside run_epoch, by type).
template <class ExecSpace>
class OnlineTrainerBase {
 public:
  virtual ~OnlineTrainerBase() = default;
  /// Runs one epoch of `iterations_per_epoch` iterations and returns its
  /// record (after the epoch's one fence).
  virtual EpochRecord run_epoch() = 0;
  /// Writes the checkpoint files of this rank into `dir` (see OnlineTrainer).
  virtual void save_checkpoint(const std::string& dir, const std::map<std::string, std::int64_t>& log_bytes = {}) = 0;
  /// Continues the run checkpointed in `dir`; returns its manifest.
  virtual RunManifest resume(const std::string& dir) = 0;
  /// The greedy policy's backtest on the market's validation split (none
  /// for other envs).
  virtual std::optional<ValidationBacktest> validation_backtest() = 0;
  /// Writes this epoch's model (no trainer state) into `dir`.
  virtual void save_model(const std::string& dir) = 0;
  /// The greedy policy on `split` of the run's market against the baselines.
  virtual EvaluationReport evaluate_market_split(const MarketSplit& split) = 0;
  virtual const std::string& run_id() const = 0;
  virtual std::string gradient_transport() const = 0;
  virtual const MarketComponents<ExecSpace>* market() const = 0;
  virtual VectorEnv<ExecSpace>& env() = 0;
  virtual const RunSpec& spec() const = 0;
  virtual const TrainConfig& config() const = 0;
  virtual ExecutionContext<ExecSpace>& context() = 0;
  virtual std::int64_t global_step() const = 0;
  virtual std::int64_t updates() const = 0;
  virtual std::int64_t epoch() const = 0;
};

template <class ExecSpace, class Learner>
class OnlineTrainer final : public OnlineTrainerBase<ExecSpace> {
 public:
  using memory_space = typename ExecSpace::memory_space;
  using Clock = IterationClock<ExecSpace>;

  /// A trainer for `config`, one rank of `comm`'s ranks (every rank
  /// constructs its trainer at the same point: the constructor broadcasts
  /// rank 0's run id).
  explicit OnlineTrainer(const TrainConfig& config, std::shared_ptr<dist::Communicator> comm = dist::single_process())
      : config_(config), comm_(std::move(comm)), context_(config.seed) {
    config_.validate();
    if (!comm_) throw LogicError("foxrl::OnlineTrainer: no communicator");
    spec_ = run_spec(config_);
    // The data and the network are the same on every rank; what the rank
    // experiences comes from its own stream.
    const std::uint64_t seed = dist::rank_seed(config_.seed, comm_->rank());
    spec_.replay.seed = seed;
    const auto& space = context_.space();
    env_data_.emplace(space, config_);
    env_.emplace(make_vector_env(space, config_, *env_data_, spec_.num_envs, seed, EnvSplit::train));
    adapter_ = make_adapter(space, spec_);
    learner_.emplace(space, Learner::config_for(config_, env_spaces(config_)));
    replay_.emplace(space, spec_.replay);
    selector_.emplace(spec_.num_actions, seed, spec_.epsilon);
    // The collector acts; the trainer inserts what it finished (iterate()),
    // so that insert is a profiling phase of its own.
    collector_.emplace(space, *env_, *selector_, adapter_ ? &*adapter_ : nullptr, static_cast<int>(config_.n_step),
                       static_cast<float>(config_.gamma));
    sums_.emplace(space);
    clock_.emplace(space);
    // With several ranks, an update's all-reduce sits between its launches
    // (no graph of the iteration).
    iteration_graphs_ =
        std::make_unique<StreamGraphs<ExecSpace>>(comm_->size() == 1 && kernel_path_on(KernelPath::iteration_graph));
    // Host copies of the epoch's device counters, made once: allocating one
    // per epoch would free it at the epoch's end, and freeing a host View
    // fences every instance.
    sums_host_ = host_mirror(sums_->sums);
    guard_host_ = host_mirror(learner_->guard().state());
    if (comm_->size() > 1) {
      // The update then runs its two halves with the reduction between
      // them (no CUDA graph replay of the whole update).
      // NCCL on the run's stream where built in (GPU), else MPI on host buffers.
      reducer_ = make_gradient_reducer<ExecSpace>(comm_, learner_->gradients(), learner_->metrics(),
                                                  LearnerMetrics::grad_norm, reduction_transport_from_environment());
      learner_->set_gradient_hook(
          [reducer = reducer_.get()](const ExecSpace& s, const FlatParams<memory_space>& g,
                                     const Kokkos::View<float*, memory_space>& m) { reducer->mean(s, g, m); });
      const auto w = learner_->weights();
      replicas_ = std::make_unique<ReplicaCheck<ExecSpace>>(
          comm_, std::vector<std::pair<std::string, FlatParams<memory_space>>>{
                     {"online", w.online}, {"target", w.target}, {"adam_m", w.adam_m}, {"adam_v", w.adam_v}});
      comm_->broadcast(run_id_, 0);  // one run: every rank stamps its files with rank 0's id
    }
    context_.fence("DqnTrainer::setup");
  }

  OnlineTrainer(const OnlineTrainer&) = delete;
  OnlineTrainer& operator=(const OnlineTrainer&) = delete;

  /// One iteration: collector step, then the update round if it is due.
  /// Its launches read the per-iteration counters from the device clock
  /// (train/iteration_clock.hpp), so that on CUDA the whole iteration
  /// runs as one captured graph (the kernel path iteration_graph off turns it
  /// off), replayed while its shape (see iteration_key) stays the same.
  void iterate() {
    const auto& space = context_.space();
    const bool finished = collector_->nstep().will_emit();
    const bool due =
        global_step_ + config_.num_envs >= config_.learning_starts && iteration_ % config_.train_every == 0 &&
        std::min(replay_->inserted() + (finished ? env_->num_envs() : 0), replay_->capacity()) >= config_.batch_size;
    const std::int64_t rounds = due ? config_.updates_per_iteration : 0;
    const typename Clock::Values by = {config_.num_envs, 1, finished ? env_->num_envs() : 0, rounds, rounds};
    clock_->set(space, clock_values());
    bool launched = false;
    iteration_graphs_->run(space, iteration_key(finished, rounds), [&] {
      launch_iteration(space, finished, rounds, by);
      launched = true;
    });
    clock_->note_advanced(by);
    if (!launched) {
      // A replay: the host side of what the graph did.
      collector_->count_replayed_step();
      if (finished) replay_->count_replayed_insert();
      for (std::int64_t u = 0; u < rounds; ++u) {
        replay_->count_replayed_sample();
        learner_->count_replayed_update();
      }
    }
    if (finished) experiences_ += env_->num_envs();
    global_step_ += config_.num_envs;
    updates_ += rounds;
    ++iteration_;
  }

  /// Replays of the iteration graph so far (0 off CUDA or with graphs off).
  std::int64_t iteration_graph_replays() const { return iteration_graphs_->replays(); }
  /// Distinct iteration keys seen and failed captures of the iteration
  /// graph (diagnostics: why an iteration is not replayed).
  std::size_t iteration_graph_keys() const { return iteration_graphs_->keys(); }
  int iteration_graph_failed_captures() const { return iteration_graphs_->failed_captures(); }

  /// Runs one epoch of `iterations_per_epoch` iterations and returns its
  /// record (after the epoch's one fence).
  EpochRecord run_epoch() override {
    const auto& space = context_.space();
    const auto start = std::chrono::steady_clock::now();
    const std::int64_t steps_before = global_step_, updates_before = updates_;
    {
      compat::ScopedRegion region("foxrl::DqnTrainer::epoch_bookkeeping");
      sums_->clear(space);
    }
    ProgressLine progress(config_.iterations_per_epoch);
    for (std::int64_t it = 0; it < config_.iterations_per_epoch; ++it) {
      iterate();
      progress.tick(it + 1);
    }
    compat::ScopedRegion region("foxrl::DqnTrainer::epoch_bookkeeping");
    // The restore point moves once per epoch: often enough that a restore
    // loses at most an epoch of progress, rarely enough that its copy of
    // four parameter buffers costs nothing per update. The device skips it
    // when the epoch ended in a rejection streak.
    learner_->snapshot(space);
    context_.fence("DqnTrainer::epoch_end");
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    progress.finish();
    ++epoch_;

    EpochRecord r;
    r.epoch = epoch_;
    r.seconds = seconds;
    r.env_steps = global_step_;
    r.experiences = experiences_;
    r.updates = updates_;
    r.env_steps_per_s = static_cast<double>(global_step_ - steps_before) / seconds;
    r.updates_per_s = static_cast<double>(updates_ - updates_before) / seconds;
    r.epsilon = selector_->epsilon(global_step_);
    r.beta = beta();
    const auto& sums = sums_host_;
    Kokkos::deep_copy(space, sums, sums_->sums);
    const auto& guard = guard_host_;
    Kokkos::deep_copy(space, guard, learner_->guard().state());
    const auto episodes = collector_->episode_stats().summary(space);  // fences
    const auto counters = GuardCounters::from_state(guard);
    r.rejected_updates = static_cast<std::int64_t>(sums(LearnerMetrics::rejected));
    r.rejected_total = counters.rejected;
    r.nonfinite_total = counters.nonfinite;
    r.spikes_total = counters.spikes;
    r.restores = counters.restores;
    r.lr = config_.lr * counters.lr_scale;
    const double n = sums(LearnerMetrics::count) - sums(LearnerMetrics::rejected);
    if (n > 0) {
      r.loss = sums(LearnerMetrics::loss) / n;
      r.mean_q = sums(LearnerMetrics::mean_q) / n;
      r.td_error = sums(LearnerMetrics::mean_abs_td) / n;
      r.grad_norm = sums(LearnerMetrics::grad_norm) / n;
    }
    r.episodes = episodes.episodes;
    r.mean_return_last_100 = episodes.mean_last_100;
    r.backend = ExecSpace::name();
    if (comm_->size() > 1) {
      replicas_->verify(space, "after epoch " + std::to_string(epoch_));
      reduce_over_ranks(r);
    }
    return r;
  }

  /// The trainer state file of rank `rank` in a checkpoint directory.
  static std::string trainer_state_file_of(int rank) {
    return rank == 0 ? std::string(trainer_state_file) : "trainer_state.rank-" + std::to_string(rank) + ".safetensors";
  }

  /// Writes `dir`/trainer_state.safetensors (what resume() needs besides
  /// the learner: replay, envs, n-step windows, episode statistics,
  /// normaliser, counters), `dir`/checkpoint.safetensors (online and target
  /// weights, Adam state) and `dir`/checkpoint.json (config, counters,
  /// normalizer, `log_bytes`), each atomically and each carrying the run
  /// identity (run_id(), the config's hash, the epoch). A whole checkpoint
  /// generation is published by the caller (train/checkpoint_store.hpp).
  /// With several ranks, every rank calls it with the same `dir`: rank 0
  /// writes these files (the manifest with the rank count), rank R > 0
  /// only its trainer_state.rank-R.safetensors.
  void save_checkpoint(const std::string& dir, const std::map<std::string, std::int64_t>& log_bytes = {}) override {
    const auto& space = context_.space();
    RunManifest m;
    m.identity = {run_id_, RunIdentity::config_hash_of(config_), epoch_};
    const auto stamp = m.identity.metadata();
    save_trainer_state(space, dir + "/" + trainer_state_file_of(comm_->rank()), parts(), counters(), stamp);
    if (comm_->rank() != 0) return;
    learner_->save(space, dir + "/checkpoint.safetensors", stamp);
    m.config = config_;
    m.epoch = epoch_;
    m.global_step = global_step_;
    m.updates = updates_;
    m.log_bytes = log_bytes;
    m.ranks = comm_->size();
    if (adapter_) {  // the frozen normaliser of inference (float64 in the trainer state too)
      m.has_normalizer = true;
      m.normalizer = adapter_->export_state(space);
    }
    m.write(dir);
  }

  /// The greedy policy's continuous backtest on the market's validation
  /// split (market/validation_backtest.hpp): nothing for CartPole or a
  /// validation split of fewer than two decision bars. Reads the weights
  /// and the normaliser (frozen meanwhile) and changes no training state:
  /// the next epoch runs as it would without it. Fences.
  std::optional<ValidationBacktest> validation_backtest() override {
    const MarketComponents<ExecSpace>* m = market();
    if (!m) return std::nullopt;
    return foxrl::validation_backtest(context_.space(), *learner_, adapter(), m->features, m->data, spec_.market_env,
                                      config_.seed + 1, greedy_agent_name(Learner::name));
  }

  /// Writes the model of this epoch into `dir`: checkpoint.safetensors and
  /// checkpoint.json as save_checkpoint writes them (so `foxrl eval`,
  /// `infer` and Policy load it), without the trainer state: a model to
  /// evaluate and serve, not a point to resume from. Rank 0 only. Fences.
  void save_model(const std::string& dir) override {
    const auto& space = context_.space();
    RunManifest m;
    m.identity = {run_id_, RunIdentity::config_hash_of(config_), epoch_};
    learner_->save(space, dir + "/checkpoint.safetensors", m.identity.metadata());
    m.config = config_;
    m.epoch = epoch_;
    m.global_step = global_step_;
    m.updates = updates_;
    m.ranks = comm_->size();
    if (adapter_) {
      m.has_normalizer = true;
      m.normalizer = adapter_->export_state(space);
    }
    m.write(dir);
  }

  /// Continues the run checkpointed in `dir` (save_checkpoint's files)
  /// and returns its manifest: the next run_epoch() is the one after the
  /// saved epoch and gives what the uninterrupted run gives
  /// (docs/design.md, "Resume"). The saved config must match this
  /// trainer's but for `epochs`, `out_dir` and `keep_checkpoints`
  /// (UsageError naming the key); a missing, damaged (checksum) or foreign
  /// file (another run's or epoch's identity) is a UsageError naming the
  /// file and tensor. On error the trainer is in an unspecified state and
  /// must be discarded.
  RunManifest resume(const std::string& dir) override {
    const auto& space = context_.space();
    RunManifest manifest = RunManifest::read(dir);
    check_resume_compatible(manifest.config, config_, dir + "/checkpoint.json");
    manifest.check_ranks(comm_->size(), dir + "/checkpoint.json");
    const std::string state_path = dir + "/" + trainer_state_file_of(comm_->rank());
    const std::string weights_path = dir + "/checkpoint.safetensors";
    // The learner first: its load re-snapshots the guard, which the trainer
    // state (the guard's saved snapshot and counters) then overwrites.
    manifest.identity.check_metadata(learner_->load(space, weights_path), weights_path);
    std::map<std::string, std::string> state_metadata;
    const TrainerCounters c = load_trainer_state(space, state_path, parts(), &state_metadata);
    manifest.identity.check_metadata(state_metadata, state_path);
    // Files of one generation agree; a legacy run directory (files replaced
    // one after the other, no identity) may hold files of different epochs.
    if (c.epoch != manifest.epoch || c.global_step != manifest.global_step || c.updates != manifest.updates ||
        learner_->updates() != c.updates) {
      throw UsageError(state_path + " (epoch " + std::to_string(c.epoch) + ", " + std::to_string(c.updates) +
                       " updates), " + dir + "/checkpoint.json (epoch " + std::to_string(manifest.epoch) + ", " +
                       std::to_string(manifest.updates) + " updates) and " + weights_path + " (" +
                       std::to_string(learner_->updates()) + " updates) are not from the same checkpoint");
    }
    epoch_ = c.epoch;
    global_step_ = c.global_step;
    iteration_ = c.iteration;
    updates_ = c.updates;
    experiences_ = c.experiences;
    if (!manifest.identity.run_id.empty()) run_id_ = manifest.identity.run_id;
    return manifest;
  }

  /// The run this trainer's checkpoints belong to (a fresh random id; a
  /// resume takes the checkpoint's).
  const std::string& run_id() const override { return run_id_; }
  void set_run_id(std::string id) { run_id_ = std::move(id); }

  const TrainConfig& config() const override { return config_; }
  ExecutionContext<ExecSpace>& context() override { return context_; }
  Learner& learner() { return *learner_; }
  /// How the ranks average gradients ("" with one rank), for logs.
  std::string gradient_transport() const override { return reducer_ ? reducer_->transport() : std::string(); }
  ReplayBuffer<ExecSpace>& replay() { return *replay_; }
  VectorEnv<ExecSpace>& env() override { return *env_; }
  ExperienceCollector<ExecSpace>& collector() { return *collector_; }
  /// Whether the sampled batch is normalised by the replay sample's gather
  /// (runs with a signal adapter; the kernel path normalize_in_sample):
  /// no "foxrl::SignalAdapter::normalize" launch in the sample phase.
  bool normalizes_in_sample() const { return adapter_.has_value() && normalize_in_sample_; }
  /// Whether an iteration's replay insert runs inside the collector's
  /// record launch (a few envs, one team each; the kernel path insert_in_record
  /// turns it off): no "foxrl::Replay::insert" launch or
  /// "foxrl::DqnTrainer::insert" phase of its own.
  bool inserts_in_record() const {
    return insert_in_record_ && replay_->insert_fits_one_team() &&
           kernels::record_step_in_one_team(static_cast<int>(config_.num_envs),
                                            collector_->nstep().record_elements_per_env());
  }
  /// Whether an iteration with updates advances the device clock inside its
  /// last priority update's launch (no "foxrl::IterationClock::advance"
  /// launch or "foxrl::DqnTrainer::clock" phase of its own): where that
  /// update is uniform replay's flat pass (the kernel path clock_in_update;
  /// after prioritized replay's tree update the ride-along measured about
  /// 1 us slower on an H100, perf/NOTES.md).
  bool clock_in_priority_update() const { return clock_in_update_ && replay_.has_value() && replay_->updates_flat(); }
  SignalAdapter<ExecSpace>* adapter() { return adapter_ ? &*adapter_ : nullptr; }
  /// What the config decided about the components (env, network, replay, market env).
  const RunSpec& spec() const override { return spec_; }
  /// The ranks this trainer is one of.
  dist::Communicator& communicator() { return *comm_; }
  /// The market data, splits and features; null for CartPole.
  const MarketComponents<ExecSpace>* market() const override { return env_data_->template of<MarketEnv<ExecSpace>>(); }
  EvaluationReport evaluate_market_split(const MarketSplit& split) override {
    const MarketComponents<ExecSpace>* m = market();
    if (!m) throw LogicError("OnlineTrainer::evaluate_market_split: the run's env is not the market");
    return evaluate_market(context_.space(), *learner_, adapter(), m->features, m->data, split, spec_.market_env,
                           config_.seed + 1, greedy_agent_name(Learner::name));
  }
  std::int64_t global_step() const override { return global_step_; }
  std::int64_t updates() const override { return updates_; }
  std::int64_t epoch() const override { return epoch_; }

 private:
  TrainerParts<ExecSpace> parts() {
    return {&*env_, &*replay_, &*collector_, adapter_ ? &*adapter_ : nullptr, &learner_->guard()};
  }
  TrainerCounters counters() const { return {epoch_, global_step_, iteration_, updates_, experiences_}; }

  /// The record of the whole run from each rank's (the same on every
  /// rank): env steps, experiences, episodes and throughput summed, the
  /// epoch's time the slowest rank's, the mean return weighted by the
  /// episodes (up to 100) behind each rank's. Losses, guard counters and
  /// updates are already the same on every rank.
  void reduce_over_ranks(EpochRecord& r) {
    const double returns_weight = static_cast<double>(std::min<std::int64_t>(r.episodes, 100));
    double sums[] = {static_cast<double>(r.env_steps), static_cast<double>(r.experiences),      r.env_steps_per_s,
                     static_cast<double>(r.episodes),  r.mean_return_last_100 * returns_weight, returns_weight};
    comm_->sum(sums, sizeof sums / sizeof sums[0]);
    comm_->max(&r.seconds, 1);
    r.env_steps = static_cast<std::int64_t>(sums[0]);
    r.experiences = static_cast<std::int64_t>(sums[1]);
    r.env_steps_per_s = sums[2];
    r.episodes = static_cast<std::int64_t>(sums[3]);
    r.mean_return_last_100 = sums[5] > 0 ? sums[4] / sums[5] : 0.0;
  }

  float beta() const { return beta_schedule()(updates_); }

  kernels::BetaSchedule beta_schedule() const { return {config_.per_beta_start, config_.per_beta_anneal_updates}; }

  /// The host counters the device clock mirrors.
  typename Clock::Values clock_values() const {
    return {global_step_, collector_->nstep().steps_pushed(), replay_->inserted(),
            static_cast<std::int64_t>(replay_->sample_calls()), updates_};
  }

  /// What an iteration's launches bake in besides the clock: whether it
  /// inserts, how many updates it makes and each one's target update, the
  /// selector's and adapter's modes.
  StreamGraphKey iteration_key(bool finished, std::int64_t rounds) const {
    StreamGraphKey key = {finished ? 1u : 0u, static_cast<std::uintptr_t>(rounds), selector_->greedy() ? 1u : 0u,
                          adapter_ && adapter_->frozen() ? 1u : 0u};
    for (std::int64_t u = 0; u < rounds; ++u) {
      const float tau = learner_->target_tau_ahead(u);
      std::uint32_t bits = 0;
      std::memcpy(&bits, &tau, sizeof bits);
      key.push_back(bits);
    }
    return key;
  }

  /// The launches of one iteration (and their components' host counters;
  /// a graph replay does those in iterate()).
  void launch_iteration(const ExecSpace& space, bool finished, std::int64_t rounds, const typename Clock::Values& by) {
    const bool insert_in_record = finished && inserts_in_record();
    {
      compat::ScopedRegion region("foxrl::DqnTrainer::collect");
      if (insert_in_record) {
        // The insert rides along in the collector's one-team record: one
        // node fewer on the iteration's chain.
        collector_->step(space, *learner_, clock_->read(Clock::global_step), clock_->read(Clock::nstep_pushed),
                         replay_->insert_in_team(collector_->nstep().output(), clock_->read(Clock::replay_inserted)));
      } else {
        collector_->step(space, *learner_, clock_->read(Clock::global_step), clock_->read(Clock::nstep_pushed));
      }
    }
    if (finished && !insert_in_record) {
      compat::ScopedRegion region("foxrl::DqnTrainer::insert");
      replay_->insert(space, collector_->nstep().output(), clock_->read(Clock::replay_inserted));
    }
    // Updates see this iteration's insert.
    const typename ReplayBuffer<ExecSpace>::CounterReads at_update = {
        clock_->read(Clock::replay_inserted, by[Clock::replay_inserted]), {}};
    for (std::int64_t u = 0; u < rounds; ++u) {
      auto at = at_update;
      at.sample_calls = clock_->read(Clock::sample_calls, u);
      const kernels::CounterRead updates_before = clock_->read(Clock::updates, u);
      if (u + 1 < rounds || !clock_in_priority_update()) {
        update(space, at, updates_before, u + 1 < rounds);
        continue;
      }
      // The clock's advance, with the last update's metrics into the epoch
      // sums, rides along in the last priority update's launch: one node
      // fewer on the iteration's chain.
      update(space, at, updates_before, false, clock_->advancer(by, sums_->adder(learner_->metrics())));
      return;
    }
    compat::ScopedRegion region("foxrl::DqnTrainer::clock");
    // The last update's metrics go into the epoch sums in the clock's launch.
    if (rounds > 0)
      clock_->advance(space, by, sums_->adder(learner_->metrics()));
    else
      clock_->advance(space, by);
  }

  /// One sample, update and priority update; `add_metrics`: the update's
  /// metrics into the epoch sums in a launch of their own (false: the
  /// caller adds them later, before the next update overwrites them).
  /// `then()` runs in the priority update's launch once it is done.
  template <class Then = kernels::NoLastTeamWork>
  void update(const ExecSpace& space, const typename ReplayBuffer<ExecSpace>::CounterReads& at,
              kernels::CounterRead updates_before, bool add_metrics, const Then& then = Then()) {
    const auto batch = [&] {
      compat::ScopedRegion region("foxrl::DqnTrainer::sample");
      const int B = static_cast<int>(config_.batch_size);
      // The market's batch normalised as the sample gathers it, or in a
      // pass of its own.
      if (normalizes_in_sample())
        return replay_->sample(space, B, beta_schedule(), updates_before, at, adapter_->element_normalizer());
      auto b = replay_->sample(space, B, beta_schedule(), updates_before, at);
      if (adapter_) adapter_->normalize_in_place(space, b.states, b.next_states);
      return b;
    }();
    compat::ScopedRegion region("foxrl::DqnTrainer::update");
    learner_->update(space, batch);  // the target copy is fused into its Adam launch
    replay_->update_priorities(space, batch.indices, learner_->td_errors(), at.inserted, then);
    if (add_metrics) sums_->add(space, learner_->metrics());
  }

  TrainConfig config_;
  std::shared_ptr<dist::Communicator> comm_;
  ExecutionContext<ExecSpace> context_;
  RunSpec spec_;
  std::optional<EnvData<ExecSpace>> env_data_;  ///< what the run's envs share (the market's series)
  std::optional<VectorEnv<ExecSpace>> env_;
  std::optional<SignalAdapter<ExecSpace>> adapter_;
  std::optional<Learner> learner_;
  std::optional<ReplayBuffer<ExecSpace>> replay_;
  std::optional<ActionSelector<ExecSpace>> selector_;
  std::optional<ExperienceCollector<ExecSpace>> collector_;
  std::optional<EpochMetricSums<ExecSpace>> sums_;
  std::optional<Clock> clock_;
  std::unique_ptr<StreamGraphs<ExecSpace>> iteration_graphs_;
  typename Kokkos::View<double*, memory_space>::HostMirror sums_host_;
  typename Kokkos::View<double*, memory_space>::HostMirror guard_host_;
  std::int64_t global_step_ = 0;
  std::int64_t iteration_ = 0;
  std::int64_t updates_ = 0;
  std::int64_t experiences_ = 0;
  std::int64_t epoch_ = 0;
  /// The clock's advance inside the flat priority update's launch
  /// (clock_in_priority_update(); the kernel path clock_in_update).
  bool clock_in_update_ = kernel_path_on(KernelPath::clock_in_update);
  /// The replay insert inside the collector's one-team record (the kernel
  /// path insert_in_record; off: a launch of its own).
  bool insert_in_record_ = kernel_path_on(KernelPath::insert_in_record);
  /// The batch normalised in the replay sample (the kernel path
  /// normalize_in_sample; off: a launch of its own).
  bool normalize_in_sample_ = kernel_path_on(KernelPath::normalize_in_sample);
  std::string run_id_ = RunIdentity::new_run_id();
  std::unique_ptr<GradientReducer<ExecSpace>> reducer_;  ///< with more than one rank
  std::unique_ptr<ReplicaCheck<ExecSpace>> replicas_;    ///< with more than one rank
};

/// The DQN trainer: OnlineTrainer over DqnLearner.
template <class ExecSpace = Kokkos::DefaultExecutionSpace>
using DqnTrainer = OnlineTrainer<ExecSpace, DqnLearner<ExecSpace>>;

/// The online trainer of `config.algo` (a registered online learner;
/// UsageError naming the registered ones otherwise), one rank of `comm`.
template <class ExecSpace>
std::unique_ptr<OnlineTrainerBase<ExecSpace>> make_online_trainer(const TrainConfig& config,
                                                                  std::shared_ptr<dist::Communicator> comm) {
  return with_online_learner<ExecSpace>(config.algo, [&](auto* tag) -> std::unique_ptr<OnlineTrainerBase<ExecSpace>> {
    using Learner = std::remove_pointer_t<decltype(tag)>;
    return std::make_unique<OnlineTrainer<ExecSpace, Learner>>(config, comm);
  });
}

}  // namespace foxrl
