#pragma once
// SignalAdapter: online normalization of observations on the device.
// Running per-feature count/mean/M2 (float64) are merged with each batch by
// Chan's parallel formula; the batch's own mean and M2 come from a device
// reduction, so no statistic ever travels to the host during training.
// normalized = clip((x - mean) / sqrt(var + epsilon), -clip, clip), var = M2 / count.
// Frozen (evaluation, inference), update() does nothing and the statistics
// stay as they are.

#include "core/compat.hpp"
#include "core/error.hpp"
#include "kernels/core/reduce_scratch.hpp"

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace foxrl::detail {

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
    if (!kernels::arrive_last(team, ticket, static_cast<unsigned>(chunks))) return;
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

}  // namespace foxrl::detail

namespace foxrl {

struct SignalAdapterConfig {
  float clip = 10.0f;      ///< normalized values are clipped to [-clip, clip]
  double epsilon = 1e-8;   ///< added to the variance before the square root
};

/// Normalizer statistics on the host (checkpoints). All vectors have one
/// entry per feature.
struct NormalizerState {
  std::vector<double> count, mean, m2;
};

template <class ExecSpace>
class SignalAdapter {
 public:
  using memory_space = typename ExecSpace::memory_space;
  using obs_view = Kokkos::View<float**, Kokkos::LayoutRight, memory_space>;
  using const_obs_view = Kokkos::View<const float**, Kokkos::LayoutRight, memory_space>;

  /// `normalize_mask` (optional, one entry per feature): 0 passes a feature
  /// through unchanged (e.g. the position of a market observation).
  SignalAdapter(const ExecSpace& space, int dim, SignalAdapterConfig config = {},
                const std::vector<std::uint8_t>& normalize_mask = {})
      : dim_(dim), config_(config) {
    if (dim <= 0) throw UsageError("SignalAdapter: dimension must be positive, got " + std::to_string(dim));
    if (!(config.clip > 0)) throw UsageError("SignalAdapter: clip must be positive");
    if (!normalize_mask.empty() && static_cast<int>(normalize_mask.size()) != dim) {
      throw UsageError("SignalAdapter: normalize_mask has " + std::to_string(normalize_mask.size()) +
                       " entries for " + std::to_string(dim) + " features");
    }
    count_ = Kokkos::View<double*, memory_space>(Kokkos::view_alloc(space, "foxrl::SignalAdapter::count"), dim);
    mean_ = Kokkos::View<double*, memory_space>(Kokkos::view_alloc(space, "foxrl::SignalAdapter::mean"), dim);
    m2_ = Kokkos::View<double*, memory_space>(Kokkos::view_alloc(space, "foxrl::SignalAdapter::m2"), dim);
    partials_ = Kokkos::View<double*, memory_space>(
        Kokkos::view_alloc(space, Kokkos::WithoutInitializing, "foxrl::SignalAdapter::partials"),
        std::size_t(max_chunks) * std::size_t(dim) * 2);
    ticket_ = Kokkos::View<unsigned, memory_space>(Kokkos::view_alloc(space, "foxrl::SignalAdapter::ticket"));
    mask_ = Kokkos::View<std::uint8_t*, memory_space>(
        Kokkos::view_alloc(space, Kokkos::WithoutInitializing, "foxrl::SignalAdapter::mask"), dim);
    std::vector<std::uint8_t> mask = normalize_mask.empty() ? std::vector<std::uint8_t>(dim, 1) : normalize_mask;
    Kokkos::View<const std::uint8_t*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> host(
        mask.data(), dim);
    Kokkos::deep_copy(space, mask_, host);
    // `mask` is a local: the copy must finish before it goes away.
    compat::fence(space, "foxrl::SignalAdapter::upload_mask");
  }

  int dim() const { return dim_; }
  const SignalAdapterConfig& config() const { return config_; }
  bool frozen() const { return frozen_; }
  /// Freeze for evaluation/inference (update() becomes a no-op).
  void set_frozen(bool frozen) { frozen_ = frozen; }

