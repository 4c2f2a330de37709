#pragma once
// DqnLearner: the Q-network learner of the training step, composed of the
// nn pieces: the online ParameterSet run through an Mlp (dueling head), a
// TargetNetwork with its own Mlp, a flat gradient View, an AdamOptimizer and
// a TrainingGuard over {online, target, m, v} + step. One gradient step per
// update() on the run's instance, in two public halves:
//   compute_gradients: online forward at s and s', target forward at s',
//     double-DQN n-step target + importance-weighted loss + dL/dhead (one
//     launch), backward into gradients();
//   (the gradient hook, if set: e.g. an all-reduce of gradients and metrics)
//   apply_gradients: gradient norm (reduced on the device, with the guard's
//     decision in the same launch), then clip + Adam (+ Polyak or hard
//     target copy, or the guard's skip or restore) in one launch (on CUDA
//     both in one fused launch, kernels/cuda/fused_optimizer.cuh); hard
//     target copies follow a host-side update counter.
// No host sync and no allocation inside update(). On CUDA, update() without
// a gradient hook replays its launches as a CUDA graph (core/stream_graph.hpp):
// the same kernels with the same arguments, so the same results. On CUDA
// with the blas backend in fp32, a network whose two copies fit one
// block's shared memory takes the whole update() in one launch instead
// (kernels/agents/dqn/small_network_paths.hpp chooses; fused_update() says
// whether).
// docs/design.md lists the launches of both dense backends.

