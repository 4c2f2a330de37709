#pragma once
// DqnLearner: the Q-network learner of the training step. Owns the online
// and target networks, gradients, Adam state and all scratch, and runs one
// gradient step per update() on the run's instance: online forward at s and
// s', target forward at s', double-DQN n-step target + importance-weighted
// loss + dL/dhead (one launch), backward, gradient norm (reduced on the
// device, with the training guard's decision in the same launch), clip +
// Adam (+ Polyak or hard target copy, or the guard's skip or restore) in one
// launch; hard target copies follow a host-side update counter. No host
// sync and no allocation inside update(). docs/design.md lists the launches
// of both dense backends.

#include "kernels/nn/adam.hpp"
#include "views/replay/batch.hpp"
#include "core/compat.hpp"
#include "kernels/nn/dense.hpp"
#include "agents/dqn/dqn_checkpoint.hpp"
#include "kernels/agents/dqn/dqn_loss.hpp"
#include "core/error.hpp"
#include "views/agents/dqn/learner_metrics.hpp"
#include "views/nn/network_layout.hpp"
#include "kernels/core/reduce_scratch.hpp"
#include "nn/row_major_gemm.hpp"
#include "nn/training_guard.hpp"
#include "kernels/nn/weight_init.hpp"
#include "views/nn/weights.hpp"

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace foxrl {

/// Hyperparameters of a DqnLearner. gamma is not here: Batch::discounts
/// already holds gamma^n (1 - terminated).
struct DqnLearnerConfig {
  int obs_dim = 0;
  std::vector<int> hidden = {512, 512};
  int num_actions = 0;
  int max_batch = 1024;            ///< largest Batch::size() update() accepts
  int max_inference_batch = 0;     ///< largest row count of q_values()/greedy_actions(); 0: max_batch
  float lr = 2.5e-4f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 0.0f;
  WeightDecayMode weight_decay_mode = WeightDecayMode::decoupled;
  float max_grad_norm = 0.0f;      ///< <= 0: no clipping
  int target_update_every = 500;   ///< hard copy after every K-th update (when polyak_tau <= 0)
  float polyak_tau = 0.0f;         ///< > 0: target = tau online + (1 - tau) target after every update
  LossKind loss = LossKind::huber;
  std::uint64_t seed = 0;
  InitScheme init = InitScheme::torch_default;
  DenseBackend dense_backend = DenseBackend::blas;
  GuardConfig guard;

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
    guard.validate();
    (void)NetworkLayout(obs_dim, hidden, num_actions);  // checks the shapes
  }
};

/// Double-DQN learner with a dueling MLP Q-network; see the file comment.
template <class ExecSpace>
class DqnLearner {
 public:
  using execution_space = ExecSpace;
  using memory_space = typename ExecSpace::memory_space;
  using matrix = Kokkos::View<float**, Kokkos::LayoutRight, memory_space>;
  using vector = Kokkos::View<float*, memory_space>;