  /// Merges the batch raw [B, dim] into the running statistics (one launch;
  /// nothing when frozen). See detail::SignalStatisticsUpdate.
  void update(const ExecSpace& space, const const_obs_view& raw) {
    if (frozen_) return;
    check_dim(raw.extent(1), "update");
    const int n = static_cast<int>(raw.extent(0));
    if (n == 0) return;
    detail::SignalStatisticsUpdate<ExecSpace> f;
    f.raw = raw;
    f.count = count_;
    f.mean = mean_;
    f.m2 = m2_;
    f.partials = partials_;
    f.ticket = ticket_.data();
    f.n = n;
    f.dim = dim_;
    const int team_size = host ? 1 : update_team_threads;
    f.groups = std::max(1, team_size / dim_);
    f.lanes = f.groups * dim_;
    // Chunks of at least min_chunk_rows rows, at most max_chunks of them.
    const int wanted = std::min(max_chunks, (n + min_chunk_rows - 1) / min_chunk_rows);
    f.chunk_rows = (n + wanted - 1) / wanted;
    f.chunks = (n + f.chunk_rows - 1) / f.chunk_rows;
    Kokkos::TeamPolicy<ExecSpace> policy(space, f.chunks, std::min(team_size, f.lanes));
    policy.set_scratch_size(0, Kokkos::PerTeam(sizeof(double) * 2 * std::size_t(f.lanes)));
    Kokkos::parallel_for("foxrl::SignalAdapter::update", compat::light(policy), f);
  }

  /// out = normalized raw (same shape; out may be raw itself). One launch.
  void normalize(const ExecSpace& space, const const_obs_view& raw, const obs_view& out) const {
    check_dim(raw.extent(1), "normalize");
    check_dim(out.extent(1), "normalize (output)");
    if (raw.extent(0) != out.extent(0))
      throw UsageError("SignalAdapter::normalize: " + std::to_string(raw.extent(0)) + " rows in, " +
                       std::to_string(out.extent(0)) + " rows out");
    launch_normalize(space, raw, out, const_obs_view(), obs_view());
  }

  /// normalize(a, a) and normalize(b, b) in one launch (a sampled batch's
  /// states and next states).
  void normalize_in_place(const ExecSpace& space, const obs_view& a, const obs_view& b) const {
    check_dim(a.extent(1), "normalize_in_place");
    check_dim(b.extent(1), "normalize_in_place");
    launch_normalize(space, a, a, b, b);
  }

  /// out1 = normalized raw1, then the rows of raw2 into out2 (may be empty).
  /// Public only because CUDA's extended lambdas may not live in private
  /// members; use normalize or normalize_in_place.
  void launch_normalize(const ExecSpace& space, const const_obs_view& raw1, const obs_view& out1,
                        const const_obs_view& raw2, const obs_view& out2) const {
    const auto count = count_;
    const auto mean = mean_;
    const auto m2 = m2_;
    const auto mask = mask_;
    const int D = dim_;
    const float clip = config_.clip;
    const double eps = config_.epsilon;
    const int n1 = static_cast<int>(raw1.extent(0));
    const int n = n1 + static_cast<int>(raw2.extent(0));
    if (n == 0) return;
    Kokkos::parallel_for(
        "foxrl::SignalAdapter::normalize", compat::light(Kokkos::RangePolicy<ExecSpace>(space, 0, n * D)),
        KOKKOS_LAMBDA(int idx) {
          const int i = idx / D, d = idx % D;
          const bool first = i < n1;
          const float x = first ? raw1(i, d) : raw2(i - n1, d);
          float y = x;
          if (mask(d)) {
            const double c = count(d);
            const double mu = c > 0 ? mean(d) : 0.0;
            const double var = c > 0 ? m2(d) / c : 1.0;
            y = static_cast<float>((x - mu) / math::sqrt(var + eps));
            y = y > clip ? clip : (y < -clip ? -clip : y);
          }
          if (first) out1(i, d) = y;
          else out2(i - n1, d) = y;
        });
  }

  /// update (unless frozen) then normalize: the per-iteration call.
  void process(const ExecSpace& space, const const_obs_view& raw, const obs_view& out) {
    update(space, raw);
    normalize(space, raw, out);
  }

