#pragma once
// KokkosToolsAudit: records, through Kokkos Tools callbacks, every kernel
// launch, fence, allocation, deep copy and profiling region (push and pop)
// made while a callable runs, and checks them
// against the one-stream rule. Tests use it to prove a component stays on
// the run's instance; benchmarks use it to count launches per iteration.

#include "core/compat.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace foxrl {

/// What one audited region did.
struct AuditRecord {
  enum class LaunchKind { parallel_for, parallel_reduce, parallel_scan };
  struct Launch {
    LaunchKind kind;
    std::string name;
    std::uint32_t device_id;
    std::vector<std::string> regions = {};  ///< profiling regions open at launch, outermost first
  };
  struct Fence {
    std::string name;
    std::uint32_t device_id;
  };
  struct Allocation {
    std::string space;
    std::string label;
    std::uint64_t bytes;
  };

  /// A deep_copy between Views (or a fill: Kokkos reports those too): in a
  /// captured iteration each is a graph node of its own, like a launch.
  struct Copy {
    std::string dst_space, dst_label, src_space, src_label;
    std::uint64_t bytes;
  };

  /// A pushRegion or popRegion; a pop carries the name of the region it
  /// closed ("" for a region opened before the audit).
  struct RegionEvent {
    enum class Kind { push, pop };
    Kind kind;
    std::string name;
  };

  std::vector<Launch> launches;
  std::vector<Fence> fences;
  std::vector<Allocation> allocations;
  std::vector<Copy> copies;
  std::vector<RegionEvent> regions;

  /// Names of the regions pushed, in order.
  std::vector<std::string> regions_pushed() const;

  /// Launches whose device id is not `device_id` (one message per launch).
  std::vector<std::string> launches_off(std::uint32_t device_id) const;
  /// Fences of anything but `device_id`: global fences, fences of another
  /// instance, and the fences Kokkos inserts for a deep_copy without an
  /// instance.
  std::vector<std::string> fences_off(std::uint32_t device_id) const;
  /// Allocations whose label does not start with `prefix` (Kokkos' internal
  /// buffers, labelled "Kokkos::...", are exempt).
  std::vector<std::string> allocations_without_prefix(const std::string& prefix) const;
  /// Launches whose name does not start with `prefix`. Kokkos' own
  /// "Kokkos::View::initialization [label]" launches name the allocation's
  /// label after the bracket, and are checked by it.
  std::vector<std::string> launches_without_prefix(const std::string& prefix) const;

  /// All violations of the one-stream rule for instance `device_id`, with
  /// labels under `prefix`; empty when the region was clean.
  std::vector<std::string> violations(std::uint32_t device_id, const std::string& prefix = "foxrl::") const;
};

/// Installs the callbacks for its lifetime; only one may be alive at a time
/// (Kokkos Tools callbacks are process-wide).
class KokkosToolsAudit {
 public:
  KokkosToolsAudit();
  ~KokkosToolsAudit();
  KokkosToolsAudit(const KokkosToolsAudit&) = delete;
  KokkosToolsAudit& operator=(const KokkosToolsAudit&) = delete;

  /// Everything recorded so far.
  const AuditRecord& record() const;
  /// Forget what was recorded (e.g. after warm-up).
  void clear();
};

/// Runs `f` under an audit and returns what it did.
template <class F>
AuditRecord audit(F&& f) {
  KokkosToolsAudit audit;
  std::forward<F>(f)();
  return audit.record();
}

/// The identifier Kokkos Tools reports for launches on `space`.
template <class ExecSpace>
std::uint32_t tools_device_id(const ExecSpace& space) {
  return Kokkos::Tools::Experimental::device_id(space);
}

}  // namespace foxrl
