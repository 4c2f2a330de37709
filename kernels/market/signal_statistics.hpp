#pragma once
// Kernels of the signal adapter (src/market/signal_adapter.hpp): the running
// per-feature statistics update (one deterministic launch) and the
// normalization of observations with them.

#include "core/compat.hpp"
#include "kernels/core/last_team.hpp"

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>

namespace foxrl::kernels {

/// The batch statistics in one launch, deterministic. A team reduces one
/// chunk of rows; its threads cover lanes p = g * dim + d (feature d, row
/// group g), so consecutive threads read consecutive floats of the
/// row-major batch (coalesced) and each lane keeps its sums in registers.
/// Sums are of x - shift and (x - shift)^2 with the running mean as the
/// shift (double): no cancellation in the batch M2 without a second pass.
/// Lanes meet in team scratch in group order, chunks in chunk order in the
/// last team to finish, which merges the batch into the running
/// statistics (Chan et al.).
template <class ExecSpace>
struct SignalStatisticsUpdate {
  using memory_space = typename ExecSpace::memory_space;
  using member_type = typename Kokkos::TeamPolicy<ExecSpace>::member_type;
  static constexpr int batch = 8;  ///< loads in flight per lane

  Kokkos::View<const float**, Kokkos::LayoutRight, memory_space> raw;
  Kokkos::View<double*, memory_space> count, mean, m2, partials;
  unsigned* ticket = nullptr;
  int n = 0, dim = 0, groups = 1, lanes = 1, chunk_rows = 1, chunks = 1;

  KOKKOS_INLINE_FUNCTION void operator()(const member_type& team) const {
    double* sums = static_cast<double*>(team.team_shmem().get_shmem(sizeof(double) * 2 * lanes));
    const int chunk = team.league_rank();
    const int r0 = chunk * chunk_rows;
    const int r1 = r0 + chunk_rows < n ? r0 + chunk_rows : n;
    for (int p = team.team_rank(); p < lanes; p += team.team_size()) {
      const int d = p % dim;
      const double shift = mean(d);
      double s1 = 0.0, s2 = 0.0;
      for (int r = r0 + p / dim; r < r1; r += batch * groups) {
        float x[batch];
        for (int j = 0; j < batch; ++j) {
          const int row = r + j * groups;
          x[j] = row < r1 ? raw(row, d) : 0.0f;
        }
        for (int j = 0; j < batch; ++j) {
          if (r + j * groups >= r1) break;
          const double dx = static_cast<double>(x[j]) - shift;
          s1 += dx;
          s2 += dx * dx;
        }
      }
      sums[2 * p] = s1;
      sums[2 * p + 1] = s2;
    }
    team.team_barrier();
    for (int d = team.team_rank(); d < dim; d += team.team_size()) {
      double s1, s2;
      add_groups(sums, d, s1, s2);
      if (chunks == 1) {
        merge(d, s1, s2);
      } else {
        partials(2 * (std::size_t(chunk) * dim + d)) = s1;
        partials(2 * (std::size_t(chunk) * dim + d) + 1) = s2;
      }
    }
    if (chunks == 1) return;
    if (!arrive_last(team, ticket, static_cast<unsigned>(chunks))) return;
    // The last team: lane (g, d) adds chunks g, g + groups, ... in order,
    // the loads of `batch` chunks in flight at once; then the groups in order.
    const volatile double* part = partials.data();
    team.team_barrier();  // every lane read its sums above before they are overwritten
    for (int p = team.team_rank(); p < lanes; p += team.team_size()) {
      const int d = p % dim;
      double s1 = 0.0, s2 = 0.0;
      for (int c = p / dim; c < chunks; c += batch * groups) {
        double v1[batch], v2[batch];
        for (int j = 0; j < batch; ++j) {
          const int cj = c + j * groups;
          v1[j] = cj < chunks ? part[2 * (std::size_t(cj) * dim + d)] : 0.0;
          v2[j] = cj < chunks ? part[2 * (std::size_t(cj) * dim + d) + 1] : 0.0;
        }
        for (int j = 0; j < batch; ++j) {
          s1 += v1[j];
          s2 += v2[j];
        }
      }
      sums[2 * p] = s1;
      sums[2 * p + 1] = s2;
    }
    team.team_barrier();
    for (int d = team.team_rank(); d < dim; d += team.team_size()) {
      double s1, s2;
      add_groups(sums, d, s1, s2);
      merge(d, s1, s2);
    }
  }

  /// Feature d's sums over the row groups of a team's lanes, in group order.
  KOKKOS_INLINE_FUNCTION void add_groups(const double* sums, int d, double& s1, double& s2) const {
    s1 = 0.0;
    s2 = 0.0;
    for (int g = 0; g < groups; ++g) {
      s1 += sums[2 * (g * dim + d)];
      s2 += sums[2 * (g * dim + d) + 1];
    }
  }

