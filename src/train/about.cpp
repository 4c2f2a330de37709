#include "train/about.hpp"

#include "agents/learner_registry.hpp"
#include "core/build_info.hpp"
#include "core/execution_context.hpp"
#include "core/kernel_paths.hpp"
#include "envs/env_registry.hpp"

#include <Kokkos_Core.hpp>

#include <sstream>
#include <string>

namespace foxrl {
namespace {

std::string kokkos_version() {
  return std::to_string(KOKKOS_VERSION / 10000) + "." + std::to_string(KOKKOS_VERSION / 100 % 100) + "." +
         std::to_string(KOKKOS_VERSION % 100);
}

/// Backends compiled into this Kokkos, in Kokkos' own names.
std::string enabled_backends() {
  std::string list;
  auto add = [&](const char* name) { list += list.empty() ? name : std::string(", ") + name; };
#ifdef KOKKOS_ENABLE_SERIAL
  add("Serial");
#endif
#ifdef KOKKOS_ENABLE_OPENMP
  add("OpenMP");
#endif
#ifdef KOKKOS_ENABLE_THREADS
  add("Threads");
#endif
#ifdef KOKKOS_ENABLE_CUDA
  add("Cuda");
#endif
#ifdef KOKKOS_ENABLE_HIP
  add("HIP");
#endif
#ifdef KOKKOS_ENABLE_SYCL
  add("SYCL");
#endif
  return list;
}

void print_devices(std::ostream& out) {
#ifdef KOKKOS_ENABLE_CUDA
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) count = 0;
  out << "devices:        " << count << " CUDA device" << (count == 1 ? "" : "s") << "\n";
  for (int d = 0; d < count; ++d) {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, d) != cudaSuccess) continue;
    out << "  [" << d << "] " << p.name << ", sm_" << p.major << p.minor << ", " << p.multiProcessorCount << " SMs, "
        << (p.totalGlobalMem >> 20) << " MiB, L2 " << (p.l2CacheSize >> 10) << " KiB"
        << (d == Kokkos::Cuda().cuda_device() ? " (in use)" : "") << "\n";
  }
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  out << "CUDA:           runtime " << runtime / 1000 << "." << runtime % 1000 / 10 << ", driver supports "
      << driver / 1000 << "." << driver % 1000 / 10 << "\n";
#else
  out << "devices:        host only (" << Kokkos::DefaultHostExecutionSpace::name() << ", concurrency "
      << Kokkos::DefaultHostExecutionSpace().concurrency() << ")\n";
#endif
}

}  // namespace

std::string about_this_build(bool kokkos_configuration) {
  using Exec = Kokkos::DefaultExecutionSpace;
  std::ostringstream out;
  out << "foxrl " FOXRL_VERSION " (commit " << build_commit() << ")\n"
      << "build:          " << FOXRL_BUILD_TYPE << ", C++" << __cplusplus / 100 % 100 << "\n"
      << "Kokkos:         " << kokkos_version() << ", backends " << enabled_backends() << "\n"
      << "default space:  " << Exec::name() << " (concurrency " << Exec().concurrency() << ")\n"
      << "runs on:        " << ExecutionContext<Exec>::backend_name()
      << " (one execution-space instance per run; on GPUs wrapping its own stream)\n"
#ifdef KOKKOS_ENABLE_CUDA
      << "dense layers:   cuBLAS (Kokkos Kernels' cuBLAS handle bound to the run's stream)\n";
#else
      << "dense layers:   host BLAS through Kokkos Kernels (link an optimized one: OpenBLAS, MKL, BLIS)\n";
#endif
  print_devices(out);
  const auto padded = [](std::string name) {
    name.resize(10, ' ');
    return name;
  };
  out << "envs:\n";
  for (const auto& e : registered_envs()) out << "  " << padded(e.name) << e.summary << "\n";
  out << "online algorithms (foxrl train --set algo=...):\n";
  for (const auto& l : online_learners()) out << "  " << padded(l.name) << l.summary << "\n";
  out << "offline algorithms (foxrl train-offline --algo ...):\n";
  for (const auto& l : offline_learners()) out << "  " << padded(l.name) << l.summary << "\n";
  out << "kernel paths:\n" << kernel_paths_report();
  if (kokkos_configuration) {
    std::ostringstream config;
    Kokkos::print_configuration(config, true);
    out << "\nKokkos configuration:\n" << config.str();
  }
  return out.str();
}

}  // namespace foxrl
