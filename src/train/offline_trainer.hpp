#pragma once
// OfflineTrainer: the epoch loop of `foxrl train-offline`. Owns the run's
// ExecutionContext (one instance for everything), the dataset in device
// memory, the uniform sampler, the learner `config.algo` names, and the
// env of the dataset for evaluation (rebuilt from the config the dataset
// was recorded with).
//
// An epoch is `updates_per_epoch` iterations of sample -> update ->
// accumulate the update's metrics, all queued on the instance with no host
// read; the epoch's metric means are read once at its end. Evaluation
// plays one greedy episode in each of `eval_episodes` envs of the dataset's
// env, seeded from seed + 1 every time, so epochs are compared on the same
// start states; for a market dataset the evaluation adds the greedy
// policy's continuous backtest on the validation split (net return,
// Sharpe, trades). Market observations reach the learner normalised: through
// the normaliser the behaviour policy saw (recorded in the dataset), else
// through statistics of the dataset itself; the dataset is normalised once,
// in place, at setup.
//
// A market run ends with the greedy policy's continuous backtest on the
// test split next to the baselines (evaluate_test_split): what `foxrl
// train` reports at its end, so online and offline agents compare alike.
//
// The state of a run is the learner's file plus the sampler's call counter
// (OfflineManifest): a resumed run continues bit for bit.
//
// Data-parallel (a Communicator of several ranks, e.g. under mpirun): every
// rank holds the whole dataset and samples its own batches (the sampler
// seeded by dist::rank_seed); every network's step averages its gradients
// and the loss its guard judges over the ranks (the learner's gradient
// hook, make_gradient_reducer: NCCL on the GPU where built in, else MPI),
// so the weights stay identical; the epoch's metric means are averaged too,
// and a checksum of every learned buffer is compared after each epoch.