  /// Allocates everything and initialises online (= target) weights from
  /// config.seed; work is queued on `space`.
  DqnLearner(const ExecSpace& space, const DqnLearnerConfig& config) : config_(config) {
    config_.validate();
    layout_ = NetworkLayout(config_.obs_dim, config_.hidden, config_.num_actions);
    weights_ = Weights<memory_space>(space, layout_);
    const int rows = std::max(2 * config_.max_batch, config_.max_inference_batch);
    const int hidden = layout_.num_hidden();
    for (int l = 0; l < hidden; ++l) {
      const int width = layout_.layers[l].out;
      online_act_.push_back(alloc_matrix(space, "foxrl::DqnLearner::online_act" + std::to_string(l), rows, width));
      target_act_.push_back(
          alloc_matrix(space, "foxrl::DqnLearner::target_act" + std::to_string(l), config_.max_batch, width));
    }
    online_head_ = alloc_matrix(space, "foxrl::DqnLearner::online_head", rows, layout_.head_outputs());
    target_head_ = alloc_matrix(space, "foxrl::DqnLearner::target_head", config_.max_batch, layout_.head_outputs());
    d_head_ = alloc_matrix(space, "foxrl::DqnLearner::d_head", config_.max_batch, layout_.head_outputs());
    int max_hidden = 1;
    for (int l = 0; l < hidden; ++l) max_hidden = std::max(max_hidden, layout_.layers[l].out);
    for (auto& g : d_act_)
      g = vector(Kokkos::view_alloc(space, Kokkos::WithoutInitializing, "foxrl::DqnLearner::d_act"),
                 std::size_t(config_.max_batch) * std::size_t(max_hidden));
    if (config_.dense_backend == DenseBackend::blas) gemm_ = std::make_shared<RowMajorGemm<ExecSpace>>(space);
    {
      // One scratch for every single-launch reduction of update() (they run
      // one after the other on the instance).
      const int B = config_.max_batch;
      const auto relu = kernels::relu_backward_scratch<ExecSpace>(B, layout_.max_width(), 1 + layout_.head_outputs());
      const auto loss = kernels::dqn_loss_scratch<ExecSpace>(B, layout_.head_outputs());
      const std::size_t norm = kernels::gradient_norm_scratch<ExecSpace>(layout_.total, true);
      reduce_ = kernels::ReduceScratch<memory_space>(space, "foxrl::DqnLearner::reduce",
                                                     std::max({relu.floats, loss.floats, norm}),
                                                     std::max<std::size_t>(relu.tickets, 1));
    }
    td_errors_ = vector(Kokkos::view_alloc(space, "foxrl::DqnLearner::td_errors"), config_.max_batch);
    metrics_ = vector(Kokkos::view_alloc(space, "foxrl::DqnLearner::metrics"), LearnerMetrics::count);
    kernels::init_weights(space, weights_.online, layout_, config_.seed, config_.init);
    Kokkos::deep_copy(space, weights_.target, weights_.online);
    guard_ = TrainingGuard<ExecSpace>(space, layout_, config_.guard);
    guard_.snapshot(space, weights_, true);
  }

  /// One gradient step on `batch` (size <= max_batch), all on `space`:
  /// compute_gradients then apply_gradients.
  void update(const ExecSpace& space, const Batch<memory_space>& batch) {
    if (compute_gradients(space, batch)) apply_gradients(space);
  }

  /// The first half of update(): forward, loss (metrics, td errors) and
  /// backward into weights().grads; also counts the Adam step. Returns false
  /// (and does nothing) for an empty batch. Every call that returns true
  /// must be followed by apply_gradients(); the halves are separate so that
  /// gradients can be inspected or altered in between (fault-injection
  /// tests plant non-finite gradients there).
  bool compute_gradients(const ExecSpace& space, const Batch<memory_space>& batch) {
    const int B = batch.size();
    check_rows("update", B, config_.max_batch);
    if (batch.obs_dim() != layout_.obs_dim || batch.next_states.extent(0) != std::size_t(B) ||
        batch.next_states.extent(1) != std::size_t(layout_.obs_dim) || batch.actions.extent(0) != std::size_t(B) ||
        batch.rewards.extent(0) != std::size_t(B) || batch.discounts.extent(0) != std::size_t(B) ||
        batch.is_weights.extent(0) != std::size_t(B))
      throw UsageError("foxrl::DqnLearner::update: batch fields must all have " + std::to_string(B) +
                       " rows and states obs_dim " + std::to_string(layout_.obs_dim));
    if (B == 0) return false;
    if (gradients_pending_)
      throw UsageError("foxrl::DqnLearner::compute_gradients: the previous gradients were never applied");
    const auto backend = config_.dense_backend;
    const int L = layout_.num_layers;

    // Online network at s and s' in one pass over stacked rows [s; s'].
    forward(space, weights_.online, online_act_, online_head_, batch.states, batch.next_states, 2 * B);
    forward(space, weights_.target, target_act_, target_head_, batch.next_states, ConstMatrix<memory_space>(), B);

    kernels::DqnLossArgs<memory_space> args;
    args.online_s = rows(online_head_, 0, B);
    args.online_next = rows(online_head_, B, 2 * B);
    args.target_next = rows(target_head_, 0, B);
    args.actions = batch.actions;
    args.rewards = batch.rewards;
    args.discounts = batch.discounts;
    args.is_weights = batch.is_weights;
    args.loss = config_.loss;
    args.d_head = rows(d_head_, 0, B);
    args.td_errors = td_errors_;
    args.metrics = metrics_;
    args.adam_step = weights_.adam_step;
    if (backend == DenseBackend::blas) args.head_bias_grad = weights_.bias(weights_.grads, L - 1);
    args.scratch = reduce_;
    kernels::dqn_loss(space, args);

    if (backend == DenseBackend::blas) backward_blas(space, batch);
    else backward_portable(space, batch);
    gradients_pending_ = true;
    return true;
  }