#include "agents/dqn/dqn_checkpoint.hpp"
#include "config/train_config.hpp"
#include "core/compat.hpp"
#include "core/error.hpp"
#include "core/kernel_paths.hpp"
#include "core/stream_graph.hpp"
#include "kernels/agents/dqn/dqn_loss.hpp"
#include "kernels/agents/dqn/small_network_paths.hpp"
#include "kernels/core/no_per_env_step.hpp"
#include "kernels/core/reduce_scratch.hpp"
#include "kernels/nn/adam.hpp"
#include "kernels/nn/matmul_precision.hpp"
#include "kernels/nn/weight_init.hpp"
#include "nn/adam_optimizer.hpp"
#include "nn/dense_ops.hpp"
#include "nn/mlp.hpp"
#include "nn/parameter_file.hpp"
#include "nn/target_network.hpp"
#include "nn/training_guard.hpp"
#include "views/agents/dqn/dqn_weights.hpp"
#include "views/agents/dqn/fused_update_stamps.hpp"
#include "views/agents/dqn/learner_metrics.hpp"
#include "views/envs/env_traits.hpp"
#include "views/nn/network_layout.hpp"
#include "views/nn/parameter_set.hpp"
#include "views/replay/batch.hpp"

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace foxrl {

/// Hyperparameters of a DqnLearner. gamma is not here: Batch::discounts
/// already holds gamma^n (1 - terminated).
struct DqnLearnerConfig {
  int obs_dim = 0;
  std::vector<int> hidden = {512, 512};
  int num_actions = 0;
  int max_batch = 1024;         ///< largest Batch::size() update() accepts
  int max_inference_batch = 0;  ///< largest row count of q_values()/greedy_actions(); 0: max_batch
  float lr = 2.5e-4f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 0.0f;
  WeightDecayMode weight_decay_mode = WeightDecayMode::decoupled;
  float max_grad_norm = 0.0f;     ///< <= 0: no clipping
  int target_update_every = 500;  ///< hard copy after every K-th update (when polyak_tau <= 0)
  float polyak_tau = 0.0f;        ///< > 0: target = tau online + (1 - tau) target after every update
  LossKind loss = LossKind::huber;
  std::uint64_t seed = 0;
  InitScheme init = InitScheme::torch_default;
  DenseBackend dense_backend = DenseBackend::blas;
  MatmulPrecision matmul_precision = MatmulPrecision::fp32;  ///< of every dense product (blas backend)
  GuardConfig guard;
  /// CUDA: replay update() as a CUDA graph (core/stream_graph.hpp); results
  /// are the same either way.
  bool cuda_graphs = true;
  /// CUDA, blas backend, fp32: run update() as one launch when the network
  /// fits (kernels/agents/dqn/small_network_paths.hpp); the kernel path
  /// fused_cuda off (core/kernel_paths.hpp) turns it off as well. Results
  /// agree with the launch sequence to rounding.
  bool fused_update = true;
  /// Threads per block of the one-launch update and forward: 256, 512 or
  /// 1024 (the default, the fastest measured).
  int fused_threads = kernels::small_network_default_threads;

  AdamHyper adam() const {
    AdamHyper h;
    h.lr = lr;
    h.beta1 = beta1;
    h.beta2 = beta2;
    h.eps = eps;
    h.weight_decay = weight_decay;
    h.weight_decay_mode = weight_decay_mode;
    h.max_grad_norm = max_grad_norm;
    return h;
  }

  /// Throws UsageError naming the first bad field.
  void validate() const {
    auto bad = [](const std::string& field, const std::string& why) {
      throw UsageError("foxrl::DqnLearnerConfig: " + field + " " + why);
    };
    if (max_batch <= 0) bad("max_batch", "must be > 0, got " + std::to_string(max_batch));
    if (max_inference_batch < 0) bad("max_inference_batch", "must be >= 0");
    if (!(lr > 0.0f)) bad("lr", "must be > 0, got " + std::to_string(lr));
    if (!(beta1 >= 0.0f && beta1 < 1.0f)) bad("beta1", "must be in [0, 1), got " + std::to_string(beta1));
    if (!(beta2 >= 0.0f && beta2 < 1.0f)) bad("beta2", "must be in [0, 1), got " + std::to_string(beta2));
    if (!(eps > 0.0f)) bad("eps", "must be > 0");
    if (!(weight_decay >= 0.0f)) bad("weight_decay", "must be >= 0");
    if (!(polyak_tau >= 0.0f && polyak_tau <= 1.0f)) bad("polyak_tau", "must be in [0, 1]");
    if (polyak_tau == 0.0f && target_update_every <= 0)
      bad("target_update_every", "must be > 0 when polyak_tau is 0, got " + std::to_string(target_update_every));
    if (fused_threads != 256 && fused_threads != 512 && fused_threads != 1024)
      bad("fused_threads", "must be 256, 512 or 1024, got " + std::to_string(fused_threads));
    guard.validate();
    (void)NetworkLayout::dueling(obs_dim, hidden, num_actions);  // checks the shapes
  }
};

/// The gradients compute_gradients() formed: shared handles to the flat
/// gradient View (laid out like the parameters) and the metrics View of
/// the update; false for an empty batch (nothing computed).
template <class MemorySpace>
struct DqnGradients {
  FlatParams<MemorySpace> grads;
  Kokkos::View<float*, MemorySpace> metrics;
  explicit operator bool() const { return grads.data() != nullptr; }
};

/// Double-DQN learner with a dueling MLP Q-network; see the file comment.
template <class ExecSpace>
class DqnLearner {
 public:
  using execution_space = ExecSpace;
  using memory_space = typename ExecSpace::memory_space;
  using matrix = Kokkos::View<float**, Kokkos::LayoutRight, memory_space>;
  using vector = Kokkos::View<float*, memory_space>;
  /// The one-launch paths of this execution space (none but on CUDA).
  using Paths = kernels::SmallNetworkPaths<ExecSpace>;
  /// Called by update() between compute_gradients() and apply_gradients()
  /// with the gradients and the metrics on the same instance (data-parallel
  /// training all-reduces both there). It may change them in place; it must
  /// leave every launch on `space`.
  using GradientHook = std::function<void(const ExecSpace&, const FlatParams<memory_space>&, const vector&)>;

  // --- the registered online learner's contract (agents/learner_registry.hpp)
  static constexpr const char* name = "dqn";
  static constexpr const char* summary =
      "double DQN: dueling head, n-step returns, prioritized replay, Huber loss, Adam, training guard";
  using Config = DqnLearnerConfig;
  /// The learner a run of `config` trains in an env of `spaces`: updates of
  /// up to batch_size rows, inference over all num_envs envs.
  static DqnLearnerConfig config_for(const TrainConfig& config, const EnvSpaces& spaces) {
    DqnLearnerConfig lc;
    lc.obs_dim = spaces.obs_dim;
    lc.num_actions = spaces.num_actions;
    lc.hidden.assign(config.hidden.begin(), config.hidden.end());
    lc.max_batch = static_cast<int>(config.batch_size);
    lc.max_inference_batch = static_cast<int>(config.num_envs);
    lc.lr = static_cast<float>(config.lr);
    lc.eps = static_cast<float>(config.adam_eps);
    lc.weight_decay = static_cast<float>(config.weight_decay);
    lc.max_grad_norm = static_cast<float>(config.max_grad_norm);
    lc.target_update_every = static_cast<int>(config.target_update_every);
    lc.polyak_tau = static_cast<float>(config.polyak_tau);
    lc.loss = config.loss == "mse" ? LossKind::mse : LossKind::huber;
    lc.seed = config.seed;
    lc.dense_backend = DenseBackend::blas;
    lc.matmul_precision = parse_matmul_precision(config.matmul_precision, "config");
    lc.guard.spike_factor = static_cast<float>(config.guard_spike_factor);
    lc.guard.max_bad = static_cast<int>(config.guard_max_bad);
    lc.guard.lr_decay = static_cast<float>(config.guard_lr_decay);
    return lc;
  }
  /// The same network for inference only (its weights come from a
  /// checkpoint): calls of up to `max_rows` rows and no training batch.
  static DqnLearnerConfig inference_config_for(const TrainConfig& config, const EnvSpaces& spaces, int max_rows) {
    DqnLearnerConfig lc = config_for(config, spaces);
    lc.max_batch = 1;
    lc.max_inference_batch = max_rows;
    return lc;
  }

  /// Allocates everything and initialises online (= target) weights from
  /// config.seed; work is queued on `space`.
  DqnLearner(const ExecSpace& space, const DqnLearnerConfig& config)
      : config_(config), graphs_(std::make_unique<StreamGraphs<ExecSpace>>(config.cuda_graphs)) {
    config_.validate();
    layout_ = NetworkLayout::dueling(config_.obs_dim, config_.hidden, config_.num_actions);
    const int B = config_.max_batch;
    const int rows = std::max(2 * B, config_.max_inference_batch);
    ops_ = std::make_shared<DenseOps<ExecSpace>>(space, config_.dense_backend, config_.matmul_precision);
    {
      // One scratch for every single-launch reduction of update() (they run
      // one after the other on the instance).
      const auto relu = Mlp<ExecSpace>::scratch_need(layout_, B);
      const auto loss = kernels::dqn_loss_scratch<ExecSpace>(B, layout_.head_outputs());
      const std::size_t norm = kernels::gradient_norm_scratch<ExecSpace>(layout_.total, true);
      reduce_ = kernels::ReduceScratch<memory_space>(space, "foxrl::DqnLearner::reduce",
                                                     std::max({relu.floats, loss.floats, norm}),
                                                     std::max<std::size_t>(relu.tickets, 1));
    }
    {
      // Both networks' parameters in one allocation and their activations
      // in another, online first: the update's paired products
      // (Mlp::forward_with_target) need the two a fixed distance apart in
      // the same order, which buffers of their own would have only where
      // the allocator happened to hand them out so.
      const auto [online_flat, target_flat] = alloc_flat_pair(space, layout_, "foxrl::DqnLearner::online+target");
      online_ = ParameterSet<memory_space>(layout_, online_flat);
      target_ = TargetNetwork<ExecSpace>(ParameterSet<memory_space>(layout_, target_flat));
    }
    grads_ = alloc_flat(space, layout_, "foxrl::DqnLearner::grads");
    adam_ = AdamOptimizer<ExecSpace>(space, layout_.total, config_.adam(), "foxrl::DqnLearner");
    // 2 B rows for the target: the paired forward runs its first layer over [s; s'].
    std::tie(online_net_, target_net_) =
        Mlp<ExecSpace>::pair(space, layout_, rows, B, 2 * B, 0, ops_, reduce_, "foxrl::DqnLearner::online_net",
                             "foxrl::DqnLearner::target_net");
    d_head_ = matrix(Kokkos::view_alloc(space, Kokkos::WithoutInitializing, "foxrl::DqnLearner::d_head"), B,
                     layout_.head_outputs());
    td_errors_ = vector(Kokkos::view_alloc(space, "foxrl::DqnLearner::td_errors"), B);
    metrics_ = vector(Kokkos::view_alloc(space, "foxrl::DqnLearner::metrics"), LearnerMetrics::count);
    kernels::init_weights(space, online_.flat, layout_, config_.seed, config_.init);
    Kokkos::deep_copy(space, target_.params().flat, online_.flat);
    guard_ = TrainingGuard<ExecSpace>(space,
                                      {{"online", online_.flat},
                                       {"target", target_.params().flat},
                                       {"adam_m", adam_.m()},
                                       {"adam_v", adam_.v(), true}},
                                      adam_.step(), config_.guard);
    guard_.snapshot(space, true);
    plan_fused_update(space);
  }

  /// One gradient step on `batch` (size <= max_batch), all on `space`:
  /// compute_gradients, the gradient hook (if set), apply_gradients.
  void update(const ExecSpace& space, const Batch<memory_space>& batch) {
    if (hook_) {
      const auto g = compute_gradients(space, batch);
      if (!g) return;
      hook_(space, g.grads, g.metrics);
      apply_gradients(space);
      return;
    }
    check_batch(batch);
    if (batch.size() == 0) return;
    check_no_pending("update");
    // Everything a launch of the update bakes in that can change between
    // updates: the batch's buffers and size, and the target update.
    const float tau = next_target_tau();
    const StreamGraphKey key = {reinterpret_cast<std::uintptr_t>(batch.states.data()),
                                reinterpret_cast<std::uintptr_t>(batch.next_states.data()),
                                reinterpret_cast<std::uintptr_t>(batch.actions.data()),
                                reinterpret_cast<std::uintptr_t>(batch.rewards.data()),
                                reinterpret_cast<std::uintptr_t>(batch.discounts.data()),
                                reinterpret_cast<std::uintptr_t>(batch.is_weights.data()),
                                static_cast<std::uintptr_t>(batch.size()),
                                static_cast<std::uintptr_t>(tau_bits(tau))};
    graphs_->run(space, key, [&] {
      if (fused_update_) {
        launch_fused_update(space, batch, tau);
        return;
      }
      launch_gradients(space, batch);
      launch_apply(space, tau);
    });
    ++updates_;
  }

  /// The target update that update() will make `ahead` updates from now
  /// (0: the next one): Polyak tau, 1 for a due hard copy, 0 for none. A
  /// caller capturing several updates in one graph keys it by these.
  float target_tau_ahead(std::int64_t ahead) const {
    if (config_.polyak_tau > 0.0f) return config_.polyak_tau;
    return (updates_ + 1 + ahead) % config_.target_update_every == 0 ? 1.0f : 0.0f;
  }

  /// The host side of an update() whose launches ran in a replayed graph.
  void count_replayed_update() { ++updates_; }

  /// Whether update() runs as one fused launch (see the file comment).
  bool fused_update() const { return fused_update_; }
  /// Why update() does not run fused (empty when it does, or when it was
  /// not asked for or this is no CUDA build).
  const std::string& fused_update_unfit() const { return fused_unfit_; }

  /// Whether an inference forward of `rows` rows runs as one fused launch
  /// (kernels/cuda/fused_small_forward.cuh): where update() is fused, for
  /// up to small_forward_max_rows rows.
  bool fused_forward(int rows) const { return fused_forward_ && rows > 0 && rows <= Paths::forward_max_rows; }

  /// Performance probe of the fused update (CUDA; perf/bench_pipeline.cpp
  /// --fused-phases): every fused update then records each block's clock at
  /// its phase boundaries into stamps[step % updates, block, :]
  /// (views/agents/dqn/fused_update_stamps.hpp), `step` being the Adam step
  /// counter.
  /// Set it before the first update (a captured graph keeps what it was
  /// captured with); an empty View turns it off. The extra block barriers
  /// it adds make the fused update a little slower.
  void set_fused_update_probe(const FusedUpdateStamps<memory_space>& stamps) {
    if (stamps.extent(0) > 0 &&
        (stamps.extent(1) != std::size_t(fused_blocks_) || stamps.extent(2) != std::size_t(fused_update_stamp_count)))
      throw LogicError("foxrl::DqnLearner::set_fused_update_probe: stamps must be [updates, " +
                       std::to_string(fused_blocks_) + ", " + std::to_string(fused_update_stamp_count) + "]");
    fused_probe_ = stamps;
  }
  /// Blocks of the fused update of a full batch (0 when it does not run fused).
  int fused_update_blocks() const { return fused_update_ ? fused_blocks_ : 0; }
  /// Threads per block of the fused update and forward (0 when not fused).
  int fused_update_threads() const { return fused_update_ ? config_.fused_threads : 0; }

  /// Graph replays of update() so far (0 off CUDA or with graphs off).
  std::int64_t graph_replays() const { return graphs_->replays(); }

  /// Whether the networks' products run with fused gemm epilogues
  /// (DenseOps::fused_epilogues: on by default on CUDA, the kernel path gemm_epilogues off
  /// turns them off).
  bool fused_gemm_epilogues() const { return ops_->fused_epilogues(); }

  /// Sets (or, with an empty function, clears) the hook update() calls
  /// between the two halves.
  void set_gradient_hook(GradientHook hook) { hook_ = std::move(hook); }

  /// The first half of update(): forward, loss (metrics, td errors) and
  /// backward into gradients(); also counts the Adam step. Returns the
  /// gradients and metrics, or (doing nothing) an empty DqnGradients for an
  /// empty batch. Every non-empty result must be followed by
  /// apply_gradients(); in between, gradients and metrics may be read or
  /// changed on the instance (an all-reduce over data-parallel replicas;
  /// fault-injection tests plant non-finite gradients there).
  DqnGradients<memory_space> compute_gradients(const ExecSpace& space, const Batch<memory_space>& batch) {
    check_batch(batch);
    if (batch.size() == 0) return {};
    check_no_pending("compute_gradients");
    launch_gradients(space, batch);
    gradients_pending_ = true;
    return {grads_, metrics_};
  }

  /// The second half of update(): gradient norm (scanning the online
  /// weights for non-finite values) with the guard's decision, then clip +
  /// Adam and the target update, or the guard's skip or restore (one launch
  /// for each half, or on CUDA one fused launch for both). A hard target
  /// copy is the Polyak update with tau 1 fused into the Adam pass, so it
  /// happens only with an applied step: a rejected update changes no
  /// weight, the target's included, and a non-finite online network never
  /// reaches the target.
  void apply_gradients(const ExecSpace& space) {
    if (!gradients_pending_)
      throw LogicError("foxrl::DqnLearner::apply_gradients: no gradients (call compute_gradients first)");
    gradients_pending_ = false;
    launch_apply(space, next_target_tau());
    ++updates_;
  }

 private:
  void check_batch(const Batch<memory_space>& batch) const {
    const int B = batch.size();
    check_rows("update", B, config_.max_batch);
    if (batch.obs_dim() != layout_.obs_dim || batch.next_states.extent(0) != std::size_t(B) ||
        batch.next_states.extent(1) != std::size_t(layout_.obs_dim) || batch.actions.extent(0) != std::size_t(B) ||
        batch.rewards.extent(0) != std::size_t(B) || batch.discounts.extent(0) != std::size_t(B) ||
        batch.is_weights.extent(0) != std::size_t(B))
      throw LogicError("foxrl::DqnLearner::update: batch fields must all have " + std::to_string(B) +
                       " rows and states obs_dim " + std::to_string(layout_.obs_dim));
  }

  void check_no_pending(const char* what) const {
    if (gradients_pending_)
      throw LogicError(std::string("foxrl::DqnLearner::") + what + ": the previous gradients were never applied");
  }

  /// The target update of the next applied step: Polyak tau, 1 for a due
  /// hard copy, 0 for none.
  float next_target_tau() const { return target_tau_ahead(0); }

  static std::uint32_t tau_bits(float tau) {
    std::uint32_t bits = 0;
    std::memcpy(&bits, &tau, sizeof bits);
    return bits;
  }

  /// compute_gradients' launches (no host state changes: update() may
  /// replay them as a graph).
  void launch_gradients(const ExecSpace& space, const Batch<memory_space>& batch) {
    const int B = batch.size();
    const bool blas = config_.dense_backend == DenseBackend::blas;
    const int L = layout_.num_layers;

    // Online network at s and s' in one pass over stacked rows [s; s'], the
    // target network at s' (with the online one's layers where the ops
    // allow: Mlp::forward_with_target); then the loss.
    const auto target_flat = target_.params().flat;

    kernels::DqnLossArgs<memory_space> args;
    args.online_s = matrix_rows(online_net_.output(), 0, B);
    args.online_next = matrix_rows(online_net_.output(), B, 2 * B);
    args.target_next = matrix_rows(target_net_.output(), 0, B);
    args.actions = batch.actions;
    args.rewards = batch.rewards;
    args.discounts = batch.discounts;
    args.is_weights = batch.is_weights;
    args.loss = config_.loss;
    args.d_head = matrix_rows(d_head_, 0, B);
    args.td_errors = td_errors_;
    args.metrics = metrics_;
    args.adam_step = adam_.step();
    // blas: the loss kernel forms the head's bias gradient with its means
    // (the portable backward forms it with the head's dW).
    if (blas) args.head_bias_grad = layer_bias(grads_, layout_, L - 1);
    args.scratch = reduce_;
    online_net_.forward_with_target(space, online_.flat, target_net_, target_flat, batch.states, batch.next_states);
    kernels::dqn_loss(space, args);

    online_net_.backward(space, online_.flat, batch.states, ConstMatrix<memory_space>(args.d_head), grads_,
                         blas ? HeadBiasGrad::given : HeadBiasGrad::compute);
  }

  /// Decides whether update() runs fused and allocates what that needs.
  void plan_fused_update(const ExecSpace& space) {
    if (!Paths::available || !config_.fused_update || !kernel_path_on(KernelPath::fused_cuda) ||
        config_.dense_backend != DenseBackend::blas || config_.matmul_precision != MatmulPrecision::fp32)
      return;
    using Finish = decltype(guard_.decision(metrics_));
    using Step = decltype(adam_step(0.0f));
    fused_unfit_ = Paths::template update_unfit<Finish, Step>(layout_, config_.max_batch, config_.fused_threads);
    if (!fused_unfit_.empty()) return;
    fused_blocks_ = Paths::update_blocks(layout_, config_.max_batch, config_.fused_threads);
    // Zero-initialised: the kernel never writes the layout's padding of a
    // partial, and sums the whole flat buffer.
    fused_grad_partials_ = vector(Kokkos::view_alloc(space, "foxrl::DqnLearner::fused_grad_partials"),
                                  std::size_t(fused_blocks_) * layout_.total);
    fused_sums_ = vector(Kokkos::view_alloc(space, Kokkos::WithoutInitializing, "foxrl::DqnLearner::fused_sums"),
                         Paths::update_sum_floats(fused_blocks_));
    fused_update_ = true;
    fused_forward_ = Paths::forward_fits(layout_);
  }

  /// The optimizer step's per-element work with target update `tau`.
  auto adam_step(float tau) const {
    return kernels::make_adam_step<ExecSpace>(adam_.hyper(), online_.flat, grads_, adam_.m(), adam_.v(), adam_.step(),
                                              metrics_, target_.fused(tau), guard_.step(td_errors_));
  }

  /// update()'s one launch (fused_update(); no host state changes).
  void launch_fused_update(const ExecSpace& space, const Batch<memory_space>& batch, float tau) {
    kernels::SmallUpdateBuffers<memory_space> b;
    b.online = online_.flat.data();
    b.target = target_.params().flat.data();
    b.grads = grads_.data();
    b.grad_partials = fused_grad_partials_.data();
    b.loss = config_.loss;
    b.td_errors = td_errors_.data();
    b.metrics = metrics_.data();
    b.sums = fused_sums_.data();
    b.adam_step = adam_.step().data();
    b.probe = fused_probe_;
    Paths::update(space, layout_, config_.fused_threads, fused_blocks_, batch, b, guard_.decision(metrics_),
                  adam_step(tau));
  }

  /// apply_gradients' launches with target update `tau` (no host state
  /// changes: update() may replay them as a graph).
  void launch_apply(const ExecSpace& space, float tau) {
    adam_.step_with_norm(space, online_.flat, grads_, metrics_, guard_.decision(metrics_), reduce_, true,
                         target_.fused(tau), guard_.step(td_errors_));
  }

 public:
  /// Q-values [R, A] of the online network for `states` [R, obs_dim].
  void q_values(const ExecSpace& space, const ConstMatrix<memory_space>& states,
                const MutableMatrix<memory_space>& q_out) {
    const int R = infer(space, states, "q_values");
    if (q_out.extent(0) != std::size_t(R) || q_out.extent(1) != std::size_t(layout_.num_actions))
      throw LogicError("foxrl::DqnLearner::q_values: q_out must be [" + std::to_string(R) + ", " +
                       std::to_string(layout_.num_actions) + "]");
    kernels::dueling_q_values(space, matrix_rows(online_net_.output(), 0, R), q_out,
                              Kokkos::View<std::int32_t*, memory_space>());
  }

  /// argmax_a Q_online(states, a) per row (lowest index on ties).
  void greedy_actions(const ExecSpace& space, const ConstMatrix<memory_space>& states,
                      const Kokkos::View<std::int32_t*, memory_space>& actions_out) {
    if (actions_out.extent(0) != states.extent(0))
      throw LogicError("foxrl::DqnLearner::greedy_actions: actions_out must have " + std::to_string(states.extent(0)) +
                       " rows");
    const int R = infer(space, states, "greedy_actions", actions_out.data());
    if (!fused_forward(R) && !online_net_.fuses_greedy())
      kernels::dueling_q_values(space, matrix_rows(online_net_.output(), 0, R), MutableMatrix<memory_space>(),
                                actions_out);
  }

  /// greedy_actions(), then `per_env(i)` for every row i of `states` (a
  /// device-callable functor, e.g. the env's choosing step, reading the
  /// greedy actions) inside the same launch: where the fused forward takes
  /// all rows in one block (CUDA; the kernel path fused_env_step off turns it off),
  /// or else where the head kernel forms the greedy actions (the blas
  /// backend's dueling head, every backend; the kernel path env_step_in_head off turns
  /// it off), on the thread that stored row i's action.
  /// Returns whether it ran `per_env`; if not, the caller runs it.
  /// kernels::NoPerEnvStep as `per_env`: only the greedy actions.
  template <class PerEnv>
  bool greedy_actions_then(const ExecSpace& space, const ConstMatrix<memory_space>& states,
                           const Kokkos::View<std::int32_t*, memory_space>& actions_out, const PerEnv& per_env) {
    const int rows = static_cast<int>(states.extent(0));
    if (!fuses_env_step(rows) || std::is_same_v<PerEnv, kernels::NoPerEnvStep> ||
        actions_out.extent(0) != states.extent(0)) {
      greedy_actions(space, states, actions_out);
      return false;
    }
    if constexpr (!std::is_same_v<PerEnv, kernels::NoPerEnvStep>) {
      check_states(states, "greedy_actions_then");
      if (fused_forward(rows))
        launch_fused_forward(space, states, actions_out.data(), per_env);
      else
        online_net_.forward(space, online_.flat, states, {}, actions_out.data(), per_env);
    }
    return true;
  }

  /// Whether greedy_actions_then() runs its per-env functor inside the
  /// forward's launch for `rows` rows.
  bool fuses_env_step(int rows) const {
    if (fused_forward(rows)) return fuse_env_step_ && Paths::forward_one_block(rows);
    return env_step_in_head_ && rows > 0 && online_net_.fuses_greedy();
  }

  /// Turns the env step inside the head kernel's launch on or off (on
  /// unless the kernel path env_step_in_head off), where the fused forward does not
  /// take the rows.
  void set_env_step_in_head(bool on) { env_step_in_head_ = on; }
  /// Turns the env step inside the forward's launch on or off (on where
  /// the fused forward runs, unless the kernel path fused_env_step off).
  void set_fused_env_step(bool on) { fuse_env_step_ = on; }

  /// target = online, element by element where online is finite (update()
  /// makes its own hard copies, inside the optimizer launch).
  void hard_target_update(const ExecSpace& space) { target_.hard_update(space, online_.flat); }

  /// Queues a snapshot of the current state as the guard's restore point;
  /// taken on the device only if the last update was applied (see
  /// TrainingGuard::snapshot).
  void snapshot(const ExecSpace& space) { guard_.snapshot(space); }

  /// target = tau online + (1 - tau) target.
  void soft_target_update(const ExecSpace& space, float tau) { target_.soft_update(space, online_.flat, tau); }

  /// |Q(s, a) - y| of the last update's rows (the first batch.size()
  /// entries); NaN in every row when the guard rejected the update.
  const vector& td_errors() const { return td_errors_; }
  /// LearnerMetrics slots of the last update.
  const vector& metrics() const { return metrics_; }
  /// Head outputs [rows, 1 + A] of the last online forward (rows [0, B) = s,
  /// [B, 2B) = s' after update(); [0, R) after an inference call).
  const matrix& online_head() const { return online_net_.output(); }
  /// Shared handles to every buffer (online, target, gradients, Adam state).
  DqnWeights<memory_space> weights() const {
    return {layout_, online_.flat, target_.params().flat, grads_, adam_.m(), adam_.v(), adam_.step()};
  }
  const ParameterSet<memory_space>& online() const { return online_; }
  const TargetNetwork<ExecSpace>& target() const { return target_; }
  /// The networks the update runs the online and target parameters through
  /// (their activations; Mlp::pairs_with says whether an update pairs).
  const Mlp<ExecSpace>& online_network() const { return online_net_; }
  const Mlp<ExecSpace>& target_network() const { return target_net_; }
  /// The flat gradient View compute_gradients() fills.
  const FlatParams<memory_space>& gradients() const { return grads_; }
  const AdamOptimizer<ExecSpace>& optimizer() const { return adam_; }
  const NetworkLayout& layout() const { return layout_; }
  /// The most rows one q_values() or greedy_actions() call takes.
  int max_inference_rows() const { return static_cast<int>(online_net_.output().extent(0)); }
  const DqnLearnerConfig& config() const { return config_; }
  const TrainingGuard<ExecSpace>& guard() const { return guard_; }
  /// update() calls so far, rejected ones included (host counter; drives
  /// hard target copies).
  std::int64_t updates() const { return updates_; }

  /// Writes online, target, Adam moments and both step counters to `path`
  /// (safetensors, atomic; dqn_checkpoint.hpp), with `stamp` (e.g. the run
  /// identity) added to its metadata. Fences `space` (not for the hot
  /// path).
  void save(const ExecSpace& space, const std::string& path,
            const std::map<std::string, std::string>& stamp = {}) const {
    ParameterFileWriter<ExecSpace> file;
    file.add(space, dqn_online_prefix, online_);
    file.add(space, dqn_target_prefix, target_.params());
    file.add(space, dqn_adam_names(), layout_, adam_);
    file.add_counter(dqn_updates_name, updates_);
    file.metadata() = dqn_checkpoint_metadata(layout_, config_.loss == LossKind::huber ? "huber" : "mse");
    for (const auto& [key, value] : stamp) file.metadata()[key] = value;
    file.write(space, path);
  }

  /// Replaces online, target, Adam moments and counters with the contents
  /// of `path` and returns the file's metadata. The file is validated
  /// completely first (checksums; weights and moments finite); on any
  /// error (foxrl::UsageError naming the file, tensor and problem) nothing
  /// changes.
  std::map<std::string, std::string> load(const ExecSpace& space, const std::string& path) {
    ParameterFileReader<ExecSpace> file(path, layout_.describe());
    std::map<std::string, std::string> metadata = file.tensors().file().metadata;
    // Another learner's or a newer foxrl's checkpoint, or one of another
    // architecture, is refused before a tensor is read (files written
    // before checkpoints named their format are read as they are).
    check_dqn_checkpoint_metadata(path, metadata, layout_);
    file.take(dqn_online_prefix, online_);
    file.take(dqn_target_prefix, target_.params());
    file.take(dqn_adam_names(), layout_, adam_);
    const std::int64_t updates = file.counter(dqn_updates_name);
    file.commit(space);
    // The loaded state is the guard's new restore point.
    guard_.snapshot(space, true);
    updates_ = updates;
    return metadata;
  }

 private:
  static void check_rows(const char* what, int r, int max) {
    if (r < 0 || r > max)
      throw LogicError(std::string("foxrl::DqnLearner::") + what + ": " + std::to_string(r) +
                       " rows, more than the configured maximum " + std::to_string(max));
  }

  /// The rows of inference `states` [R, obs_dim]; throws naming `what`
  /// when R exceeds the inference rows or the columns are not obs_dim.
  int check_states(const ConstMatrix<memory_space>& states, const char* what) const {
    const int R = static_cast<int>(states.extent(0));
    check_rows(what, R, static_cast<int>(online_net_.output().extent(0)));
    if (states.extent(1) != std::size_t(layout_.obs_dim))
      throw LogicError(std::string("foxrl::DqnLearner::") + what + ": states have " + std::to_string(states.extent(1)) +
                       " columns, obs_dim is " + std::to_string(layout_.obs_dim));
    return R;
  }

  /// Online forward for inference; `greedy` receives the greedy actions
  /// when the head kernel forms them.
  int infer(const ExecSpace& space, const ConstMatrix<memory_space>& states, const char* what,
            std::int32_t* greedy = nullptr) {
    const int R = check_states(states, what);
    if (fused_forward(R)) {
      launch_fused_forward(space, states, greedy);
      return R;
    }
    online_net_.forward(space, online_.flat, states, {}, greedy);
    return R;
  }

  template <class After = kernels::NoPerEnvStep>
  void launch_fused_forward(const ExecSpace& space, const ConstMatrix<memory_space>& states, std::int32_t* greedy,
                            const After& after = After()) {
    const auto& head = online_net_.output();
    Paths::forward(space, layout_, config_.fused_threads, online_.flat.data(), states, head.data(),
                   static_cast<int>(head.stride(0)), greedy, after);
  }

  DqnLearnerConfig config_;
  NetworkLayout layout_;
  std::shared_ptr<DenseOps<ExecSpace>> ops_;
  kernels::ReduceScratch<memory_space> reduce_;
  ParameterSet<memory_space> online_;
  TargetNetwork<ExecSpace> target_;
  FlatParams<memory_space> grads_;
  AdamOptimizer<ExecSpace> adam_;
  Mlp<ExecSpace> online_net_, target_net_;
  matrix d_head_;
  vector td_errors_, metrics_;
  TrainingGuard<ExecSpace> guard_;
  std::unique_ptr<StreamGraphs<ExecSpace>> graphs_;
  GradientHook hook_;
  std::int64_t updates_ = 0;
  bool gradients_pending_ = false;
  bool fused_update_ = false;
  bool fused_forward_ = false;  ///< inference of up to small_forward_max_rows rows in one launch
  bool fuse_env_step_ = kernel_path_on(KernelPath::fused_env_step);       ///< greedy_actions_then's per-env work in it
  bool env_step_in_head_ = kernel_path_on(KernelPath::env_step_in_head);  ///< ... or in the head kernel's launch
  int fused_blocks_ = 0;  ///< the most blocks a fused update of up to max_batch rows takes
  std::string fused_unfit_;
  vector fused_grad_partials_, fused_sums_;      ///< the fused update's partial gradients and block sums
  FusedUpdateStamps<memory_space> fused_probe_;  ///< set_fused_update_probe's stamps (usually empty)
};

}  // namespace foxrl
