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
#include "core/validate.hpp"
#include "kernels/market/signal_statistics.hpp"

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace foxrl {

struct SignalAdapterConfig {
  float clip = 10.0f;     ///< normalized values are clipped to [-clip, clip]
  double epsilon = 1e-8;  ///< added to the variance before the square root
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
    require_positive("SignalAdapter", "dim", dim);
    require_positive("foxrl::SignalAdapterConfig", "clip", config.clip);
    require_at_least("foxrl::SignalAdapterConfig", "epsilon", config.epsilon, 0.0);
    if (!normalize_mask.empty() && static_cast<int>(normalize_mask.size()) != dim) {
      throw LogicError("SignalAdapter: normalize_mask has " + std::to_string(normalize_mask.size()) + " entries for " +
                       std::to_string(dim) + " features");
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
    Kokkos::View<const std::uint8_t*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> host(mask.data(),
                                                                                                       dim);
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
  /// nothing when frozen). See kernels::SignalStatisticsUpdate.
  void update(const ExecSpace& space, const const_obs_view& raw) {
    if (frozen_) return;
    check_dim(raw.extent(1), "update");
    const int n = static_cast<int>(raw.extent(0));
    if (n == 0) return;
    kernels::SignalStatisticsUpdate<ExecSpace> f;
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
    kernels::signal_statistics_update(space, f, team_size);
  }

  /// out = normalized raw (same shape; out may be raw itself). One launch.
  void normalize(const ExecSpace& space, const const_obs_view& raw, const obs_view& out) const {
    check_dim(raw.extent(1), "normalize");
    check_dim(out.extent(1), "normalize (output)");
    if (raw.extent(0) != out.extent(0))
      throw LogicError("SignalAdapter::normalize: " + std::to_string(raw.extent(0)) + " rows in, " +
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

  /// out1 = normalized raw1, then the rows of raw2 into out2 (may be
  /// empty): the unchecked form of normalize and normalize_in_place.
  void launch_normalize(const ExecSpace& space, const const_obs_view& raw1, const obs_view& out1,
                        const const_obs_view& raw2, const obs_view& out2) const {
    kernels::signal_normalize(space, element_normalizer(), raw1, out1, raw2, out2);
  }

  /// The normalisation of one feature as a device functor f(d, x), reading
  /// the statistics when its kernel runs: what normalize() applies, for a
  /// kernel that writes observations anyway (the replay sample's gather).
  kernels::SignalNormalizeElement<memory_space> element_normalizer() const {
    return {count(),      mean(),         m2(), Kokkos::View<const std::uint8_t*, memory_space>(mask_),
            config_.clip, config_.epsilon};
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

  /// Replaces the statistics (e.g. from a checkpoint); `source` names the
  /// file they came from in messages (a damaged or foreign file).
  void import_state(const ExecSpace& space, const NormalizerState& s,
                    const std::string& source = "normalizer statistics") {
    const auto n = static_cast<std::size_t>(dim_);
    if (s.count.size() != n || s.mean.size() != n || s.m2.size() != n) {
      throw UsageError(source + ": normalizer: expected " + std::to_string(dim_) +
                       " entries per statistic, got count " + std::to_string(s.count.size()) + ", mean " +
                       std::to_string(s.mean.size()) + ", m2 " + std::to_string(s.m2.size()));
    }
    for (std::size_t d = 0; d < n; ++d) {
      const bool ok = std::isfinite(s.count[d]) && s.count[d] >= 0 && std::isfinite(s.m2[d]) && s.m2[d] >= 0 &&
                      std::isfinite(s.mean[d]);
      if (!ok) {
        throw UsageError(source + ": normalizer: feature " + std::to_string(d) + " has invalid statistics (count " +
                         std::to_string(s.count[d]) + ", mean " + std::to_string(s.mean[d]) + ", m2 " +
                         std::to_string(s.m2[d]) + ")");
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
      throw LogicError(std::string("SignalAdapter::") + what + ": observation has " + std::to_string(d) +
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
  /// written. Loading: `s` is read (dim() entries each) and checked
  /// (counts and M2 finite and >= 0, means finite; UsageError naming the
  /// tensor); import_state(s) then installs it.
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
    if constexpr (!Archive::saving) {
      const auto finite_nonnegative = [](double x) { return std::isfinite(x) && x >= 0.0; };
      a.template require_each<double>("normalizer.count", -1, finite_nonnegative, "must be finite and >= 0");
      a.template require_each<double>(
          "normalizer.mean", -1, [](double x) { return std::isfinite(x); }, "must be finite");
      a.template require_each<double>("normalizer.m2", -1, finite_nonnegative, "must be finite and >= 0");
    }
  }
};

}  // namespace foxrl