  /// The second half of update(): gradient norm (scanning the online
  /// weights for non-finite values) with the guard's decision, then one
  /// launch that applies clip + Adam and the target update, or the guard's
  /// skip or restore. A hard target copy is the Polyak update with tau 1
  /// fused into that launch, so it happens only with an applied step: a
  /// rejected update changes no weight, the target's included, and a
  /// non-finite online network never reaches the target.
  void apply_gradients(const ExecSpace& space) {
    if (!gradients_pending_)
      throw UsageError("foxrl::DqnLearner::apply_gradients: no gradients (call compute_gradients first)");
    gradients_pending_ = false;
    kernels::gradient_sq_norm_then(space, weights_.grads, weights_.online,
                                   guard_.decision(metrics_, weights_.adam_step), reduce_);
    const bool polyak = config_.polyak_tau > 0.0f;
    const bool hard_copy = !polyak && (updates_ + 1) % config_.target_update_every == 0;
    kernels::adam_update(space, config_.adam(), weights_.online, weights_.grads, weights_.adam_m, weights_.adam_v,
                         weights_.adam_step, metrics_, weights_.target,
                         polyak ? config_.polyak_tau : (hard_copy ? 1.0f : 0.0f), guard_.step(td_errors_));
    ++updates_;
  }

  /// Q-values [R, A] of the online network for `states` [R, obs_dim].
  void q_values(const ExecSpace& space, const ConstMatrix<memory_space>& states,
                const MutableMatrix<memory_space>& q_out) {
    const int R = infer_trunk(space, states, "q_values");
    if (q_out.extent(0) != std::size_t(R) || q_out.extent(1) != std::size_t(layout_.num_actions))
      throw UsageError("foxrl::DqnLearner::q_values: q_out must be [" + std::to_string(R) + ", " +
                       std::to_string(layout_.num_actions) + "]");
    kernels::dueling_q_values(space, rows(online_head_, 0, R), q_out, Kokkos::View<std::int32_t*, memory_space>());
  }

  /// argmax_a Q_online(states, a) per row (lowest index on ties).
  void greedy_actions(const ExecSpace& space, const ConstMatrix<memory_space>& states,
                      const Kokkos::View<std::int32_t*, memory_space>& actions_out) {
    if (actions_out.extent(0) != states.extent(0))
      throw UsageError("foxrl::DqnLearner::greedy_actions: actions_out must have " +
                       std::to_string(states.extent(0)) + " rows");
    const int R = infer_trunk(space, states, "greedy_actions", actions_out.data());
    if (!fused_greedy()) kernels::dueling_q_values(space, rows(online_head_, 0, R), MutableMatrix<memory_space>(), actions_out);
  }

  /// target = online, element by element where online is finite (update()
  /// makes its own hard copies, inside the optimizer launch).
  void hard_target_update(const ExecSpace& space) { kernels::finite_copy(space, weights_.online, weights_.target); }

  /// Queues a snapshot of the current state as the guard's restore point;
  /// taken on the device only if the last update was applied (see
  /// TrainingGuard::snapshot).
  void snapshot(const ExecSpace& space) { guard_.snapshot(space, weights_); }

  /// target = tau online + (1 - tau) target.
  void soft_target_update(const ExecSpace& space, float tau) {
    kernels::polyak_update(space, weights_.online, weights_.target, tau);
  }

