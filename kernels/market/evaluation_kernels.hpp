#pragma once
// Kernels of the market evaluation (src/market/market_evaluation.hpp) and
// of inference over market bars (src/evaluate/policy.hpp).

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace foxrl::kernels {

/// record_evaluation_step's kernel: chunk k's reward and position into row t.
/// A named functor, not a KOKKOS_LAMBDA (see RecordStepInOneTeam in kernels/collect/record_step.hpp).
template <class MemorySpace>
struct EvaluationRecordKernel {
  int t, min_position;
  Kokkos::View<float*, MemorySpace> r;
  Kokkos::View<std::int32_t*, MemorySpace> a;
  Kokkos::View<float**, Kokkos::LayoutRight, MemorySpace> rw;
  Kokkos::View<std::int32_t**, Kokkos::LayoutRight, MemorySpace> pos;
  KOKKOS_INLINE_FUNCTION void operator()(int k) const {
    rw(t, k) = r(k);
    pos(t, k) = a(k) + min_position;
  }
};

/// Row t of the evaluation's series: rewards(t, k) = r(k) and
/// positions(t, k) = actions(k) + min_position for every chunk k (-1 with
/// a short action, 0 long-only; "foxrl::Evaluation::record").
template <class ExecSpace, class MemorySpace>
void record_evaluation_step(const ExecSpace& space, int t, int min_position, const Kokkos::View<float*, MemorySpace>& r,
                            const Kokkos::View<std::int32_t*, MemorySpace>& a,
                            const Kokkos::View<float**, Kokkos::LayoutRight, MemorySpace>& rw,
                            const Kokkos::View<std::int32_t**, Kokkos::LayoutRight, MemorySpace>& pos) {
  const int chunks = static_cast<int>(a.extent(0));
  Kokkos::parallel_for("foxrl::Evaluation::record", Kokkos::RangePolicy<ExecSpace>(space, 0, chunks),
                       EvaluationRecordKernel<MemorySpace>{t, min_position, r, a, rw, pos});
}

/// decision_times' kernel: times(i) = t0 + i.
template <class MemorySpace>
struct PolicyTimesKernel {
  Kokkos::View<std::int32_t*, MemorySpace> times;
  int t0;
  KOKKOS_INLINE_FUNCTION void operator()(int i) const { times(i) = t0 + i; }
};

/// times(i) = t0 + i for i < n: the decision bars of one block of
/// inference rows ("foxrl::Policy::times").
template <class ExecSpace, class MemorySpace>
void decision_times(const ExecSpace& space, const Kokkos::View<std::int32_t*, MemorySpace>& times, int t0, int n) {
  Kokkos::parallel_for("foxrl::Policy::times", Kokkos::RangePolicy<ExecSpace>(space, 0, n),
                       PolicyTimesKernel<MemorySpace>{times, t0});
}

}  // namespace foxrl::kernels
