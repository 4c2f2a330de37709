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
// instance, sums with the Communicator and scales on the instance.
// NcclGradientReducer (CUDA builds with NCCL) runs ncclAllReduce with
// ncclAvg on the instance's stream: no fence and no host copy, so the
// one-stream rule holds. make_gradient_reducer picks NCCL where it is built
// in, the Views live on the GPU and every rank has a GPU of its own, else
// the host path (FOXRL_ALL_REDUCE=mpi|nccl overrides, in the trainers).

#include "core/compat.hpp"
#include "core/error.hpp"
#include "core/host_mirror.hpp"
#include "dist/communicator.hpp"
#include "dist/nccl_all_reduce.hpp"
#include "dist/reduction_transport.hpp"
#include "kernels/dist/scale.hpp"

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <memory>
#include <string>
#include <type_traits>
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
  /// How the mean is formed, for logs ("MPI on host buffers", "NCCL ...").
  virtual std::string transport() const = 0;
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

  std::string transport() const override { return comm_->transport() + " on host buffers"; }

 private:
  std::shared_ptr<dist::Communicator> comm_;
  typename vector::HostMirror grads_host_, metrics_host_;
  std::size_t metric_slots_;
};

#if defined(FOXRL_HAS_NCCL) && FOXRL_HAS_NCCL && defined(KOKKOS_ENABLE_CUDA)
/// GradientReducer through NCCL on the instance's CUDA stream.
class NcclGradientReducer final : public GradientReducer<Kokkos::Cuda> {
 public:
  /// For gradients of `grads`'s length and the first `metric_slots`
  /// metrics; creates the process's NCCL communicator on first use (a
  /// collective: every rank constructs its reducers in the same order).
  NcclGradientReducer(const std::shared_ptr<dist::Communicator>& comm, const vector& grads, const vector& metrics,
                      std::size_t metric_slots)
      : nccl_(dist::NcclAllReduce::for_ranks(comm)),
        grads_size_(grads.extent(0)),
        metrics_size_(metrics.extent(0)),
        metric_slots_(metric_slots) {
    if (metric_slots_ > metrics_size_)
      throw LogicError("foxrl::NcclGradientReducer: " + std::to_string(metric_slots_) + " metric slots of " +
                       std::to_string(metrics_size_));
  }

  void mean(const Kokkos::Cuda& space, const vector& grads, const vector& metrics) override {
    if (grads.extent(0) != grads_size_ || metrics.extent(0) != metrics_size_)
      throw LogicError("foxrl::NcclGradientReducer::mean: shapes differ from the construction's");
    nccl_->mean(space.cuda_stream(), grads.data(), grads_size_, metrics.data(), metric_slots_);
  }

  std::string transport() const override { return nccl_->describe() + " on the run's stream"; }

 private:
  std::shared_ptr<dist::NcclAllReduce> nccl_;
  std::size_t grads_size_, metrics_size_, metric_slots_;
};
#endif

/// True if this build can reduce ExecSpace's Views through NCCL.
template <class ExecSpace>
constexpr bool nccl_reduction_available() {
#if defined(FOXRL_HAS_NCCL) && FOXRL_HAS_NCCL && defined(KOKKOS_ENABLE_CUDA)
  return std::is_same_v<ExecSpace, Kokkos::Cuda>;
#else
  return false;
#endif
}

/// The gradient mean of a run: see ReductionTransport (automatic asks
/// every rank whether two share a GPU: a collective then).
template <class ExecSpace>
std::unique_ptr<GradientReducer<ExecSpace>> make_gradient_reducer(
    const std::shared_ptr<dist::Communicator>& comm, const typename GradientReducer<ExecSpace>::vector& grads,
    const typename GradientReducer<ExecSpace>::vector& metrics, std::size_t metric_slots,
    ReductionTransport transport = ReductionTransport::automatic) {
  if constexpr (nccl_reduction_available<ExecSpace>()) {
#if defined(FOXRL_HAS_NCCL) && FOXRL_HAS_NCCL && defined(KOKKOS_ENABLE_CUDA)
    if (transport == ReductionTransport::automatic && dist::ranks_share_a_device(*comm, Kokkos::Cuda().cuda_device()))
      transport = ReductionTransport::host;
    if (transport != ReductionTransport::host)
      return std::make_unique<NcclGradientReducer>(comm, grads, metrics, metric_slots);
#endif
  } else if (transport == ReductionTransport::nccl) {
    throw UsageError(std::string("the NCCL all-reduce needs a CUDA build with NCCL (FOXRL_ENABLE_NCCL); this is a ") +
                     ExecSpace::name() + " build" + (dist::built_with_nccl() ? "" : " without NCCL"));
  }
  return std::make_unique<HostGradientReducer<ExecSpace>>(comm, grads, metrics, metric_slots);
}

}  // namespace foxrl
