#pragma once
// Mlp: forward and backward of an MLP (NetworkLayout: Linear + ReLU per
// hidden layer, then a plain or dueling head) over flat parameter Views,
// with the activation scratch for a maximum row count, so that neither
// allocates. Parameters, gradients and the loss stay the caller's: one Mlp
// object can run any parameter buffer of its layout (a learner runs its
// online and target parameters through two objects, each keeping the
// activations its backward or loss needs).
//
// blas backend: every hidden layer is one RowMajorGemm per input block plus
// bias_activation; the last hidden layer's bias + ReLU, the head and (for a
// dueling head that fits one pass) the greedy action form one kernel
// (bias_relu_small_dense_forward). Backward: one fused kernel for the head
// (dX of the head without a gemm, ReLU mask, the last hidden layer's bias
// gradient, the head's weight gradient), then per trunk layer a gemm for dW
// and (but the first) a gemm for dX plus one mask + bias-gradient kernel.
// With DenseOps' fused epilogues, the trunk's forward products add bias +
// ReLU themselves; with its epilogue masks too, a network built for
// backward keeps each of their ReLU bitmasks, so the backward's dX product
// applies the mask and forms the bias gradient in its epilogue.
// portable backend: one tiled launch per product (DenseOps).
// docs/design.md lists the launches.

