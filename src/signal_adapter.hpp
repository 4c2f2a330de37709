#pragma once
// SignalAdapter: online normalization of observations on the device.
// Running per-feature count/mean/M2 (float64) are merged with each batch by
// Chan's parallel formula; the batch's own mean and M2 come from a device
// reduction, so no statistic ever travels to the host during training.
// normalized = clip((x - mean) / sqrt(var + epsilon), -clip, clip), var = M2 / count.
// Frozen (evaluation, inference), update() does nothing and the statistics
// stay as they are.

#include "compat.hpp"
#include "error.hpp"

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace foxrl::detail {
/// Sums of x - shift and (x - shift)^2: the value type of the normaliser's
/// one-pass team reduction.
struct ShiftedSums {
  double s1 = 0.0;
  double s2 = 0.0;
  KOKKOS_INLINE_FUNCTION ShiftedSums& operator+=(const ShiftedSums& o) {
    s1 += o.s1;
    s2 += o.s2;
    return *this;
  }
};
}  // namespace foxrl::detail

namespace Kokkos {
template <>
struct reduction_identity<foxrl::detail::ShiftedSums> {
  KOKKOS_FORCEINLINE_FUNCTION static foxrl::detail::ShiftedSums sum() { return foxrl::detail::ShiftedSums(); }
};
}  // namespace Kokkos

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
  /// nothing when frozen).
  void update(const ExecSpace& space, const const_obs_view& raw) {
    if (frozen_) return;
    check_dim(raw.extent(1), "update");
    const auto count = count_;
    const auto mean = mean_;
    const auto m2 = m2_;
    const int n = static_cast<int>(raw.extent(0));
    if (n == 0) return;
    using policy = Kokkos::TeamPolicy<ExecSpace>;
    using member = typename policy::member_type;
    constexpr bool host = Kokkos::SpaceAccessibility<Kokkos::HostSpace, memory_space>::accessible;
    // One pass over the batch: sums of x - shift and (x - shift)^2 with the
    // running mean as the shift (in double), which keeps the batch M2 free
    // of cancellation without a second pass over the rows.
    Kokkos::parallel_for(
        "foxrl::SignalAdapter::update", policy(space, dim_, host ? 1 : 256),
        KOKKOS_LAMBDA(const member& team) {
          const int d = team.league_rank();
          const double shift = mean(d);
          detail::ShiftedSums sums;
          Kokkos::parallel_reduce(
              Kokkos::TeamThreadRange(team, n),
              [&](int i, detail::ShiftedSums& acc) {
                const double dx = static_cast<double>(raw(i, d)) - shift;
                acc.s1 += dx;
                acc.s2 += dx * dx;
              },
              sums);
          Kokkos::single(Kokkos::PerTeam(team), [&]() {
            const double nb = n;
            const double batch_mean = shift + sums.s1 / nb;
            const double batch_m2 = math::fmax(sums.s2 - sums.s1 * sums.s1 / nb, 0.0);
            // Chan et al.: merge (n_a, mean_a, M2_a) with (n_b, mean_b, M2_b).
            const double na = count(d), total = na + nb;
            const double delta = batch_mean - mean(d);
            mean(d) += delta * nb / total;
            m2(d) += batch_m2 + delta * delta * na * nb / total;
            count(d) = total;
          });
        });
  }

  /// out = normalized raw (same shape; out may be raw itself). One launch.
  void normalize(const ExecSpace& space, const const_obs_view& raw, const obs_view& out) const {
    check_dim(raw.extent(1), "normalize");
    check_dim(out.extent(1), "normalize (output)");
    const auto count = count_;
    const auto mean = mean_;
    const auto m2 = m2_;
    const auto mask = mask_;
    const int D = dim_;
    const float clip = config_.clip;
    const double eps = config_.epsilon;
    const int n = static_cast<int>(raw.extent(0));
    Kokkos::parallel_for(
        "foxrl::SignalAdapter::normalize", Kokkos::RangePolicy<ExecSpace>(space, 0, n * D),
        KOKKOS_LAMBDA(int idx) {
          const int i = idx / D, d = idx % D;
          const float x = raw(i, d);
          if (!mask(d)) {
            out(i, d) = x;
            return;
          }
          const double c = count(d);
          const double mu = c > 0 ? mean(d) : 0.0;
          const double var = c > 0 ? m2(d) / c : 1.0;
          float y = static_cast<float>((x - mu) / math::sqrt(var + eps));
          y = y > clip ? clip : (y < -clip ? -clip : y);
          out(i, d) = y;
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

  int dim_;
  SignalAdapterConfig config_;
  bool frozen_ = false;
  Kokkos::View<double*, memory_space> count_, mean_, m2_;
  Kokkos::View<std::uint8_t*, memory_space> mask_;
};

}  // namespace foxrl
