#pragma once
// What this build of foxrl is and what it can train (`foxrl info`), for bug
// reports and for checking a cluster module before a long job: the version
// and build, the Kokkos configuration (version, backends, the default
// execution space and its concurrency), how dense layers are computed, every
// visible device, the registered envs and algorithms, and the kernel paths
// with their state.

#include <string>

namespace foxrl {

/// The report `foxrl info` prints; with `kokkos_configuration`, Kokkos' own
/// print_configuration too.
std::string about_this_build(bool kokkos_configuration);

}  // namespace foxrl