#include "core/error.hpp"
#include "core/kernel_paths.hpp"
#include "kernels/core/reduce_scratch.hpp"
#include "kernels/nn/bias_activation.hpp"
#include "kernels/nn/relu_backward.hpp"
#include "kernels/nn/small_dense.hpp"
#include "kernels/nn/small_dense_pair.hpp"
#include "nn/dense_ops.hpp"
#include "views/nn/matrix.hpp"
#include "views/nn/parameter_set.hpp"

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace foxrl {

/// Who forms the head's bias gradient in Mlp::backward.
enum class HeadBiasGrad {
  compute,  ///< backward does (the column sums of dL/d out)
  given,    ///< the caller's loss kernel already wrote it into the gradient buffer (blas backend; saves a launch)
};

/// Forward and backward of one MLP layout; see the file comment.
template <class ExecSpace>
// NOLINTNEXTLINE(bugprone-reserved-identifier): clang names the index of its implicit array-member copy __i0
class Mlp {
 public:
  using execution_space = ExecSpace;
  using memory_space = typename ExecSpace::memory_space;
  using matrix = Kokkos::View<float**, Kokkos::LayoutRight, memory_space>;
  using flat = FlatParams<memory_space>;

  Mlp() = default;

  /// Scratch for forwards of up to `max_rows` rows and backwards of up to
  /// `max_backward_rows` rows (0: forward only). `ops` runs the products
  /// (shared between the networks of a learner: one cuBLAS handle);
  /// `scratch` serves backward's single-launch reductions (sized by
  /// scratch_need; an empty one makes them one team per column tile).
  Mlp(const ExecSpace& space, const NetworkLayout& layout, int max_rows, int max_backward_rows,
      std::shared_ptr<DenseOps<ExecSpace>> ops, const kernels::ReduceScratch<memory_space>& scratch,
      const std::string& label)
      : Mlp(space, layout, max_rows, max_backward_rows, std::move(ops), scratch, label, Activations()) {}

  /// A learner's online and target networks (same layout and ops; max_rows
  /// and max_backward_rows per network) whose hidden activations share one
  /// allocation, the first network's below the second's: with their
  /// parameters in one allocation too (alloc_flat_pair), the update's paired
  /// products (forward_with_target) always find the two networks' operands
  /// a fixed distance apart in the same order, instead of wherever the
  /// allocator put buffers of their own.
  static std::pair<Mlp, Mlp> pair(const ExecSpace& space, const NetworkLayout& layout, int first_max_rows,
                                  int first_max_backward_rows, int second_max_rows, int second_max_backward_rows,
                                  const std::shared_ptr<DenseOps<ExecSpace>>& ops,
                                  const kernels::ReduceScratch<memory_space>& scratch, const std::string& first_label,
                                  const std::string& second_label) {
    check_rows(first_label, first_max_rows, first_max_backward_rows);
    check_rows(second_label, second_max_rows, second_max_backward_rows);
    // Each network's section starts aligned as an allocation of its own would.
    std::size_t floats = 0;
    for (int l = 0; l < layout.num_hidden(); ++l)
      floats += allocation_aligned_floats(std::size_t(first_max_rows) * std::size_t(layout.layers[l].out)) +
                allocation_aligned_floats(std::size_t(second_max_rows) * std::size_t(layout.layers[l].out));
    Activations first, second;
    first.storage = second.storage = Kokkos::View<float*, memory_space>(
        Kokkos::view_alloc(space, Kokkos::WithoutInitializing, first_label + "+" + second_label + "::act"), floats);
    float* at = first.storage.data();
    for (int l = 0; l < layout.num_hidden(); ++l) {
      const int width = layout.layers[l].out;
      first.layers.push_back(matrix(at, first_max_rows, width));
      at += allocation_aligned_floats(std::size_t(first_max_rows) * std::size_t(width));
      second.layers.push_back(matrix(at, second_max_rows, width));
      at += allocation_aligned_floats(std::size_t(second_max_rows) * std::size_t(width));
    }
    return {
        Mlp(space, layout, first_max_rows, first_max_backward_rows, ops, scratch, first_label, std::move(first)),
        Mlp(space, layout, second_max_rows, second_max_backward_rows, ops, scratch, second_label, std::move(second))};
  }

 private:
  /// Hidden activations made elsewhere (pair()): one matrix per hidden
  /// layer over `storage`, which they keep alive. Empty: allocate them.
  struct Activations {
    Kokkos::View<float*, memory_space> storage;
    std::vector<matrix> layers;
  };

  static void check_rows(const std::string& label, int max_rows, int max_backward_rows) {
    if (max_rows <= 0 || max_backward_rows < 0 || max_backward_rows > max_rows)
      throw LogicError(label + ": need 0 < max_rows and 0 <= max_backward_rows <= max_rows, got " +
                       std::to_string(max_rows) + " and " + std::to_string(max_backward_rows));
  }

  Mlp(const ExecSpace& space, const NetworkLayout& layout, int max_rows, int max_backward_rows,
      std::shared_ptr<DenseOps<ExecSpace>> ops, const kernels::ReduceScratch<memory_space>& scratch,
      const std::string& label, Activations given)
      : layout_(layout),
        ops_(std::move(ops)),
        scratch_(scratch),
        max_backward_rows_(max_backward_rows),
        act_storage_(std::move(given.storage)),
        act_(std::move(given.layers)) {
    if (!ops_) throw LogicError(label + ": no DenseOps");
    check_rows(label, max_rows, max_backward_rows);
    if (act_.empty())
      for (int l = 0; l < layout_.num_hidden(); ++l)
        act_.push_back(alloc(space, label + "::act" + std::to_string(l), max_rows, layout_.layers[l].out));
    out_ = alloc(space, label + "::head", max_rows, layout_.head_outputs());
    if (max_backward_rows > 0) {
      int widest = 1;
      for (int l = 0; l < layout_.num_hidden(); ++l) widest = std::max(widest, layout_.layers[l].out);
      for (auto& g : d_act_)
        g = Kokkos::View<float*, memory_space>(
            Kokkos::view_alloc(space, Kokkos::WithoutInitializing, label + "::d_act"),
            std::size_t(max_backward_rows) * std::size_t(widest));
    }
    masks_.resize(std::size_t(layout_.num_hidden()));
    mask_rows_.assign(std::size_t(layout_.num_hidden()), 0);
    // Bitmasks for the trunk layers whose forward is a DenseOps product (all
    // hidden layers but the last, which the head kernel finishes).
    if (max_backward_rows > 0 && ops_->epilogue_masks())
      for (int l = 0; l + 1 < layout_.num_hidden(); ++l)
        masks_[std::size_t(l)] = Kokkos::View<std::uint8_t*, memory_space>(
            Kokkos::view_alloc(space, Kokkos::WithoutInitializing, label + "::relu_mask" + std::to_string(l)),
            ReluBitmask::bytes(max_backward_rows, layout_.layers[l].out));
  }

 public:
  /// What backward's reductions need of a ReduceScratch for `rows` rows.
  static kernels::ScratchNeed scratch_need(const NetworkLayout& layout, int rows) {
    // Per column: the bias gradient, and the head's weight gradient or a
    // narrow first layer's (backward_blas).
    const int narrow = layout.obs_dim <= kernels::ReluBackwardFunctor<ExecSpace>::max_small ? layout.obs_dim : 0;
    return kernels::relu_backward_scratch<ExecSpace>(rows, layout.max_width(),
                                                     1 + std::max(layout.head_outputs(), narrow));
  }

  /// Whether forward() forms the greedy actions itself: a dueling head on
  /// the blas backend, with a hidden layer and few enough head outputs for
  /// one pass of the head kernel.
  bool fuses_greedy() const {
    return layout_.head_kind == HeadKind::dueling && ops_->backend() == DenseBackend::blas && layout_.num_layers >= 2 &&
           layout_.head_outputs() <= kernels::small_dense_max_outputs;
  }

  /// Forward of `params` over the stacked rows [x1; x2] (x2 may be empty;
  /// nothing is copied). Returns the head outputs [rows, head_outputs]
  /// (rows of output()); activations stay for backward. `greedy` receives
  /// each row's dueling greedy action when fuses_greedy() (ignored
  /// otherwise). With fuses_greedy(), `after_row(m)` (a device functor)
  /// runs in the head kernel's launch once row m's outputs (and greedy
  /// action, when `greedy` is given) are stored (kernels::small_dense);
  /// otherwise it must be kernels::NothingAfterRow.
  template <class AfterRow = kernels::NothingAfterRow>
  MutableMatrix<memory_space> forward(const ExecSpace& space, const flat& params, const ConstMatrix<memory_space>& x1,
                                      const ConstMatrix<memory_space>& x2, std::int32_t* greedy = nullptr,
                                      const AfterRow& after_row = AfterRow()) {
    if (!std::is_same_v<AfterRow, kernels::NothingAfterRow> && !fuses_greedy())
      throw LogicError("foxrl::Mlp::forward: work after each row needs the fused head kernel");
    const int n1 = static_cast<int>(x1.extent(0));
    const int n = n1 + static_cast<int>(x2.extent(0));
    check_params("forward", params);
    if (n > static_cast<int>(out_.extent(0)))
      throw LogicError("foxrl::Mlp::forward: " + std::to_string(n) + " rows, scratch for " +
                       std::to_string(out_.extent(0)));
    if (x1.extent(1) != std::size_t(layout_.obs_dim) || (x2.extent(0) > 0 && x2.extent(1) != x1.extent(1)))
      throw LogicError("foxrl::Mlp::forward: inputs need " + std::to_string(layout_.obs_dim) + " columns");
    const int L = layout_.num_layers;
    const bool blas = ops_->backend() == DenseBackend::blas;
    auto head = matrix_rows(out_, 0, n);  // returned: not const, so it moves
    for (int l = 0; l < L; ++l) {
      const bool is_head = l == L - 1;
      const auto out = is_head ? head : matrix_rows(act_[l], 0, n);
      // Past the first layer the two input blocks sit in one activation
      // matrix; a layer with a ReLU bitmask still takes them as two, so the
      // mask covers x1's rows (the backward's).
      const bool two_blocks = !is_head && l > 0 && masks_[std::size_t(l)].extent(0) > 0 && n > n1;
      const ConstMatrix<memory_space> in1 =
          l == 0 ? x1 : ConstMatrix<memory_space>(matrix_rows(act_[l - 1], 0, two_blocks ? n1 : n));
      const ConstMatrix<memory_space> in2 = l == 0       ? x2
                                            : two_blocks ? ConstMatrix<memory_space>(matrix_rows(act_[l - 1], n1, n))
                                                         : ConstMatrix<memory_space>();
      const ConstMatrix<memory_space> w = layer_weight(params, layout_, l);
      const ConstVector<memory_space> b = layer_bias(params, layout_, l);
      if (!blas || (!is_head && l != L - 2)) {
        // A bitmask only for rows a backward can take (its scratch holds
        // max_backward_rows; a larger forward, e.g. the collector's, has none).
        const bool fits = !is_head && static_cast<int>(in1.extent(0)) <= max_backward_rows_;
        const bool masked = ops_->forward(space, in1, in2, w, b, !is_head, out, fits ? bitmask(l) : ReluBitmask());
        if (!is_head) mask_rows_[std::size_t(l)] = masked ? static_cast<int>(in1.extent(0)) : 0;
        continue;
      }
      // blas: the head (few outputs) as one kernel instead of a split-K
      // gemm + epilogue, fused with the last hidden layer's bias + ReLU.
      const int m1 = static_cast<int>(in1.extent(0));
      const MutableMatrix<memory_space> out1 = matrix_rows(out, 0, m1), out2 = matrix_rows(out, m1, n);
      if (is_head) {  // no hidden layer
        kernels::small_dense_forward(space, in1, w, b, out1);
        if (n > m1) kernels::small_dense_forward(space, in2, w, b, out2);
        continue;
      }
      ops_->gemm()(space, false, true, in1, w, out1);
      if (n > m1) ops_->gemm()(space, false, true, in2, w, out2);
      // H is stored only where a backward can read it (the first rows of x1).
      kernels::bias_relu_small_dense_forward(
          space, out, b, ConstMatrix<memory_space>(layer_weight(params, layout_, L - 1)),
          ConstVector<memory_space>(layer_bias(params, layout_, L - 1)), head, fuses_greedy() ? greedy : nullptr,
          std::min(m1, max_backward_rows_), after_row);
      break;
    }
    return head;
  }

  /// A learner's two forwards of an update: this network over [x1; x2] as
  /// forward(space, params, x1, x2), and `target` (same layout and ops)
  /// over x2 as target.forward(space, target_params, x2, {}, nullptr,
  /// after_target_row). Where pairs_with() allows, each hidden layer of the
  /// two networks is one library call instead of two: the first as a
  /// batch of two products over the stacked rows (the target runs x1's
  /// rows too, into its first layer's scratch), the last (whose bias and
  /// ReLU the head kernel applies) as a batch of three products of x1's
  /// rows (each network's rows of x1 and x2 at once would need the
  /// target to run x1's rows through every layer); the heads stay one kernel
  /// each. Otherwise the two forwards run. Returns this network's head
  /// outputs; the target's are target.output(). The products are the same
  /// ones, so the results are the two forwards' up to the library's choice
  /// of algorithm for the batch.
  template <class AfterRow = kernels::NothingAfterRow>
  MutableMatrix<memory_space> forward_with_target(const ExecSpace& space, const flat& params, Mlp& target,
                                                  const flat& target_params, const ConstMatrix<memory_space>& x1,
                                                  const ConstMatrix<memory_space>& x2,
                                                  const AfterRow& after_target_row = AfterRow()) {
    if (!pairs_with(space, params, target, target_params, x1, x2)) {
      auto head = forward(space, params, x1, x2);
      target.forward(space, target_params, x2, {}, nullptr, after_target_row);
      return head;
    }
    if (!std::is_same_v<AfterRow, kernels::NothingAfterRow> && !target.fuses_greedy())
      throw LogicError("foxrl::Mlp::forward_with_target: work after each row needs the fused head kernel");
    const int B = static_cast<int>(x1.extent(0)), n = 2 * B;
    const int last_hidden = layout_.num_layers - 2;
    const ConstMatrix<memory_space> x(x1.data(), n, x1.extent(1));  // [x1; x2]: pairs_with checked they are stacked
    // The target's input rows of layer l (its x2 rows).
    const auto target_input = [&](int l) {
      if (l == 0) return x2;
      return ConstMatrix<memory_space>(matrix_rows(target.act_[l - 1], l == 1 ? B : 0, l == 1 ? n : B));
    };
    for (int l = 0; l < last_hidden; ++l) {
      const auto w = layer_weight(params, layout_, l), w_t = layer_weight(target_params, layout_, l);
      const auto b = layer_bias(params, layout_, l), b_t = layer_bias(target_params, layout_, l);
      if (l == 0) {
        if (!ops_->forward_pair(space, x, w, b, matrix_rows(act_[0], 0, n), w_t, b_t, matrix_rows(target.act_[0], 0, n),
                                true))
          throw LogicError("foxrl::Mlp::forward_with_target: the paired first layer did not run");
      } else {
        ops_->forward(space, ConstMatrix<memory_space>(matrix_rows(act_[l - 1], 0, n)), {}, w, b, true,
                      matrix_rows(act_[l], 0, n));
        ops_->forward(space, target_input(l), {}, w_t, b_t, true, matrix_rows(target.act_[l], 0, B));
      }
      mask_rows_[std::size_t(l)] = 0;
      target.mask_rows_[std::size_t(l)] = 0;
    }
    const int l = last_hidden;
    const ConstMatrix<memory_space> in = l == 0 ? x : ConstMatrix<memory_space>(matrix_rows(act_[l - 1], 0, n));
    const ConstMatrix<memory_space> w = layer_weight(params, layout_, l), w_t = layer_weight(target_params, layout_, l);
    BatchedForward<memory_space> products;
    const auto in_rows = [&](int begin) {
      return ConstMatrix<memory_space>(in.data() + std::size_t(begin) * in.extent(1), B, in.extent(1));
    };
    products.add(in_rows(0), w, matrix_rows(act_[l], 0, B));
    products.add(in_rows(B), w, matrix_rows(act_[l], B, n));
    products.add(target_input(l), w_t, matrix_rows(target.act_[l], 0, B));
    if (products.count != 3 || !ops_->forward_batched(space, products))
      throw LogicError("foxrl::Mlp::forward_with_target: the batched last hidden layer did not run");
    auto head = matrix_rows(out_, 0, n);  // returned: not const, so it moves
    // Rows whose ReLU output stays stored for a backward, as forward()
    // keeps them (x1's rows of the one product past the first layer).
    const kernels::BiasReluHead<memory_space> online_head{matrix_rows(act_[l], 0, n),
                                                          layer_bias(params, layout_, l),
                                                          layer_weight(params, layout_, l + 1),
                                                          layer_bias(params, layout_, l + 1),
                                                          head,
                                                          std::min(l == 0 ? B : n, max_backward_rows_)};
    const kernels::BiasReluHead<memory_space> target_head{matrix_rows(target.act_[l], 0, B),
                                                          layer_bias(target_params, layout_, l),
                                                          layer_weight(target_params, layout_, l + 1),
                                                          layer_bias(target_params, layout_, l + 1),
                                                          matrix_rows(target.out_, 0, B),
                                                          std::min(B, target.max_backward_rows_)};
    if (pairs_heads_ && kernels::small_dense_pair_fits(layout_.head_outputs())) {
      kernels::bias_relu_small_dense_pair_forward(space, online_head, target_head, after_target_row);
      return head;
    }
    const auto& o = online_head;
    const auto& t = target_head;
    kernels::bias_relu_small_dense_forward(space, o.z, o.hidden_bias, o.w, o.bias, o.y, nullptr, o.store_rows);
    kernels::bias_relu_small_dense_forward(space, t.z, t.hidden_bias, t.w, t.bias, t.y, nullptr, t.store_rows,
                                           after_target_row);
    return head;
  }

  /// Whether forward_with_target runs its hidden layers as shared library
  /// calls for these operands: DenseOps::pairs_forwards() on the ops both
  /// networks share, one layout with a hidden layer, x1 and x2 of one row
  /// count with x2's rows right after x1's, scratch for 2 x1-row counts in
  /// both networks (the target's for its first layer), and the library's
  /// batched first-layer algorithm for the shape.
  bool pairs_with(const ExecSpace& space, const flat& params, const Mlp& target, const flat& target_params,
                  const ConstMatrix<memory_space>& x1, const ConstMatrix<memory_space>& x2) const {
    if (!pairs_forward_ || !ops_ || ops_ != target.ops_ || !ops_->pairs_forwards() || layout_.num_layers < 2 ||
        !(target.layout_ == layout_))
      return false;
    const std::size_t B = x1.extent(0);
    const int last_hidden = layout_.num_layers - 2;
    if (B == 0 || x2.extent(0) != B || x1.extent(1) != std::size_t(layout_.obs_dim) || x2.extent(1) != x1.extent(1) ||
        x1.stride(0) != x1.extent(1) || x2.stride(0) != x1.stride(0) || x2.data() != x1.data() + B * x1.stride(0))
      return false;
    if (out_.extent(0) < 2 * B || act_[0].extent(0) < 2 * B || target.out_.extent(0) < B ||
        target.act_[0].extent(0) < (last_hidden > 0 ? 2 * B : B))
      return false;
    for (const auto& m : masks_)
      if (m.extent(0) > 0) return false;
    if (last_hidden == 0) return true;
    check_params("forward_with_target", params);
    target.check_params("forward_with_target", target_params);
    const ConstMatrix<memory_space> x(x1.data(), 2 * B, x1.extent(1));
    return ops_->forward_pair(space, x, layer_weight(params, layout_, 0), layer_bias(params, layout_, 0),
                              matrix_rows(act_[0], 0, 2 * B), layer_weight(target_params, layout_, 0),
                              layer_bias(target_params, layout_, 0), matrix_rows(target.act_[0], 0, 2 * B), true,
                              false);
  }

  /// Turns forward_with_target's shared calls off (on by default where
  /// pairs_with allows; the kernel path paired_forward off turns them off too).
  void set_paired_forward(bool on) { pairs_forward_ = on; }
  /// Turns forward_with_target's one launch for both heads on or off
  /// (where the hidden layers pair and the head has at most 8 outputs; on
  /// by default, the kernel path paired_heads off turns it off): off, the two head
  /// kernels run one after the other, with the same bits.
  void set_paired_heads(bool on) { pairs_heads_ = on; }

  /// Backward of the last forward's first B rows: `x` [B, obs_dim] must be
  /// those rows' input (x1 of forward, B <= its rows) and `params` the
  /// parameters it ran; `d_out` [B, head_outputs] is dL/d(head outputs).
  /// Writes every gradient into `grads` (overwritten, laid out like
  /// params); the head's bias gradient as `head_bias` says (the portable
  /// backend always forms it).
  void backward(const ExecSpace& space, const flat& params, const ConstMatrix<memory_space>& x,
                const ConstMatrix<memory_space>& d_out, const flat& grads,
                HeadBiasGrad head_bias = HeadBiasGrad::compute) {
    const int B = static_cast<int>(x.extent(0));
    check_params("backward", params);
    check_params("backward", grads);
    if (B > max_backward_rows_)
      throw LogicError("foxrl::Mlp::backward: " + std::to_string(B) + " rows, scratch for " +
                       std::to_string(max_backward_rows_));
    if (x.extent(1) != std::size_t(layout_.obs_dim) || d_out.extent(0) != std::size_t(B) ||
        d_out.extent(1) != std::size_t(layout_.head_outputs()))
      throw LogicError("foxrl::Mlp::backward: x must be [" + std::to_string(B) + ", " +
                       std::to_string(layout_.obs_dim) + "] and d_out [" + std::to_string(B) + ", " +
                       std::to_string(layout_.head_outputs()) + "]");
    if (B == 0) return;
    if (ops_->backend() == DenseBackend::blas)
      backward_blas(space, params, x, d_out, grads, head_bias);
    else
      backward_portable(space, params, x, d_out, grads);
  }

  /// Head outputs of the last forward ([max_rows, head_outputs]; its first
  /// rows are valid).
  const matrix& output() const { return out_; }
  /// ReLU output of hidden layer l of the last forward. On the blas
  /// backend the last hidden layer holds it only in the rows a backward can
  /// read (the first min(rows of x1, max_backward_rows)); its other rows
  /// hold the pre-activation.
  const matrix& activation(int l) const { return act_.at(std::size_t(l)); }
  const NetworkLayout& layout() const { return layout_; }
  /// Rows of the last forward whose ReLU bitmask hidden layer l holds (0:
  /// none; the backward then masks with a kernel).
  int relu_mask_rows(int l) const { return mask_rows_.at(std::size_t(l)); }
  DenseBackend backend() const { return ops_->backend(); }

 private:
  static matrix alloc(const ExecSpace& space, const std::string& label, int r, int c) {
    return matrix(Kokkos::view_alloc(space, Kokkos::WithoutInitializing, label), r, c);
  }

  void check_params(const char* what, const flat& p) const {
    if (p.extent(0) != layout_.total)
      throw LogicError(std::string("foxrl::Mlp::") + what + ": a flat buffer of " + std::to_string(p.extent(0)) +
                       " floats, layout " + layout_.describe() + " needs " + std::to_string(layout_.total));
  }

  /// Hidden layer l's ReLU bitmask for up to max_backward_rows rows (empty
  /// when it has none).
  ReluBitmask bitmask(int l) const {
    ReluBitmask m;
    const auto& bits = masks_.at(std::size_t(l));
    if (bits.extent(0) == 0) return m;
    m.bits = bits.data();
    m.ld_bits = ReluBitmask::row_bits(layout_.layers[l].out);
    m.rows = max_backward_rows_;
    return m;
  }

  /// Input of layer l (the network input for l = 0) over B rows.
  ConstMatrix<memory_space> layer_input(const ConstMatrix<memory_space>& x, int l, int B) const {
    return l == 0 ? x : ConstMatrix<memory_space>(matrix_rows(act_[l - 1], 0, B));
  }

  /// Per layer one dW (+ db) product and one dX product with the ReLU mask
  /// fused.
  void backward_portable(const ExecSpace& space, const flat& params, const ConstMatrix<memory_space>& x,
                         const ConstMatrix<memory_space>& d_out, const flat& grads) {
    const int B = static_cast<int>(x.extent(0));
    ConstMatrix<memory_space> dy = d_out;
    int ping = 0;
    for (int l = layout_.num_layers - 1; l >= 0; --l) {
      const auto in = layer_input(x, l, B);
      ops_->backward_weights(space, dy, in, layer_weight(grads, layout_, l), layer_bias(grads, layout_, l));
      if (l == 0) break;
      MutableMatrix<memory_space> dx(d_act_[ping].data(), B, layout_.layers[l].in);
      ops_->backward_input(space, dy, ConstMatrix<memory_space>(layer_weight(params, layout_, l)), in, dx);
      dy = dx;
      ping ^= 1;
    }
  }

  void backward_blas(const ExecSpace& space, const flat& params, const ConstMatrix<memory_space>& x,
                     const ConstMatrix<memory_space>& d_out, const flat& grads, HeadBiasGrad head_bias) {
    const int B = static_cast<int>(x.extent(0));
    const int L = layout_.num_layers;
    if (head_bias == HeadBiasGrad::compute)
      DenseOps<ExecSpace>::bias_gradient(space, d_out, layer_bias(grads, layout_, L - 1), scratch_);
    if (L == 1) {
      ops_->gemm()(space, true, false, d_out, x, layer_weight(grads, layout_, 0));
      return;
    }
    int ping = 0;
    {
      const int l = L - 1;
      const auto w = layer_weight(params, layout_, l);
      const auto h = matrix_rows(act_[l - 1], 0, B);
      const auto dw = layer_weight(grads, layout_, l);
      kernels::ReluBackwardArgs a;
      a.rows = B;
      a.cols = layout_.layers[l].in;
      a.dy_small = d_out.data();
      a.dy_ld = static_cast<std::ptrdiff_t>(d_out.stride(0));
      a.n_small = layout_.layers[l].out;
      a.w_small = w.data();
      a.w_ld = static_cast<std::ptrdiff_t>(w.stride(0));
      a.act = h.data();
      a.act_ld = static_cast<std::ptrdiff_t>(h.stride(0));
      a.dz = d_act_[ping].data();
      a.dz_ld = a.cols;
      a.db = layer_bias(grads, layout_, l - 1).data();
      a.dw_small = dw.data();
      a.dw_ld = static_cast<std::ptrdiff_t>(dw.stride(0));
      kernels::relu_backward(space, a, scratch_);
    }
    // A narrow first layer (DenseOps::narrow_inputs, at most max_small
    // inputs): its weight gradient dZ0^T X forms in the pass that masks dZ0
    // (relu_backward's dw_x) instead of a skinny gemm of its own.
    const bool narrow_dw0 =
        ops_->narrow_inputs() && L >= 3 && layout_.obs_dim <= kernels::ReluBackwardFunctor<ExecSpace>::max_small;
    bool dw0_formed = false;
    for (int l = L - 2; l >= 0; --l) {
      const ConstMatrix<memory_space> dz(d_act_[ping].data(), B, layout_.layers[l].out);
      const auto in = layer_input(x, l, B);
      if (l == 0 && dw0_formed) break;
      ops_->gemm()(space, true, false, dz, in, layer_weight(grads, layout_, l));
      if (l == 0) break;
      const MutableMatrix<memory_space> dx(d_act_[ping ^ 1].data(), B, layout_.layers[l].in);
      const ConstMatrix<memory_space> w(layer_weight(params, layout_, l));
      ping ^= 1;
      // The mask of this product's input, as the last forward wrote it.
      if (mask_rows_[std::size_t(l - 1)] >= B &&
          ops_->backward_input_masked(space, dz, w, bitmask(l - 1), dx, layer_bias(grads, layout_, l - 1)))
        continue;
      ops_->gemm()(space, false, false, dz, w, dx);
      kernels::ReluBackwardArgs a;
      a.rows = B;
      a.cols = layout_.layers[l].in;
      a.src = dx.data();
      a.src_ld = a.cols;
      a.act = in.data();
      a.act_ld = static_cast<std::ptrdiff_t>(in.stride(0));
      a.dz = dx.data();
      a.dz_ld = a.cols;
      a.db = layer_bias(grads, layout_, l - 1).data();
      if (l == 1 && narrow_dw0) {
        const auto dw0 = layer_weight(grads, layout_, 0);
        a.x_narrow = x.data();
        a.x_ld = static_cast<std::ptrdiff_t>(x.stride(0));
        a.n_x = layout_.obs_dim;
        a.dw_x = dw0.data();
        a.dwx_ld = static_cast<std::ptrdiff_t>(dw0.stride(0));
        dw0_formed = true;
      }
      kernels::relu_backward(space, a, scratch_);
    }
  }

  NetworkLayout layout_;
  std::shared_ptr<DenseOps<ExecSpace>> ops_;
  kernels::ReduceScratch<memory_space> scratch_;
  int max_backward_rows_ = 0;
  /// The allocation act_ views when pair() made it (shared with the other
  /// network; empty otherwise).
  Kokkos::View<float*, memory_space> act_storage_;
  std::vector<matrix> act_;
  matrix out_;
  Kokkos::View<float*, memory_space> d_act_[2];
  /// Per hidden layer: its ReLU bitmask (DenseOps::epilogue_masks only) and how many
  /// of the last forward's rows it holds (0: none, the mask kernel runs).
  std::vector<Kokkos::View<std::uint8_t*, memory_space>> masks_;
  std::vector<int> mask_rows_;
  bool pairs_forward_ = kernel_path_on(KernelPath::paired_forward);
  bool pairs_heads_ = kernel_path_on(KernelPath::paired_heads);
};

}  // namespace foxrl