  /// Chan et al.: merges (n_a, mean_a, M2_a) with the batch's (n, mean, M2).
  KOKKOS_INLINE_FUNCTION void merge(int d, double s1, double s2) const {
    const double nb = n;
    const double shift = mean(d);
    const double batch_mean = shift + s1 / nb;
    const double batch_m2 = math::fmax(s2 - s1 * s1 / nb, 0.0);
    const double na = count(d), total = na + nb;
    const double delta = batch_mean - shift;
    mean(d) += delta * nb / total;
    m2(d) += batch_m2 + delta * delta * na * nb / total;
    count(d) = total;
  }
};

/// Launches `f` ("foxrl::SignalAdapter::update"): one team per chunk of
/// rows, min(team_size, f.lanes) threads, 2 doubles of team scratch per lane.
template <class ExecSpace>
void signal_statistics_update(const ExecSpace& space, const SignalStatisticsUpdate<ExecSpace>& f, int team_size) {
  Kokkos::TeamPolicy<ExecSpace> policy(space, f.chunks, team_size < f.lanes ? team_size : f.lanes);
  policy.set_scratch_size(0, Kokkos::PerTeam(sizeof(double) * 2 * std::size_t(f.lanes)));
  Kokkos::parallel_for("foxrl::SignalAdapter::update", compat::light(policy), f);
}

/// One feature's normalisation with the statistics as they are when a
/// kernel runs: clip((x - mean) / sqrt(var + eps), -clip, clip) where the
/// feature's mask is set (var = m2 / count; mean 0 and var 1 before any
/// count), x itself elsewhere. The one formula of signal_normalize and of
/// the replay sample's gather (kernels::ReplaySampleFunctor's transform).
template <class MemorySpace>
struct SignalNormalizeElement {
  Kokkos::View<const double*, MemorySpace> count, mean, m2;
  Kokkos::View<const std::uint8_t*, MemorySpace> mask;
  float clip = 0.0f;
  double eps = 0.0;

  KOKKOS_INLINE_FUNCTION float operator()(int d, float x) const {
    if (!mask(d)) return x;
    const double c = count(d);
    const double mu = c > 0 ? mean(d) : 0.0;
    const double var = c > 0 ? m2(d) / c : 1.0;
    const float y = static_cast<float>((x - mu) / math::sqrt(var + eps));
    return y > clip ? clip : (y < -clip ? -clip : y);
  }
};

/// signal_normalize's kernel: element idx of the rows of raw1, then of raw2, normalised by `f`.
/// A named functor, not a KOKKOS_LAMBDA (see RecordStepInOneTeam in kernels/collect/record_step.hpp).
template <class MemorySpace>
struct SignalNormalizeKernel {
  SignalNormalizeElement<MemorySpace> f;
  int D, n1;
  Kokkos::View<const float**, Kokkos::LayoutRight, MemorySpace> raw1;
  Kokkos::View<float**, Kokkos::LayoutRight, MemorySpace> out1;
  Kokkos::View<const float**, Kokkos::LayoutRight, MemorySpace> raw2;
  Kokkos::View<float**, Kokkos::LayoutRight, MemorySpace> out2;
  KOKKOS_INLINE_FUNCTION void operator()(int idx) const {
    const int i = idx / D, d = idx % D;
    if (i < n1)
      out1(i, d) = f(d, raw1(i, d));
    else
      out2(i - n1, d) = f(d, raw2(i - n1, d));
  }
};

/// out1 = f(raw1) element by element (SignalNormalizeElement), then the
/// same for the rows of raw2 into out2 (may be empty). One launch
/// ("foxrl::SignalAdapter::normalize").
template <class ExecSpace, class MemorySpace>
void signal_normalize(const ExecSpace& space, const SignalNormalizeElement<MemorySpace>& f,
                      const Kokkos::View<const float**, Kokkos::LayoutRight, MemorySpace>& raw1,
                      const Kokkos::View<float**, Kokkos::LayoutRight, MemorySpace>& out1,
                      const Kokkos::View<const float**, Kokkos::LayoutRight, MemorySpace>& raw2,
                      const Kokkos::View<float**, Kokkos::LayoutRight, MemorySpace>& out2) {
  const int D = static_cast<int>(f.mask.extent(0));
  const int n1 = static_cast<int>(raw1.extent(0));
  const int n = n1 + static_cast<int>(raw2.extent(0));
  if (n == 0) return;
  Kokkos::parallel_for("foxrl::SignalAdapter::normalize",
                       compat::light(Kokkos::RangePolicy<ExecSpace>(space, 0, n * D)),
                       SignalNormalizeKernel<MemorySpace>{f, D, n1, raw1, out1, raw2, out2});
}

}  // namespace foxrl::kernels