  /// Copies the statistics to the host (fences the instance: checkpoint time only).
  NormalizerState export_state(const ExecSpace& space) const {
    NormalizerState s{std::vector<double>(dim_), std::vector<double>(dim_), std::vector<double>(dim_)};
    deep_copy_to_host(space, s.count, count_);
    deep_copy_to_host(space, s.mean, mean_);
    deep_copy_to_host(space, s.m2, m2_);
    compat::fence(space, "foxrl::SignalAdapter::export_state");
    return s;
  }

  /// Replaces the statistics (e.g. from a checkpoint).
  void import_state(const ExecSpace& space, const NormalizerState& s) {
    const auto n = static_cast<std::size_t>(dim_);
    if (s.count.size() != n || s.mean.size() != n || s.m2.size() != n) {
      throw UsageError("SignalAdapter::import_state: expected " + std::to_string(dim_) +
                       " entries per statistic, got count " + std::to_string(s.count.size()) + ", mean " +
                       std::to_string(s.mean.size()) + ", m2 " + std::to_string(s.m2.size()));
    }
    for (std::size_t d = 0; d < n; ++d) {
      if (!(s.count[d] >= 0) || !(s.m2[d] >= 0) || !std::isfinite(s.mean[d])) {
        throw UsageError("SignalAdapter::import_state: feature " + std::to_string(d) +
                         " has invalid statistics (count " + std::to_string(s.count[d]) + ", mean " +
                         std::to_string(s.mean[d]) + ", m2 " + std::to_string(s.m2[d]) + ")");
      }
    }
    deep_copy_from_host(space, count_, s.count);
    deep_copy_from_host(space, mean_, s.mean);
    deep_copy_from_host(space, m2_, s.m2);
    compat::fence(space, "foxrl::SignalAdapter::import_state");
  }

  Kokkos::View<const double*, memory_space> count() const { return count_; }
  Kokkos::View<const double*, memory_space> mean() const { return mean_; }
  Kokkos::View<const double*, memory_space> m2() const { return m2_; }

 private:
  using host_unmanaged = Kokkos::View<double*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

  void check_dim(std::size_t d, const char* what) const {
    if (static_cast<int>(d) != dim_) {
      throw UsageError(std::string("SignalAdapter::") + what + ": observation has " + std::to_string(d) +
                       " features, the adapter " + std::to_string(dim_));
    }
  }
  static void deep_copy_to_host(const ExecSpace& space, std::vector<double>& dst,
                                const Kokkos::View<double*, memory_space>& src) {
    Kokkos::deep_copy(space, host_unmanaged(dst.data(), dst.size()), src);
  }
  static void deep_copy_from_host(const ExecSpace& space, const Kokkos::View<double*, memory_space>& dst,
                                  const std::vector<double>& src) {
    Kokkos::deep_copy(space, dst, host_unmanaged(const_cast<double*>(src.data()), src.size()));
  }

  static constexpr bool host = Kokkos::SpaceAccessibility<Kokkos::HostSpace, memory_space>::accessible;
  static constexpr int update_team_threads = 256;
  static constexpr int max_chunks = 64;
  static constexpr int min_chunk_rows = 32;

  int dim_;
  SignalAdapterConfig config_;
  bool frozen_ = false;
  Kokkos::View<double*, memory_space> count_, mean_, m2_;
  Kokkos::View<std::uint8_t*, memory_space> mask_;
  Kokkos::View<double*, memory_space> partials_;  ///< [max_chunks, dim, 2] chunk sums of update()
  Kokkos::View<unsigned, memory_space> ticket_;   ///< zero between launches

 public:
  /// The statistics in a trainer state (normalizer.count, .mean, .m2 as
  /// float64 host vectors: exact). Saving: `s` = export_state() (fences),
  /// written. Loading: `s` is read (dim() entries each); import_state(s)
  /// then validates and installs it.
  template <class Archive>
  void visit_host_state(Archive& a, const ExecSpace& space, NormalizerState& s) const {
    if constexpr (Archive::saving) {
      s = export_state(space);
    } else {
      const auto d = static_cast<std::size_t>(dim_);
      s = NormalizerState{std::vector<double>(d), std::vector<double>(d), std::vector<double>(d)};
    }
    a.host_vector("normalizer.count", s.count);
    a.host_vector("normalizer.mean", s.mean);
    a.host_vector("normalizer.m2", s.m2);
  }
};

}  // namespace foxrl
