#pragma once
// Kernels of DatasetRecorder (src/collect/dataset_recorder.hpp): one
// iteration's observations, actions and step results into the rows
// first .. first + N - 1 of the device dataset (rows past `total` are
// dropped: the last iteration may be recorded in part).

#include "views/envs/env_step.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace foxrl::kernels {

/// Element idx = i D + j of record_observations: out(first + i, j) =
/// obs(i, j) for rows first + i < total. A named functor, not a
/// KOKKOS_LAMBDA, as DatasetStepKernel (see RecordStepInOneTeam in
/// kernels/collect/record_step.hpp).
template <class MemorySpace>
struct DatasetObservationsKernel {
  Kokkos::View<float**, Kokkos::LayoutRight, MemorySpace> out;
  Kokkos::View<const float**, Kokkos::LayoutRight, MemorySpace> obs;
  std::int64_t first;
  std::int64_t total;
  int D;
  KOKKOS_INLINE_FUNCTION void operator()(int idx) const {
    const int i = idx / D, j = idx % D;
    if (first + i < total) out(first + i, j) = obs(i, j);
  }
};

/// out(first + i, :) = obs(i, :) for the N = num_envs rows of obs
/// ("foxrl::DatasetRecorder::observations").
template <class ExecSpace, class MemorySpace>
void record_observations(const ExecSpace& space, const Kokkos::View<float**, Kokkos::LayoutRight, MemorySpace>& out,
                         std::int64_t first, std::int64_t total, int num_envs,
                         const Kokkos::View<const float**, Kokkos::LayoutRight, MemorySpace>& obs) {
  const int D = static_cast<int>(out.extent(1));
  Kokkos::parallel_for("foxrl::DatasetRecorder::observations", Kokkos::RangePolicy<ExecSpace>(space, 0, num_envs * D),
                       DatasetObservationsKernel<MemorySpace>{out, obs, first, total, D});
}

/// Element idx = i D + j of the dataset's record_step: next(first + i, j),
/// and with j = 0 env i's action and step result, for rows first + i <
/// total.
template <class MemorySpace>
struct DatasetStepKernel {
  Kokkos::View<float**, Kokkos::LayoutRight, MemorySpace> next;
  Kokkos::View<std::int32_t*, MemorySpace> a;
  Kokkos::View<float*, MemorySpace> r;
  Kokkos::View<std::uint8_t*, MemorySpace> term;
  Kokkos::View<std::uint8_t*, MemorySpace> trunc;
  Kokkos::View<const std::int32_t*, MemorySpace> actions;
  EnvStep<MemorySpace> step;
  std::int64_t first;
  std::int64_t total;
  int D;
  KOKKOS_INLINE_FUNCTION void operator()(int idx) const {
    const int i = idx / D, j = idx % D;
    const std::int64_t row = first + i;
    if (row >= total) return;
    next(row, j) = step.next_observations(i, j);
    if (j == 0) {
      a(row) = actions(i);
      r(row) = step.rewards(i);
      term(row) = step.terminated(i);
      trunc(row) = step.truncated(i);
    }
  }
};

/// Row first + i of next, a, r, term, trunc = env i's action and step
/// result ("foxrl::DatasetRecorder::step").
template <class ExecSpace, class MemorySpace>
void record_step(const ExecSpace& space, const Kokkos::View<float**, Kokkos::LayoutRight, MemorySpace>& next,
                 const Kokkos::View<std::int32_t*, MemorySpace>& a, const Kokkos::View<float*, MemorySpace>& r,
                 const Kokkos::View<std::uint8_t*, MemorySpace>& term,
                 const Kokkos::View<std::uint8_t*, MemorySpace>& trunc, std::int64_t first, std::int64_t total,
                 int num_envs, const Kokkos::View<const std::int32_t*, MemorySpace>& actions,
                 const EnvStep<MemorySpace>& step) {
  const int D = static_cast<int>(next.extent(1));
  Kokkos::parallel_for("foxrl::DatasetRecorder::step", Kokkos::RangePolicy<ExecSpace>(space, 0, num_envs * D),
                       DatasetStepKernel<MemorySpace>{next, a, r, term, trunc, actions, step, first, total, D});
}

}  // namespace foxrl::kernels
