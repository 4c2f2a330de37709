#pragma once
// AdamOptimizer: Adam (or AdamW) over one flat parameter View: owns the
// moments m and v (laid out like the parameters) and the device-resident
// step counter, and applies gradient clipping + the Adam step in one launch
// (kernels/nn/adam.hpp), with an optional target-network update and the
// training guard's verdict fused into the same launch. The squared gradient
// norm comes from a reduction before it (gradient_sq_norm_then, which also
// runs the guard's decision), so a portable optimizer step is two launches;
// on CUDA, step_with_norm() is one (kernels/cuda/fused_optimizer.cuh).

#include "core/error.hpp"
#include "core/kernel_paths.hpp"
#include "kernels/core/call_once.hpp"
#include "kernels/core/reduce_scratch.hpp"
#include "kernels/nn/adam.hpp"
#include "views/nn/parameter_set.hpp"

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#ifdef KOKKOS_ENABLE_CUDA
#include "kernels/cuda/fused_optimizer.cuh"
#endif

namespace foxrl {

/// Adam state and update of one parameter buffer; see the file comment.
template <class ExecSpace>
class AdamOptimizer {
 public:
  using memory_space = typename ExecSpace::memory_space;
  using flat = FlatParams<memory_space>;
  using step_view = Kokkos::View<std::int64_t, memory_space>;

  AdamOptimizer() = default;

  /// Zero moments and step counter for `n` parameters; `label` prefixes the
  /// allocations ("<label>::adam_m", ...).
  AdamOptimizer(const ExecSpace& space, std::size_t n, const AdamHyper& hyper, const std::string& label)
      : hyper_(hyper),
        m_(Kokkos::view_alloc(space, label + "::adam_m"), n),
        v_(Kokkos::view_alloc(space, label + "::adam_v"), n),
        step_(Kokkos::view_alloc(space, label + "::adam_step")) {
#ifdef KOKKOS_ENABLE_CUDA
    if constexpr (std::is_same_v<ExecSpace, Kokkos::Cuda>) {
      fused_ = kernel_path_on(KernelPath::fused_cuda);
      // Two partial sums per block of the fused launch; at most
      // 2048 / fused_optimizer_block blocks are resident on one SM.
      int device = 0, sms = 0;
      cudaGetDevice(&device);
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
      const std::size_t blocks = std::size_t(sms > 0 ? sms : 1) * (2048 / kernels::cuda::fused_optimizer_block);
      fused_partials_ = Kokkos::View<float*, memory_space>(
          Kokkos::view_alloc(space, Kokkos::WithoutInitializing, label + "::fused_partials"),
          2 * blocks + kernels::cuda::fused_optimizer_extra_floats);
    }
#endif
  }

  /// Clip + Adam step of `params` with `grads` on `space`, one launch.
  /// Needs: step() already counts this step (the caller's loss kernel
  /// advances it, or count_step()), metrics(LearnerMetrics::grad_sq) holds
  /// the squared gradient norm (metrics(grad_norm) receives its root).
  /// `target` is updated in the same pass (tau 1: hard copy); `guard`
  /// carries out the training guard's verdict instead of a plain step.
  void apply(const ExecSpace& space, const flat& params, const flat& grads,
             const Kokkos::View<float*, memory_space>& metrics,
             const kernels::TargetUpdate<memory_space>& target = kernels::TargetUpdate<memory_space>(),
             const kernels::GuardedStep<memory_space>& guard = kernels::GuardedStep<memory_space>()) const {
    if (params.extent(0) != m_.extent(0))
      throw LogicError("foxrl::AdamOptimizer::apply: " + std::to_string(params.extent(0)) +
                       " parameters, the optimizer holds moments for " + std::to_string(m_.extent(0)));
    kernels::adam_update(space, hyper_, params, grads, m_, v_, step_, metrics, target, guard);
  }

  /// The whole optimizer step: the squared norm of `grads` (and, with
  /// `scan_params`, the count of non-finite `params`) handed to
  /// `finish(grad_sq, nonfinite)` in one thread (which must store grad_sq in
  /// metrics: the training guard's decision, or kernels::StoreGradSq), then
  /// apply()'s clip + Adam + target update. Portable: two launches
  /// (gradient_sq_norm_then with `scratch`, adam_update); CUDA: one fused
  /// cooperative launch, unless the kernel path fused_cuda is off.
  template <class Finish>
  void step_with_norm(const ExecSpace& space, const flat& params, const flat& grads,
                      const Kokkos::View<float*, memory_space>& metrics, const Finish& finish,
                      const kernels::ReduceScratch<memory_space>& scratch, bool scan_params,
                      const kernels::TargetUpdate<memory_space>& target = kernels::TargetUpdate<memory_space>(),
                      const kernels::GuardedStep<memory_space>& guard = kernels::GuardedStep<memory_space>()) const {
    if (params.extent(0) != m_.extent(0))
      throw LogicError("foxrl::AdamOptimizer::step_with_norm: " + std::to_string(params.extent(0)) +
                       " parameters, the optimizer holds moments for " + std::to_string(m_.extent(0)));
#ifdef KOKKOS_ENABLE_CUDA
    if constexpr (std::is_same_v<ExecSpace, Kokkos::Cuda>) {
      if (fused_) {
        const auto step =
            kernels::make_adam_step<ExecSpace>(hyper_, params, grads, m_, v_, step_, metrics, target, guard);
        kernels::cuda::fused_optimizer_step(space, grads, scan_params ? params : flat(), finish, step,
                                            fused_partials_.data(), fused_partials_.extent(0));
        return;
      }
    }
#endif
    kernels::gradient_sq_norm_then(space, grads, scan_params ? params : flat(), finish, scratch);
    kernels::adam_update(space, hyper_, params, grads, m_, v_, step_, metrics, target, guard);
  }

  /// Advances the step counter by one (one tiny launch; learners whose loss
  /// kernel does it in passing do not call this).
  void count_step(const ExecSpace& space) const {
    kernels::call_once(space, "foxrl::AdamOptimizer::count_step", kernels::CountStep<memory_space>{step_});
  }

  const flat& m() const { return m_; }             ///< first moment
  const flat& v() const { return v_; }             ///< second moment
  const step_view& step() const { return step_; }  ///< steps taken
  const AdamHyper& hyper() const { return hyper_; }

 private:
  AdamHyper hyper_;
  flat m_, v_;
  step_view step_;
  bool fused_ = false;                                 ///< CUDA: step_with_norm() fuses
  Kokkos::View<float*, memory_space> fused_partials_;  ///< CUDA: the fused launch's block sums
};

}  // namespace foxrl
