#pragma once
// StreamGraphs: replays a fixed sequence of launches on the run's stream as
// one CUDA graph. A training update is a few dozen small launches whose
// arguments never change between updates (the same Views, the same
// shapes); launched one by one, the host's launch cost of each exceeds the
// device time of most of them. Captured once and replayed, the whole
// sequence costs one graph launch, and the device runs it back to back.
//
// A replay runs exactly the captured kernels with exactly the captured
// arguments, so results are bit for bit those of launching them directly.
// The work handed to run() must therefore consist of launches only: no host
// reads, no host state that changes between calls (such state belongs in
// the key, or outside the work), no allocation and no fence. The first
// call for a key runs the work directly (lazily sized buffers and library
// heuristics settle there), the second captures it; when capture is
// impossible (an unsupported call, a Kokkos Tools callback that fences) the
// work runs directly from then on, for that key.
//
// Host backends have nothing to capture: run() calls the work. On CUDA the
// work runs directly while a Kokkos Tools callback is attached (a profiling
// tool, the one-instance audit, the kernel check of core/kernel_check.hpp):
// a tool expects to see every kernel, which a replay would hide, and Kokkos
// fences around each callback, which capture forbids. The audit therefore
// sees exactly the launches that are captured when no tool is attached.
// The kernel path cuda_graphs off (core/kernel_paths.hpp) turns the graphs off.

#include "core/error.hpp"
#include "core/kernel_paths.hpp"

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#ifdef KOKKOS_ENABLE_CUDA
#include <cuda_runtime.h>
#endif

namespace foxrl {

/// What identifies one captured sequence: every pointer and size its
/// launches bake in, and every host-side choice that changes them.
using StreamGraphKey = std::vector<std::uintptr_t>;

/// Host backends: run() runs the work.
template <class ExecSpace>
class StreamGraphs {
 public:
  explicit StreamGraphs(bool /*enabled*/ = true) {}
  template <class Work>
  void run(const ExecSpace& /*space*/, const StreamGraphKey& /*key*/, Work&& work) {
    work();
  }
  /// Graph replays so far (always 0 here).
  std::int64_t replays() const { return 0; }
  /// Keys whose capture failed (always 0 here).
  int failed_captures() const { return 0; }
  /// Distinct keys seen so far (always 0 here).
  std::size_t keys() const { return 0; }
};

#ifdef KOKKOS_ENABLE_CUDA

/// CUDA: capture on the second call per key, replay afterwards; see the
/// file comment.
template <>
class StreamGraphs<Kokkos::Cuda> {
 public:
  /// At most this many keys are captured; further keys run directly.
  static constexpr std::size_t max_graphs = 8;

  explicit StreamGraphs(bool enabled = true) : enabled_(enabled && kernel_path_on(KernelPath::cuda_graphs)) {}
  StreamGraphs(const StreamGraphs&) = delete;
  StreamGraphs& operator=(const StreamGraphs&) = delete;
  StreamGraphs(StreamGraphs&& other) noexcept { *this = std::move(other); }
  StreamGraphs& operator=(StreamGraphs&& other) noexcept {
    if (this != &other) {
      release();
      enabled_ = other.enabled_;
      entries_ = std::move(other.entries_);
      replays_ = other.replays_;
      failed_ = other.failed_;
      other.entries_.clear();
    }
    return *this;
  }
  ~StreamGraphs() { release(); }

  template <class Work>
  void run(const Kokkos::Cuda& space, const StreamGraphKey& work_key, Work&& work) {
    if (!enabled_ || Kokkos::Tools::profileLibraryLoaded() || capturing(space)) {
      work();
      return;
    }
    const StreamGraphKey key = with_kokkos_scratch(space, work_key);
    auto found = entries_.find(key);
    if (found == entries_.end()) {
      if (entries_.size() < max_graphs) entries_.emplace(key, Entry{});
      work();
      return;
    }
    Entry& entry = found->second;
    if (entry.state == Entry::direct) {
      work();
      return;
    }
    if (entry.state == Entry::warm) capture(space, entry, work);
    if (entry.state == Entry::captured) {
      check(cudaGraphLaunch(entry.exec, space.cuda_stream()), "cudaGraphLaunch");
      ++replays_;
    }
  }

  std::int64_t replays() const { return replays_; }
  int failed_captures() const { return failed_; }
  /// Distinct keys seen so far (at most max_graphs are kept): many keys and
  /// few replays mean the work's key (or the Kokkos scratch in it) changes
  /// from call to call.
  std::size_t keys() const { return entries_.size(); }

 private:
  struct Entry {
    enum State { warm, captured, direct };
    State state = warm;
    cudaGraphExec_t exec = nullptr;
  };

  /// Whether `space`'s stream is being captured (by an enclosing run():
  /// the enclosing graph then records this work's launches).
  static bool capturing(const Kokkos::Cuda& space) {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    check(cudaStreamIsCapturing(space.cuda_stream(), &status), "cudaStreamIsCapturing");
    return status != cudaStreamCaptureStatusNone;
  }

  /// `key` plus the instance's reduction, scan and team scratch buffers: a
  /// captured Kokkos reduction or team launch bakes their addresses in, and
  /// Kokkos replaces a buffer when a later launch needs a larger one. A
  /// graph is then never replayed with a freed buffer: its key is gone.
  static StreamGraphKey with_kokkos_scratch(const Kokkos::Cuda& space, StreamGraphKey key) {
    const auto* instance = space.impl_internal_space_instance();
    for (const void* p :
         {static_cast<const void*>(instance->m_scratchSpace), static_cast<const void*>(instance->m_scratchFlags),
          static_cast<const void*>(instance->m_scratchUnified), static_cast<const void*>(instance->m_scratchFunctor)})
      key.push_back(reinterpret_cast<std::uintptr_t>(p));
    for (const void* p : instance->m_team_scratch_ptr) key.push_back(reinterpret_cast<std::uintptr_t>(p));
    return key;
  }

  static void check(cudaError_t status, const char* what) {
    if (status != cudaSuccess)
      throw Error(std::string("foxrl::StreamGraphs: ") + what + ": " + cudaGetErrorString(status));
  }

  /// Captures `work` into entry.exec; on any failure, runs it directly and
  /// marks the key direct. The work launches nothing during capture, so
  /// running it afterwards is its one execution either way.
  template <class Work>
  void capture(const Kokkos::Cuda& space, Entry& entry, Work& work) {
    const cudaStream_t stream = space.cuda_stream();
    check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
    bool launched = true;
    try {
      work();
    } catch (...) {
      launched = false;
    }
    cudaGraph_t graph = nullptr;
    const cudaError_t ended = cudaStreamEndCapture(stream, &graph);
    cudaGraphExec_t exec = nullptr;
    const bool ok =
        launched && ended == cudaSuccess && graph != nullptr && cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess;
    if (graph != nullptr) cudaGraphDestroy(graph);
    if (!ok) {
      (void)cudaGetLastError();  // the failed capture's error is not the run's
      entry.state = Entry::direct;
      ++failed_;
      work();
      return;
    }
    entry.exec = exec;
    entry.state = Entry::captured;
  }

  void release() {
    for (auto& [key, entry] : entries_)
      if (entry.exec != nullptr) cudaGraphExecDestroy(entry.exec);
    entries_.clear();
  }

  bool enabled_ = true;
  std::map<StreamGraphKey, Entry> entries_;
  std::int64_t replays_ = 0;
  int failed_ = 0;
};

#endif  // KOKKOS_ENABLE_CUDA

}  // namespace foxrl