  /// |Q(s, a) - y| of the last update's rows (the first batch.size()
  /// entries); NaN in every row when the guard rejected the update.
  const vector& td_errors() const { return td_errors_; }
  /// LearnerMetrics slots of the last update.
  const vector& metrics() const { return metrics_; }
  /// Head outputs [rows, 1 + A] of the last online forward (rows [0, B) = s,
  /// [B, 2B) = s' after update(); [0, R) after an inference call).
  const matrix& online_head() const { return online_head_; }
  Weights<memory_space>& weights() { return weights_; }
  const Weights<memory_space>& weights() const { return weights_; }
  const NetworkLayout& layout() const { return layout_; }
  const DqnLearnerConfig& config() const { return config_; }
  const TrainingGuard<ExecSpace>& guard() const { return guard_; }
  /// update() calls so far, rejected ones included (host counter; drives
  /// hard target copies).
  std::int64_t updates() const { return updates_; }

  /// Writes online, target, Adam moments and both step counters to `path`
  /// (safetensors, atomic). Fences `space` (not for the hot path).
  void save(const ExecSpace& space, const std::string& path) const {
    DqnCheckpointHost state;
    std::vector<float>* dst[4] = {&state.online, &state.target, &state.adam_m, &state.adam_v};
    const FlatParams<memory_space> src[4] = {weights_.online, weights_.target, weights_.adam_m, weights_.adam_v};
    using host_flat = Kokkos::View<float*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
    for (int b = 0; b < 4; ++b) {
      dst[b]->resize(layout_.total);
      Kokkos::deep_copy(space, host_flat(dst[b]->data(), layout_.total), src[b]);
    }
    Kokkos::View<std::int64_t, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> step(&state.adam_step);
    Kokkos::deep_copy(space, step, weights_.adam_step);
    compat::fence(space, "foxrl::DqnLearner::save");
    state.updates = updates_;
    save_dqn_checkpoint(path, layout_, state, {{"loss", config_.loss == LossKind::huber ? "huber" : "mse"}});
  }

  /// Replaces online, target, Adam moments and counters with the contents
  /// of `path`. The file is validated completely first; on any error
  /// (foxrl::Error naming the file, tensor and problem) nothing changes.
  void load(const ExecSpace& space, const std::string& path) {
    DqnCheckpointHost state = load_dqn_checkpoint(path, layout_);
    std::vector<float>* src[4] = {&state.online, &state.target, &state.adam_m, &state.adam_v};
    const FlatParams<memory_space> dst[4] = {weights_.online, weights_.target, weights_.adam_m, weights_.adam_v};
    using host_flat = Kokkos::View<const float*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
    for (int b = 0; b < 4; ++b) Kokkos::deep_copy(space, dst[b], host_flat(src[b]->data(), layout_.total));
    Kokkos::View<const std::int64_t, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> step(
        &state.adam_step);
    Kokkos::deep_copy(space, weights_.adam_step, step);
    // The loaded state is the guard's new restore point.
    guard_.snapshot(space, weights_, true);
    // The host buffers die with this scope.
    compat::fence(space, "foxrl::DqnLearner::load");
    updates_ = state.updates;
  }

 private:
  template <class View>
  static MutableMatrix<memory_space> rows(const View& m, int begin, int end) {
    return MutableMatrix<memory_space>(m.data() + std::size_t(begin) * m.extent(1), std::size_t(end - begin),
                                       m.extent(1));
  }

  static matrix alloc_matrix(const ExecSpace& space, const std::string& label, int r, int c) {
    return matrix(Kokkos::view_alloc(space, Kokkos::WithoutInitializing, label), r, c);
  }

  static void check_rows(const char* what, int r, int max) {
    if (r < 0 || r > max)
      throw UsageError(std::string("foxrl::DqnLearner::") + what + ": " + std::to_string(r) +
                       " rows, more than the configured maximum " + std::to_string(max));
  }

