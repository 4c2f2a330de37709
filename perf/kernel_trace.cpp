// KernelTrace through CUPTI's activity API, loaded with dlopen. See
// kernel_trace.hpp.
#include "kernel_trace.hpp"

#include "core/error.hpp"

#include <algorithm>
#include <mutex>

#if __has_include(<cupti_activity.h>)
#include <cupti_activity.h>
#include <cupti_version.h>
#include <cxxabi.h>
#include <dlfcn.h>

#include <cstdlib>
#include <memory>
#define FOXRL_HAS_CUPTI 1
#else
#define FOXRL_HAS_CUPTI 0
#endif

namespace foxrl::bench {

#if FOXRL_HAS_CUPTI
namespace {

// The kernel record of this CUPTI (the versioned struct changes between
// CUDA releases; the fields used here exist in all of them).
#if CUPTI_API_VERSION >= 130000
using KernelRecord = CUpti_ActivityKernel10;
#else
using KernelRecord = CUpti_ActivityKernel9;
#endif
using MemcpyRecord = CUpti_ActivityMemcpy6;
using MemsetRecord = CUpti_ActivityMemset4;

struct Cupti {
  void* library = nullptr;
  CUptiResult (*register_callbacks)(CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc) = nullptr;
  CUptiResult (*enable)(CUpti_ActivityKind) = nullptr;
  CUptiResult (*disable)(CUpti_ActivityKind) = nullptr;
  CUptiResult (*flush_all)(uint32_t) = nullptr;
  CUptiResult (*next_record)(uint8_t*, size_t, CUpti_Activity**) = nullptr;
  CUptiResult (*timestamp)(uint64_t*) = nullptr;
  std::string error;
};

template <class F>
bool find(void* library, const char* name, F& f) {
  f = reinterpret_cast<F>(dlsym(library, name));
  return f != nullptr;
}

Cupti& cupti() {
  static Cupti c = [] {
    Cupti l;
    const char* env = std::getenv("FOXRL_CUPTI_LIBRARY");
    for (const char* name : {env, "libcupti.so", "libcupti.so.13", "libcupti.so.12"}) {
      if (name == nullptr || *name == '\0') continue;
      l.library = dlopen(name, RTLD_NOW | RTLD_LOCAL);
      if (l.library != nullptr) break;
    }
    if (l.library == nullptr) {
      l.error = "libcupti not found (set FOXRL_CUPTI_LIBRARY, or add the CUDA toolkit's lib folder to LD_LIBRARY_PATH)";
      return l;
    }
    const bool all = find(l.library, "cuptiActivityRegisterCallbacks", l.register_callbacks) &&
                     find(l.library, "cuptiActivityEnable", l.enable) &&
                     find(l.library, "cuptiActivityDisable", l.disable) &&
                     find(l.library, "cuptiActivityFlushAll", l.flush_all) &&
                     find(l.library, "cuptiActivityGetNextRecord", l.next_record) &&
                     find(l.library, "cuptiGetTimestamp", l.timestamp);
    if (!all) l.error = "libcupti lacks an activity function this build expects";
    return l;
  }();
  return c;
}

std::mutex records_mutex;
std::vector<TracedActivity>& records() {
  static std::vector<TracedActivity> r;
  return r;
}

std::string demangled(const char* name) {
  if (name == nullptr) return "?";
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> d(abi::__cxa_demangle(name, nullptr, nullptr, &status), std::free);
  return status == 0 && d ? std::string(d.get()) : std::string(name);
}

constexpr std::size_t buffer_bytes = 8u << 20;

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, buffer_bytes));
  *size = buffer_bytes;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  std::vector<TracedActivity> batch;
  CUpti_Activity* record = nullptr;
  while (cupti().next_record(buffer, valid, &record) == CUPTI_SUCCESS) {
    TracedActivity a;
    if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || record->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
      const auto* k = reinterpret_cast<const KernelRecord*>(record);
      a = {k->start, k->end, k->graphNodeId, demangled(k->name)};
    } else if (record->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
      const auto* m = reinterpret_cast<const MemcpyRecord*>(record);
      a = {m->start, m->end, m->graphNodeId, "[memcpy]"};
    } else if (record->kind == CUPTI_ACTIVITY_KIND_MEMSET) {
      const auto* m = reinterpret_cast<const MemsetRecord*>(record);
      a = {m->start, m->end, m->graphNodeId, "[memset]"};
    } else {
      continue;
    }
    batch.push_back(std::move(a));
  }
  std::free(buffer);
  const std::lock_guard<std::mutex> lock(records_mutex);
  records().insert(records().end(), batch.begin(), batch.end());
}

constexpr CUpti_ActivityKind traced_kinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                               CUPTI_ACTIVITY_KIND_MEMSET};

}  // namespace

bool KernelTrace::available(std::string& why) {
  why = cupti().error;
  return why.empty();
}

void KernelTrace::start() {
  std::string why;
  if (!available(why)) throw UsageError("kernel trace: " + why);
  {
    const std::lock_guard<std::mutex> lock(records_mutex);
    records().clear();
  }
  static const bool registered = cupti().register_callbacks(buffer_requested, buffer_completed) == CUPTI_SUCCESS;
  if (!registered) throw UsageError("kernel trace: cuptiActivityRegisterCallbacks failed");
  for (const auto kind : traced_kinds)
    if (cupti().enable(kind) != CUPTI_SUCCESS) throw UsageError("kernel trace: cuptiActivityEnable failed");
}

std::vector<TracedActivity> KernelTrace::stop() {
  for (const auto kind : traced_kinds) cupti().disable(kind);
  cupti().flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  std::vector<TracedActivity> out;
  {
    const std::lock_guard<std::mutex> lock(records_mutex);
    out.swap(records());
  }
  std::sort(out.begin(), out.end(),
            [](const TracedActivity& a, const TracedActivity& b) { return a.start_ns < b.start_ns; });
  return out;
}

std::uint64_t KernelTrace::now() {
  std::uint64_t t = 0;
  if (cupti().timestamp != nullptr) cupti().timestamp(&t);
  return t;
}

#else

bool KernelTrace::available(std::string& why) {
  why = "this build has no CUPTI (a CUDA build with the toolkit's cupti.h traces kernels)";
  return false;
}
void KernelTrace::start() {
  std::string why;
  available(why);
  throw UsageError("kernel trace: " + why);
}
std::vector<TracedActivity> KernelTrace::stop() { return {}; }
std::uint64_t KernelTrace::now() { return 0; }

#endif

}  // namespace foxrl::bench
