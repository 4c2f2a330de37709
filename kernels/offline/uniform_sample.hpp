#pragma once
// The uniform sampler of an offline dataset (src/offline/offline_sampler.hpp):
// one launch fills a Batch with transitions drawn uniformly with
// replacement from the dataset's rows. Row k of sample call c is
// counter_index(seed, c, k, T): a pure function of (seed, call, k), so a
// batch is the same on every backend and the host can recompute it.

#include "kernels/core/counter_rng.hpp"
#include "views/offline/offline_storage.hpp"
#include "views/replay/batch.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace foxrl::kernels {

/// Element idx = k D + j of uniform_sample: feature j of batch row k from
/// its drawn dataset row, and with j = 0 the row's other fields. A named
/// functor, not a KOKKOS_LAMBDA (see RecordStepInOneTeam in
/// kernels/collect/record_step.hpp).
template <class MemorySpace>
struct UniformSampleKernel {
  OfflineStorage<MemorySpace> data;
  Batch<MemorySpace> out;
  std::uint64_t seed;
  std::uint64_t call;
  std::uint32_t rows;
  float gamma;
  int D;
  KOKKOS_INLINE_FUNCTION void operator()(int idx) const {
    const int k = idx / D, j = idx % D;
    const std::int64_t row = counter_index(seed, call, static_cast<std::uint64_t>(k), rows);
    out.states(k, j) = data.observations(row, j);
    out.next_states(k, j) = data.next_observations(row, j);
    if (j == 0) {
      out.actions(k) = data.actions(row);
      out.rewards(k) = data.rewards(row);
      out.discounts(k) = data.terminated(row) != 0 ? 0.0f : gamma;
      out.indices(k) = row;
      out.is_weights(k) = 1.0f;
    }
  }
};

/// Fills `out` (B = out.size() rows) from `data` ("foxrl::OfflineDataset::
/// sample"): states, actions, rewards, next states of the drawn rows,
/// discounts gamma * (1 - terminated) (one-step transitions: a truncated
/// row bootstraps from its real next state), indices = the rows, weights 1.
/// `seed` is the sampler's derived seed, `call` the sample counter; the
/// dataset holds 1 .. 2^32 - 1 rows (checked where it is loaded).
template <class ExecSpace, class MemorySpace>
void uniform_sample(const ExecSpace& space, const OfflineStorage<MemorySpace>& data, const Batch<MemorySpace>& out,
                    std::uint64_t seed, std::uint64_t call, float gamma) {
  const int B = out.size(), D = data.obs_dim();
  const auto rows = static_cast<std::uint32_t>(data.size());
  // One thread per (batch row, feature): the feature copies are coalesced;
  // each thread recomputes its row's draw (two hashes) rather than reading
  // it from another thread.
  Kokkos::parallel_for("foxrl::OfflineDataset::sample", Kokkos::RangePolicy<ExecSpace>(space, 0, B * D),
                       UniformSampleKernel<MemorySpace>{data, out, seed, call, rows, gamma, D});
}

}  // namespace foxrl::kernels