  /// Backward of the portable backend: per layer one dW (+ db) product and
  /// one dX product with the ReLU mask fused.
  void backward_portable(const ExecSpace& space, const Batch<memory_space>& batch) {
    const int B = batch.size();
    const int L = layout_.num_layers;
    const auto backend = config_.dense_backend;
    MutableMatrix<memory_space> dy = rows(d_head_, 0, B);
    int ping = 0;
    for (int l = L - 1; l >= 0; --l) {
      const ConstMatrix<memory_space> x =
          l == 0 ? ConstMatrix<memory_space>(batch.states) : ConstMatrix<memory_space>(rows(online_act_[l - 1], 0, B));
      kernels::dense_backward_weights(space, backend, ConstMatrix<memory_space>(dy), x,
                                      weights_.weight(weights_.grads, l), weights_.bias(weights_.grads, l));
      if (l == 0) break;
      MutableMatrix<memory_space> dx(d_act_[ping].data(), B, layout_.layers[l].in);
      kernels::dense_backward_input(space, backend, ConstMatrix<memory_space>(dy),
                                    ConstMatrix<memory_space>(weights_.weight(weights_.online, l)), x, dx);
      dy = dx;
      ping ^= 1;
    }
  }

  /// Backward of the blas backend (rows of s only). The head's bias gradient
  /// came with the loss; one fused kernel forms dX of the head (few outputs:
  /// no gemm), masks it, and reduces the last hidden layer's bias gradient
  /// and the head's weight gradient; every trunk layer then takes one gemm
  /// for dW and (but the first) one gemm for dX plus one mask + bias-gradient
  /// kernel.
  void backward_blas(const ExecSpace& space, const Batch<memory_space>& batch) {
    const int B = batch.size();
    const int L = layout_.num_layers;
    const auto& grads = weights_.grads;
    const ConstMatrix<memory_space> d_head = rows(d_head_, 0, B);
    if (L == 1) {
      (*gemm_)(space, true, false, d_head, batch.states, weights_.weight(grads, 0));
      return;
    }
    int ping = 0;
    {
      const int l = L - 1;
      const auto w = weights_.weight(weights_.online, l);
      const auto h = rows(online_act_[l - 1], 0, B);
      const auto dw = weights_.weight(grads, l);
      kernels::ReluBackwardArgs a;
      a.rows = B;
      a.cols = layout_.layers[l].in;
      a.dy_small = d_head.data();
      a.dy_ld = static_cast<std::ptrdiff_t>(d_head.stride(0));
      a.n_small = layout_.layers[l].out;
      a.w_small = w.data();
      a.w_ld = static_cast<std::ptrdiff_t>(w.stride(0));
      a.act = h.data();
      a.act_ld = static_cast<std::ptrdiff_t>(h.stride(0));
      a.dz = d_act_[ping].data();
      a.dz_ld = a.cols;
      a.db = weights_.bias(grads, l - 1).data();
      a.dw_small = dw.data();
      a.dw_ld = static_cast<std::ptrdiff_t>(dw.stride(0));
      kernels::relu_backward(space, a, reduce_);
    }
    for (int l = L - 2; l >= 0; --l) {
      const ConstMatrix<memory_space> dz(d_act_[ping].data(), B, layout_.layers[l].out);
      const ConstMatrix<memory_space> x =
          l == 0 ? ConstMatrix<memory_space>(batch.states) : ConstMatrix<memory_space>(rows(online_act_[l - 1], 0, B));
      (*gemm_)(space, true, false, dz, x, weights_.weight(grads, l));
      if (l == 0) break;
      const MutableMatrix<memory_space> dx(d_act_[ping ^ 1].data(), B, layout_.layers[l].in);
      (*gemm_)(space, false, false, dz, ConstMatrix<memory_space>(weights_.weight(weights_.online, l)), dx);
      kernels::ReluBackwardArgs a;
      a.rows = B;
      a.cols = layout_.layers[l].in;
      a.src = dx.data();
      a.src_ld = a.cols;
      a.act = x.data();
      a.act_ld = static_cast<std::ptrdiff_t>(x.stride(0));
      a.dz = dx.data();
      a.dz_ld = a.cols;
      a.db = weights_.bias(grads, l - 1).data();
      kernels::relu_backward(space, a, reduce_);
      ping ^= 1;
    }
  }

