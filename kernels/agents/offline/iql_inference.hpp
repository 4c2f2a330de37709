#pragma once
// Inference-side row kernels of the IQL learner: the greedy action of a
// softmax policy (argmax of its logits; the softmax is monotone, so no
// exponentials) and the twin-Q estimate min(Q1, Q2) per entry, which is
// what the value network regresses on.

#include "kernels/agents/offline/row_softmax.hpp"
#include "views/nn/matrix.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace foxrl {
namespace kernels {

/// Row i of row_argmax_actions: actions_out(i) = argmax of logits(i, :). A
/// named functor, not a KOKKOS_LAMBDA, as the two below (see
/// RecordStepInOneTeam in kernels/collect/record_step.hpp).
template <class MemorySpace>
struct RowArgmaxActionsKernel {
  ConstMatrix<MemorySpace> logits;
  Kokkos::View<std::int32_t*, MemorySpace> actions_out;
  int A;
  KOKKOS_INLINE_FUNCTION void operator()(int i) const { actions_out(i) = row_argmax(logits, i, A); }
};

/// actions_out(i) = the first j with the largest logits(i, j), for every row
/// of `logits` [R, A] ("foxrl::kernels::row_argmax_actions").
template <class ExecSpace>
void row_argmax_actions(const ExecSpace& space, const ConstMatrix<typename ExecSpace::memory_space>& logits,
                        const Kokkos::View<std::int32_t*, typename ExecSpace::memory_space>& actions_out) {
  const int R = static_cast<int>(logits.extent(0));
  const int A = static_cast<int>(logits.extent(1));
  Kokkos::parallel_for("foxrl::kernels::row_argmax_actions", Kokkos::RangePolicy<ExecSpace>(space, 0, R),
                       RowArgmaxActionsKernel<typename ExecSpace::memory_space>{logits, actions_out, A});
}

/// Row i of twin_q_min: out(i, j) = nan_min(q1(i, j), q2(i, j)) for j < A.
template <class MemorySpace>
struct TwinQMinKernel {
  ConstMatrix<MemorySpace> q1;
  ConstMatrix<MemorySpace> q2;
  MutableMatrix<MemorySpace> out;
  int A;
  KOKKOS_INLINE_FUNCTION void operator()(int i) const {
    for (int j = 0; j < A; ++j) out(i, j) = nan_min(q1(i, j), q2(i, j));
  }
};

/// out(i, j) = min(q1(i, j), q2(i, j)), NaN if either is NaN
/// ("foxrl::kernels::twin_q_min"); all three [R, A].
template <class ExecSpace>
void twin_q_min(const ExecSpace& space, const ConstMatrix<typename ExecSpace::memory_space>& q1,
                const ConstMatrix<typename ExecSpace::memory_space>& q2,
                const MutableMatrix<typename ExecSpace::memory_space>& out) {
  const int R = static_cast<int>(out.extent(0));
  const int A = static_cast<int>(out.extent(1));
  Kokkos::parallel_for("foxrl::kernels::twin_q_min", Kokkos::RangePolicy<ExecSpace>(space, 0, R),
                       TwinQMinKernel<typename ExecSpace::memory_space>{q1, q2, out, A});
}

/// Row i of first_column: out(i) = head(i, 0).
template <class MemorySpace>
struct FirstColumnKernel {
  ConstMatrix<MemorySpace> head;
  Kokkos::View<float*, MemorySpace> out;
  KOKKOS_INLINE_FUNCTION void operator()(int i) const { out(i) = head(i, 0); }
};

/// out(i) = head(i, 0) for the rows of a one-output head [R, 1]
/// ("foxrl::kernels::first_column").
template <class ExecSpace>
void first_column(const ExecSpace& space, const ConstMatrix<typename ExecSpace::memory_space>& head,
                  const Kokkos::View<float*, typename ExecSpace::memory_space>& out) {
  Kokkos::parallel_for("foxrl::kernels::first_column",
                       Kokkos::RangePolicy<ExecSpace>(space, 0, static_cast<int>(out.extent(0))),
                       FirstColumnKernel<typename ExecSpace::memory_space>{head, out});
}

}  // namespace kernels
}  // namespace foxrl
