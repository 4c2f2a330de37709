#pragma once
// KernelTrace: the GPU's own start and end time of every kernel, memcpy and
// memset that runs while it is on, graph nodes included, through CUPTI's
// activity records. ncu times each kernel alone, cold and serialised; this
// sees the iteration graph as it replays warm, so a benchmark can say how
// long each node takes in place and how much of an iteration is gaps
// between nodes. libcupti is loaded only when a trace starts (dlopen), so
// the benchmarks neither link it nor need it to run; builds without
// cupti.h (host backends) report it unavailable.

#include <cstdint>
#include <string>
#include <vector>

namespace foxrl::bench {

/// One kernel, copy or fill, on the CUPTI clock (the host's, in ns).
struct TracedActivity {
  std::uint64_t start_ns = 0;
  std::uint64_t end_ns = 0;
  std::uint64_t graph_node = 0;  ///< the graph node it ran as (0: launched directly)
  std::string name;              ///< the kernel's demangled name, "[memcpy]" or "[memset]"
};

class KernelTrace {
 public:
  /// Whether tracing can start here; if not, `why` says why.
  static bool available(std::string& why);
  /// Loads libcupti and starts recording; throws foxrl::UsageError when it
  /// cannot.
  void start();
  /// Stops recording and returns what ran since start(), in start order.
  /// The caller fences its work first.
  std::vector<TracedActivity> stop();
  /// Now on the CUPTI clock (the one TracedActivity uses).
  static std::uint64_t now();
};

}  // namespace foxrl::bench
