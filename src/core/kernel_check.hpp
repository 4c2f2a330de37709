#pragma once
// KernelCheck: a debugging mode that names the kernel a device error comes
// from. Kernels run asynchronously, so an illegal address or a failed launch
// is reported at the next synchronisation, far from its kernel; with the
// check installed, every Kokkos kernel is followed by a device
// synchronisation and an error check (through Kokkos' tools callbacks), and
// a failure throws foxrl::Error naming the kernel's label. Much slower:
// for finding a failing kernel, not for production runs. On host backends
// there is nothing asynchronous to check; the labels are still recorded.
//
//   FOXRL_CHECK_KERNELS=1 foxrl train ...

#include <string>

namespace foxrl {

class KernelCheck {
 public:
  /// Installs the check if the environment's FOXRL_CHECK_KERNELS is set
  /// (and not "0"); returns whether it did. Call after Kokkos::initialize.
  static bool install_from_environment();
  /// Installs the check (replaces any other tools callbacks of kernels).
  static void install();
  /// Removes the check (the kernels' tools callbacks are cleared).
  static void uninstall();
  /// Whether the check is installed.
  static bool installed();
  /// The label of the last kernel launched while installed ("" before).
  static std::string last_kernel();
};

}  // namespace foxrl
