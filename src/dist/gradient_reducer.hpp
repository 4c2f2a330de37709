#pragma once
// GradientReducer: the seam of data-parallel training between a learner's
// compute_gradients and apply_gradients. It replaces the flat gradient
// View and the loss kernel's metrics (the training guard's input: its spike
// test reads the loss) with their means over the ranks, so every rank
// applies the same gradient and takes the same accept/reject decision,
// and the weights stay identical.
//
// HostGradientReducer is the MPI implementation: it copies to host buffers
// made once (none where the Views already live in host memory), fences the
// instance, sums with the Communicator and scales on the instance. A GPU
// build adds an NCCL implementation next to it (ncclAllReduce with ncclAvg
// on the context's stream, no fence and no host copy, keeping the
// one-stream rule); the trainer picks it where the Views live on the GPU.

#include "core/compat.hpp"
#include "core/error.hpp"
#include "core/host_mirror.hpp"
#include "dist/communicator.hpp"
#include "kernels/dist/scale.hpp"

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <memory>
#include <string>
#include <utility>

namespace foxrl {

/// Means over ranks of a learner's gradients and metrics, on the run's
/// instance; see the file comment.
template <class ExecSpace>
class GradientReducer {
 public:
  using memory_space = typename ExecSpace::memory_space;
  using vector = Kokkos::View<float*, memory_space>;
  virtual ~GradientReducer() = default;
  /// grads(i) and metrics(j < metric_slots) become their means over the
  /// ranks (same shapes on every rank); called by every rank once per
  /// update.
  virtual void mean(const ExecSpace& space, const vector& grads, const vector& metrics) = 0;
};

/// GradientReducer through a host Communicator (MPI_Allreduce).
template <class ExecSpace>
class HostGradientReducer final : public GradientReducer<ExecSpace> {
 public:
  using typename GradientReducer<ExecSpace>::vector;

  /// For gradients of `grads`'s length and the first `metric_slots`
  /// metrics; the host buffers are made here, never per update.
  HostGradientReducer(std::shared_ptr<dist::Communicator> comm, const vector& grads, const vector& metrics,
                      std::size_t metric_slots)
      : comm_(std::move(comm)),
        grads_host_(host_mirror(grads)),
        metrics_host_(host_mirror(metrics)),
        metric_slots_(metric_slots) {
    if (!comm_) throw LogicError("foxrl::HostGradientReducer: no communicator");
    if (metric_slots_ > metrics.extent(0))
      throw LogicError("foxrl::HostGradientReducer: " + std::to_string(metric_slots_) + " metric slots of " +
                       std::to_string(metrics.extent(0)));
  }

  void mean(const ExecSpace& space, const vector& grads, const vector& metrics) override {
    if (grads.extent(0) != grads_host_.extent(0) || metrics.extent(0) != metrics_host_.extent(0))
      throw LogicError("foxrl::HostGradientReducer::mean: shapes differ from the construction's");
    Kokkos::deep_copy(space, grads_host_, grads);
    Kokkos::deep_copy(space, metrics_host_, metrics);
    compat::fence(space, "foxrl::GradientReducer::before_all_reduce");
    comm_->sum(grads_host_.data(), grads_host_.extent(0));
    comm_->sum(metrics_host_.data(), metric_slots_);
    Kokkos::deep_copy(space, grads, grads_host_);
    Kokkos::deep_copy(space, metrics, metrics_host_);
    // Sum, then one multiply by 1/N: the mean of N half-batch gradients is
    // the full-batch gradient up to the summation order.
    const float inverse = 1.0f / static_cast<float>(comm_->size());
    kernels::scale(space, grads, grads.extent(0), inverse);
    kernels::scale(space, metrics, metric_slots_, inverse);
  }

 private:
  std::shared_ptr<dist::Communicator> comm_;
  typename vector::HostMirror grads_host_, metrics_host_;
  std::size_t metric_slots_;
};

}  // namespace foxrl