#include "agents/learner_registry.hpp"
#include "config/offline_train_config.hpp"
#include "core/compat.hpp"
#include "core/error.hpp"
#include "core/execution_context.hpp"
#include "core/host_mirror.hpp"
#include "dist/communicator.hpp"
#include "dist/gradient_reducer.hpp"
#include "dist/replica_check.hpp"
#include "envs/episode_evaluation.hpp"
#include "kernels/offline/metric_sums.hpp"
#include "market/market_evaluation.hpp"
#include "market/validation_backtest.hpp"
#include "offline/offline_dataset.hpp"
#include "offline/offline_sampler.hpp"
#include "train/offline_manifest.hpp"
#include "train/run_identity.hpp"
#include "train/run_spec.hpp"
#include "train/training_log.hpp"

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace foxrl {

/// What one epoch of an offline run did.
struct OfflineEpochRecord {
  std::int64_t epoch = 0;
  double seconds = 0;
  std::int64_t updates = 0;  ///< since the start of the run
  double updates_per_s = 0;  ///< this epoch
  /// The epoch's mean of each metric the learner reports, in its order.
  std::vector<std::pair<std::string, double>> metrics;
  std::optional<EpisodeEvaluation> evaluation;  ///< when this epoch was evaluated
  /// Market datasets, when this epoch was evaluated: the greedy policy's
  /// continuous backtest on the validation split (never the test split).
  std::optional<ValidationBacktest> validation;
  /// The training guards (one per network), summed over the networks.
  std::int64_t rejected_updates = 0;  ///< network updates rejected this epoch
  std::int64_t rejected_total = 0;    ///< since the start of the run
  std::int64_t restores = 0;          ///< snapshot restores since the start
  double lr_scale = 1.0;              ///< the smallest learning-rate factor of any network
};

template <class ExecSpace>
class OfflineTrainer {
 public:
  using memory_space = typename ExecSpace::memory_space;

  /// Reads and uploads the dataset, builds the learner and sampler. A
  /// malformed dataset or config: UsageError naming the file and field.
  /// `comm`: the ranks of a data-parallel run (one rank by default).
  explicit OfflineTrainer(const OfflineTrainConfig& config,
                          std::shared_ptr<dist::Communicator> comm = dist::single_process())
      : config_(config), context_(config.seed), comm_(std::move(comm)) {
    if (!comm_) throw LogicError("foxrl::OfflineTrainer: no communicator");
    config_.validate();
    const ExecSpace& space = context_.space();
    const DatasetFile file = read_dataset_file(config_.dataset);
    metadata_ = file.metadata;
    rows_ = file.rows;
    dataset_sha256_ = file.sha256;
    run_id_ = RunIdentity::new_run_id();
    comm_->broadcast(run_id_, 0);  // rank 0's id is the run's
    spec_ = run_spec(metadata_.config);
    if (spec_.obs_dim != metadata_.obs_dim || spec_.num_actions != metadata_.num_actions)
      throw UsageError("dataset '" + config_.dataset + "': its config describes " + std::to_string(spec_.obs_dim) +
                       " features and " + std::to_string(spec_.num_actions) + " actions, its tensors " +
                       std::to_string(metadata_.obs_dim) + " and " + std::to_string(metadata_.num_actions));
    dataset_.emplace(space, file);
    env_data_.emplace(space, metadata_.config);
    setup_normalizer(space, file);
    const int inference_rows = std::max<int>(64, static_cast<int>(config_.eval_episodes));
    agent_ = make_offline_agent(space, config_, metadata_.obs_dim, metadata_.num_actions, inference_rows);
    OfflineSamplerConfig sampler;
    sampler.max_batch = static_cast<int>(config_.batch_size);
    sampler.gamma = static_cast<float>(config_.gamma);
    sampler.seed = dist::rank_seed(config_.seed, comm_->rank());  // config_.seed itself on rank 0
    sampler_.emplace(space, *dataset_, sampler);
    if (comm_->size() > 1) {
      // One reducer per network, made at its first step (the sizes come
      // with the gradients); NCCL's communicator is made then too, at the
      // same point on every rank.
      agent_->set_gradient_hook([this](const ExecSpace& s, int k, const FlatParams<memory_space>& grads,
                                       const Kokkos::View<float*, memory_space>& loss) {
        if (reducers_.size() <= std::size_t(k)) reducers_.resize(std::size_t(k) + 1);
        if (!reducers_[k])
          reducers_[k] =
              make_gradient_reducer<ExecSpace>(comm_, grads, loss, 1, reduction_transport_from_environment());
        reducers_[k]->mean(s, grads, loss);
      });
      replicas_ = std::make_unique<ReplicaCheck<ExecSpace>>(comm_, agent_->state_buffers());
    }
    sums_ = Kokkos::View<double*, memory_space>(Kokkos::view_alloc(space, "foxrl::OfflineTrainer::metric_sums"),
                                                OfflineMetrics::count);
    context_.fence("foxrl::OfflineTrainer::setup");
  }

  /// One epoch (see the file comment); evaluates when the epoch is a
  /// multiple of eval_every or the last one.
  OfflineEpochRecord run_epoch() {
    const ExecSpace& space = context_.space();
    const auto start = std::chrono::steady_clock::now();
    const int B = static_cast<int>(config_.batch_size);
    ProgressLine progress(config_.updates_per_epoch);
    for (std::int64_t u = 0; u < config_.updates_per_epoch; ++u) {
      const Batch<memory_space> batch = sampler_->sample(space, B);
      agent_->update(space, batch);
      kernels::accumulate_metrics(space, Kokkos::View<const float*, memory_space>(agent_->metrics()), sums_);
      if ((u + 1) % 256 == 0) progress.tick(u + 1);
    }
    progress.finish();
    agent_->snapshot_guards(space);  // the restore point: where the epoch's last update was applied
    const auto sums = to_host(space, sums_, "foxrl::OfflineTrainer::read_metrics");
    Kokkos::deep_copy(space, sums_, 0.0);
    ++epoch_;
    if (comm_->size() > 1) {
      comm_->sum(sums.data(), sums.extent(0));
      for (std::size_t i = 0; i < sums.extent(0); ++i) sums(i) /= double(comm_->size());
      replicas_->verify(space, "after epoch " + std::to_string(epoch_));
    }
    OfflineEpochRecord r;
    r.epoch = epoch_;
    r.updates = agent_->updates();
    const GuardCounters guard = agent_->guard_counters(space);
    r.rejected_updates = guard.rejected - rejected_before_;
    r.rejected_total = guard.rejected;
    r.restores = guard.restores;
    r.lr_scale = guard.lr_scale;
    rejected_before_ = guard.rejected;
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    comm_->max(&r.seconds, 1);  // the slowest rank's
    r.updates_per_s = r.seconds > 0 ? double(config_.updates_per_epoch) / r.seconds : 0.0;
    for (const auto& s : agent_->metric_slots())
      r.metrics.emplace_back(s.name, sums(s.slot) / double(config_.updates_per_epoch));
    if (config_.eval_episodes > 0 && (epoch_ % config_.eval_every == 0 || epoch_ == config_.epochs)) {
      r.evaluation = evaluate(static_cast<int>(config_.eval_episodes));
      r.validation = validation_backtest();
    }
    return r;
  }

  /// One greedy episode in each of `episodes` envs of the dataset's env
  /// (market: the validation split, else the split the dataset replayed).
  EpisodeEvaluation evaluate(int episodes) {
    const ExecSpace& space = context_.space();
    VectorEnv<ExecSpace> env =
        make_vector_env(space, metadata_.config, *env_data_, episodes, config_.seed + 1, evaluation_split());
    GreedyAct act{agent_.get(), adapter_ ? &*adapter_ : nullptr, {}};
    if (adapter_)
      act.normalized =
          obs_view(Kokkos::view_alloc(space, Kokkos::WithoutInitializing, "foxrl::OfflineTrainer::eval_obs"), episodes,
                   spec_.obs_dim);
    // CartPole truncates at 500 steps, market episodes at episode_length;
    // the bound only guards against an env that never ends an episode.
    const std::int64_t max_steps = std::max<std::int64_t>(100000, 2 * metadata_.config.episode_length);
    return evaluate_first_episodes(space, env, act, max_steps);
  }

  /// Market datasets: the greedy policy on `split` of `market` (the
  /// dataset's own market, or another one built with the dataset's config)
  /// in one continuous backtest, next to the baselines; seeded from seed + 1
  /// like the periodic evaluation. LogicError for a dataset of another env.
  EvaluationReport evaluate_market_split(const MarketComponents<ExecSpace>& market, const MarketSplit& split) {
    if (!this->market())
      throw LogicError("OfflineTrainer::evaluate_market_split: the dataset is not of the market env");
    return evaluate_market(context_.space(), *agent_, adapter_ ? &*adapter_ : nullptr, market.features, market.data,
                           split, spec_.market_env, config_.seed + 1, agent_name());
  }

  /// evaluate_market_split on the test split of the dataset's market: the
  /// report at the end of a market run.
  EvaluationReport evaluate_test_split() {
    const MarketComponents<ExecSpace>* m = market();
    if (!m) throw LogicError("OfflineTrainer::evaluate_test_split: the dataset is not of the market env");
    return evaluate_market_split(*m, m->data.splits.test);
  }

  /// Market datasets with a validation split of two or more decision bars:
  /// its continuous backtest (evaluate_market_split); else nothing.
  std::optional<ValidationBacktest> validation_backtest() {
    const MarketComponents<ExecSpace>* m = market();
    if (!m) return std::nullopt;
    return foxrl::validation_backtest(context_.space(), *agent_, adapter_ ? &*adapter_ : nullptr, m->features, m->data,
                                      spec_.market_env, config_.seed + 1, agent_name());
  }

  /// The row name of the learner in an evaluation report, e.g. "agent (greedy IQL)".
  std::string agent_name() const { return greedy_agent_name(config_.algo); }

  /// Writes the learner (learner.safetensors), its guards
  /// (guard.safetensors), both stamped with the run's identity, and the
  /// manifest (offline_checkpoint.json) into `dir`. Fences.
  void save_checkpoint(const std::string& dir, const std::map<std::string, std::int64_t>& log_bytes) const {
    const ExecSpace& space = context_.space();
    const RunIdentity identity{run_id_, RunIdentity::config_hash_of(config_), epoch_};
    std::map<std::string, std::string> stamp = identity.metadata();
    stamp["algo"] = config_.algo;
    agent_->save(space, dir + "/" + OfflineManifest::learner_file, stamp);
    agent_->save_guard_state(space, dir + "/" + OfflineManifest::guard_file, identity.metadata());
    OfflineManifest m;
    m.config_json = config_.to_json();
    m.algo = config_.algo;
    m.epoch = epoch_;
    m.updates = agent_->updates();
    m.sample_calls = sampler_->sample_calls();
    m.dataset_rows = rows_;
    m.dataset_sha256 = dataset_sha256_;
    m.identity = identity;
    m.log_bytes = log_bytes;
    m.ranks = comm_->size();
    m.write(dir);
  }

  /// Loads the checkpoint in `dir`: the learner and the counters. The
  /// algorithm, the dataset (size and SHA-256) and the identity of the
  /// learner and guard files must be this run's (UsageError naming the
  /// file otherwise); on an error the trainer must be discarded.
  OfflineManifest resume(const std::string& dir) {
    const ExecSpace& space = context_.space();
    OfflineManifest m = OfflineManifest::read(dir);
    const std::string manifest_path = dir + "/" + OfflineManifest::manifest_file;
    m.check_ranks(comm_->size(), manifest_path);
    if (m.algo != config_.algo)
      throw UsageError(manifest_path + ": the checkpoint is of algo '" + m.algo + "', the run's config says '" +
                       config_.algo + "'");
    if (m.dataset_rows != rows_)
      throw UsageError(manifest_path + ": the checkpoint trained on " + std::to_string(m.dataset_rows) +
                       " transitions, the dataset " + config_.dataset + " has " + std::to_string(rows_));
    m.check_dataset(dataset_sha256_, config_.dataset, manifest_path);
    const std::string learner_path = dir + "/" + OfflineManifest::learner_file;
    m.identity.check_metadata(agent_->load(space, learner_path), learner_path);
    if (agent_->updates() != m.updates)
      throw UsageError(dir + ": the learner file holds " + std::to_string(agent_->updates()) +
                       " updates, the manifest " + std::to_string(m.updates));
    // Checkpoints written before the guards kept their state resume with
    // fresh guards (the loaded weights as their restore point).
    if (m.has_guard) {
      const std::string guard_path = dir + "/" + OfflineManifest::guard_file;
      m.identity.check_metadata(agent_->load_guard_state(space, guard_path), guard_path);
    }
    // A resumed run keeps its id (older manifests have none: it keeps a new one).
    if (!m.identity.run_id.empty()) run_id_ = m.identity.run_id;
    rejected_before_ = agent_->guard_counters(space).rejected;
    sampler_->restore_counters(m.sample_calls);
    epoch_ = m.epoch;
    context_.fence("foxrl::OfflineTrainer::resume");
    return m;
  }

  std::int64_t epoch() const { return epoch_; }
  std::int64_t updates() const { return agent_->updates(); }
  const DatasetMetadata& dataset_metadata() const { return metadata_; }
  std::int64_t dataset_rows() const { return rows_; }
  /// SHA-256 of the dataset file, as the checkpoints record it.
  const std::string& dataset_sha256() const { return dataset_sha256_; }
  /// The run's id (new, or the resumed checkpoint's).
  const std::string& run_id() const { return run_id_; }
  OfflineAgent<ExecSpace>& agent() { return *agent_; }
  /// The dataset's market (null for other envs) and the frozen normaliser
  /// the learner's inputs pass through (null when there is none).
  const MarketComponents<ExecSpace>* market() const { return env_data_->template of<MarketEnv<ExecSpace>>(); }
  SignalAdapter<ExecSpace>* adapter() { return adapter_ ? &*adapter_ : nullptr; }
  /// The run setup of the dataset's env (its TrainConfig is dataset_metadata().config).
  const RunSpec& spec() const { return spec_; }
  const ExecSpace& space() const { return context_.space(); }
  const OfflineTrainConfig& config() const { return config_; }
  const dist::Communicator& communicator() const { return *comm_; }
  /// How the ranks average gradients ("" with one rank, or before the
  /// first update), for logs.
  std::string gradient_transport() const {
    return !reducers_.empty() && reducers_.front() ? reducers_.front()->transport() : std::string();
  }

 private:
  using obs_view = typename VectorEnv<ExecSpace>::obs_view;

  /// The greedy policy evaluate_first_episodes calls (a named type: nvcc
  /// refuses a local lambda type in the template arguments of a function
  /// that launches extended lambdas).
  struct GreedyAct {
    OfflineAgent<ExecSpace>* agent;
    SignalAdapter<ExecSpace>* adapter;  ///< market: normalises first; else null
    obs_view normalized;
    void operator()(const ExecSpace& s, const obs_view& obs,
                    const Kokkos::View<std::int32_t*, memory_space>& actions) const {
      if (adapter != nullptr) {
        adapter->normalize(s, obs, normalized);
        agent->greedy_actions(s, ConstMatrix<memory_space>(normalized), actions);
      } else {
        agent->greedy_actions(s, ConstMatrix<memory_space>(obs), actions);
      }
    }
  };

  /// Market: the normaliser the behaviour policy used, else statistics of
  /// the dataset's observations; frozen, applied to the dataset in place.
  void setup_normalizer(const ExecSpace& space, const DatasetFile& file) {
    adapter_ = make_adapter(space, spec_);
    if (!adapter_) return;
    if (file.normalizer) {
      adapter_->import_state(space, *file.normalizer, config_.dataset);
    } else {
      adapter_->update(space, dataset_->storage().observations);
    }
    adapter_->set_frozen(true);
    adapter_->normalize_in_place(space, dataset_->storage().observations, dataset_->storage().next_observations);
  }

  /// The split of the periodic evaluation: validation (held out from the
  /// test split the final report uses) where the env's data has one, else
  /// the test split (a simulator ignores it).
  EnvSplit evaluation_split() const {
    const MarketComponents<ExecSpace>* m = market();
    return m && m->data.splits.validation.end > m->data.splits.validation.begin ? EnvSplit::validation : EnvSplit::test;
  }

  /// A host copy of `v`; fences `space` with `label`.
  static Kokkos::View<double*, Kokkos::HostSpace> to_host(const ExecSpace& space,
                                                          const Kokkos::View<double*, memory_space>& v,
                                                          const char* label) {
    Kokkos::View<double*, Kokkos::HostSpace> h("foxrl::OfflineTrainer::host_sums", v.extent(0));
    Kokkos::deep_copy(space, h, v);
    compat::fence(space, label);
    return h;
  }

  OfflineTrainConfig config_;
  ExecutionContext<ExecSpace> context_;
  std::shared_ptr<dist::Communicator> comm_;
  std::vector<std::unique_ptr<GradientReducer<ExecSpace>>> reducers_;  ///< per network, with several ranks
  std::unique_ptr<ReplicaCheck<ExecSpace>> replicas_;                  ///< with several ranks
  DatasetMetadata metadata_;
  std::int64_t rows_ = 0;
  std::string dataset_sha256_;
  std::string run_id_;
  RunSpec spec_;
  std::optional<OfflineDataset<ExecSpace>> dataset_;
  std::optional<EnvData<ExecSpace>> env_data_;  ///< what the dataset's envs share (the market's series)
  std::optional<SignalAdapter<ExecSpace>> adapter_;
  std::unique_ptr<OfflineAgent<ExecSpace>> agent_;
  std::optional<OfflineSampler<ExecSpace>> sampler_;
  Kokkos::View<double*, memory_space> sums_;
  std::int64_t epoch_ = 0;
  std::int64_t rejected_before_ = 0;  ///< guard rejections before this epoch
};

}  // namespace foxrl