  /// Whether forward() forms the greedy actions itself (the blas backend's
  /// fused head kernel: a hidden layer and few enough head outputs for one
  /// pass of it).
  bool fused_greedy() const {
    return config_.dense_backend == DenseBackend::blas && layout_.num_layers >= 2 &&
           layout_.head_outputs() <= kernels::detail::small_dense_max_outputs;
  }

  /// Forward of a network (flat params) over `n` stacked rows [x1; x2];
  /// `greedy` (when fused_greedy()) receives each row's greedy action.
  void forward(const ExecSpace& space, const FlatParams<memory_space>& params, const std::vector<matrix>& act,
               const matrix& head, const ConstMatrix<memory_space>& x1, const ConstMatrix<memory_space>& x2, int n,
               std::int32_t* greedy = nullptr) {
    const int L = layout_.num_layers;
    for (int l = 0; l < L; ++l) {
      const bool is_head = l == L - 1;
      const auto out = is_head ? rows(head, 0, n) : rows(act[l], 0, n);
      const ConstMatrix<memory_space> in1 = l == 0 ? x1 : ConstMatrix<memory_space>(rows(act[l - 1], 0, n));
      const ConstMatrix<memory_space> in2 = l == 0 ? x2 : ConstMatrix<memory_space>();
      const ConstMatrix<memory_space> w = weights_.weight(params, l);
      const ConstVector<memory_space> b = weights_.bias(params, l);
      if (config_.dense_backend == DenseBackend::portable) {
        kernels::dense_forward(space, config_.dense_backend, in1, in2, w, b, !is_head, out);
        continue;
      }
      // blas: the stacked first layer as two products into the two row
      // ranges of its output (no copy of the inputs); the head (few
      // outputs) as one kernel instead of a split-K gemm + epilogue, fused
      // with the last hidden layer's bias + ReLU.
      const int n1 = static_cast<int>(in1.extent(0));
      const MutableMatrix<memory_space> out1 = rows(out, 0, n1), out2 = rows(out, n1, n);
      if (is_head) {
        kernels::small_dense_forward(space, in1, w, b, out1);
        if (n > n1) kernels::small_dense_forward(space, in2, w, b, out2);
        continue;
      }
      (*gemm_)(space, false, true, in1, w, out1);
      if (n > n1) (*gemm_)(space, false, true, in2, w, out2);
      if (l == L - 2) {
        // The last hidden layer's bias + ReLU and the head in one pass.
        kernels::bias_relu_small_dense_forward(space, out, b, ConstMatrix<memory_space>(weights_.weight(params, L - 1)),
                                               ConstVector<memory_space>(weights_.bias(params, L - 1)),
                                               rows(head, 0, n), fused_greedy() ? greedy : nullptr);
        return;
      }
      kernels::bias_activation(space, out, b, true);
    }
  }

  int infer_trunk(const ExecSpace& space, const ConstMatrix<memory_space>& states, const char* what,
                  std::int32_t* greedy = nullptr) {
    const int R = static_cast<int>(states.extent(0));
    check_rows(what, R, static_cast<int>(online_head_.extent(0)));
    if (states.extent(1) != std::size_t(layout_.obs_dim))
      throw UsageError(std::string("foxrl::DqnLearner::") + what + ": states have " +
                       std::to_string(states.extent(1)) + " columns, obs_dim is " + std::to_string(layout_.obs_dim));
    forward(space, weights_.online, online_act_, online_head_, states, ConstMatrix<memory_space>(), R, greedy);
    return R;
  }

  DqnLearnerConfig config_;
  NetworkLayout layout_;
  Weights<memory_space> weights_;
  std::vector<matrix> online_act_, target_act_;
  matrix online_head_, target_head_, d_head_;
  vector d_act_[2];
  vector td_errors_, metrics_;
  std::shared_ptr<RowMajorGemm<ExecSpace>> gemm_;  ///< blas backend only
  kernels::ReduceScratch<memory_space> reduce_;
  TrainingGuard<ExecSpace> guard_;
  std::int64_t updates_ = 0;
  bool gradients_pending_ = false;
};

}  // namespace foxrl
