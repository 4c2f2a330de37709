#include "core/kokkos_tools_audit.hpp"

#include "core/error.hpp"

#include <sstream>

namespace foxrl {
namespace {

// Kokkos Tools callbacks are plain function pointers with no user data, so
// the active audit's record is process-wide.
AuditRecord* active_record = nullptr;

std::uint64_t next_kernel_id = 0;

// Regions open now (push/pop callbacks carry no id), innermost last.
std::vector<std::string> open_regions;

void record_launch(AuditRecord::LaunchKind kind, const char* name, std::uint32_t dev, std::uint64_t* kernel_id) {
  *kernel_id = next_kernel_id++;
  if (active_record != nullptr) {
    active_record->launches.push_back({kind, name, dev, open_regions});
  }
}

void on_begin_for(const char* name, std::uint32_t dev, std::uint64_t* id) {
  record_launch(AuditRecord::LaunchKind::parallel_for, name, dev, id);
}
void on_begin_reduce(const char* name, std::uint32_t dev, std::uint64_t* id) {
  record_launch(AuditRecord::LaunchKind::parallel_reduce, name, dev, id);
}
void on_begin_scan(const char* name, std::uint32_t dev, std::uint64_t* id) {
  record_launch(AuditRecord::LaunchKind::parallel_scan, name, dev, id);
}
void on_end(std::uint64_t) {}

// Kokkos 4 fences globally before each callback of a tool that did not
// declare otherwise at initialisation, which a tool attached through
// callbacks cannot do. That fence exists only because the audit is attached,
// so it is not recorded.
constexpr const char* tool_attachment_fence = "Kokkos::Tools::invoke_kokkosp_callback: Kokkos Profile Tool Fence";

void on_begin_fence(const char* name, std::uint32_t dev, std::uint64_t* id) {
  *id = next_kernel_id++;
  if (active_record != nullptr && std::string(name) != tool_attachment_fence) {
    active_record->fences.push_back({name, dev});
  }
}

void on_allocate(Kokkos::Tools::SpaceHandle space, const char* label, const void*, std::uint64_t bytes) {
  // Kokkos 4's CUDA team launches without level-1 scratch "allocate" a
  // zero-byte scratch pool on every launch; nothing is allocated.
  if (active_record != nullptr && bytes > 0) {
    active_record->allocations.push_back({space.name, label, bytes});
  }
}

void on_begin_deep_copy(Kokkos::Tools::SpaceHandle dst_space, const char* dst_label, const void*,
                        Kokkos::Tools::SpaceHandle src_space, const char* src_label, const void*, std::uint64_t bytes) {
  if (active_record != nullptr)
    active_record->copies.push_back({dst_space.name, dst_label, src_space.name, src_label, bytes});
}

void on_push_region(const char* name) {
  open_regions.emplace_back(name);
  if (active_record != nullptr) active_record->regions.push_back({AuditRecord::RegionEvent::Kind::push, name});
}

void on_pop_region() {
  std::string name;
  if (!open_regions.empty()) {
    name = open_regions.back();
    open_regions.pop_back();
  }
  if (active_record != nullptr) active_record->regions.push_back({AuditRecord::RegionEvent::Kind::pop, name});
}

const char* kind_name(AuditRecord::LaunchKind kind) {
  switch (kind) {
    case AuditRecord::LaunchKind::parallel_for:
      return "parallel_for";
    case AuditRecord::LaunchKind::parallel_reduce:
      return "parallel_reduce";
    case AuditRecord::LaunchKind::parallel_scan:
      return "parallel_scan";
  }
  return "launch";
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

// Kokkos' own launches for View initialisation carry the View's label:
// "Kokkos::View::initialization [label]" (and similar for destruction).
bool is_kokkos_view_launch_for(const std::string& name, const std::string& prefix) {
  if (!starts_with(name, "Kokkos::View::")) return false;
  const auto open = name.find('[');
  return open != std::string::npos && name.compare(open + 1, prefix.size(), prefix) == 0;
}

AuditRecord storage_of_the_active_audit;

}  // namespace

std::vector<std::string> AuditRecord::regions_pushed() const {
  std::vector<std::string> out;
  for (const auto& r : regions)
    if (r.kind == RegionEvent::Kind::push) out.push_back(r.name);
  return out;
}

std::vector<std::string> AuditRecord::launches_off(std::uint32_t device_id) const {
  std::vector<std::string> out;
  for (const auto& l : launches) {
    if (l.device_id != device_id) {
      std::ostringstream msg;
      msg << kind_name(l.kind) << " '" << l.name << "' ran on device id " << l.device_id
          << ", not on the run's instance (device id " << device_id << ")";
      out.push_back(msg.str());
    }
  }
  return out;
}

std::vector<std::string> AuditRecord::fences_off(std::uint32_t device_id) const {
  std::vector<std::string> out;
  for (const auto& f : fences) {
    if (f.device_id != device_id) {
      std::ostringstream msg;
      msg << "fence '" << f.name << "' (device id " << f.device_id
          << ") is not a fence of the run's instance (device id " << device_id << ")";
      out.push_back(msg.str());
    }
  }
  return out;
}

std::vector<std::string> AuditRecord::allocations_without_prefix(const std::string& prefix) const {
  std::vector<std::string> out;
  for (const auto& a : allocations) {
    // Kokkos' own buffers (scratch memory, reduction space) are not ours.
    if (!starts_with(a.label, prefix) && !starts_with(a.label, "Kokkos::")) {
      out.push_back("allocation '" + a.label + "' in " + a.space + " (" + std::to_string(a.bytes) +
                    " bytes) does not start with '" + prefix + "'");
    }
  }
  return out;
}

std::vector<std::string> AuditRecord::launches_without_prefix(const std::string& prefix) const {
  std::vector<std::string> out;
  for (const auto& l : launches) {
    if (!starts_with(l.name, prefix) && !is_kokkos_view_launch_for(l.name, prefix)) {
      out.push_back(std::string(kind_name(l.kind)) + " '" + l.name + "' is not labelled '" + prefix + "...'");
    }
  }
  return out;
}

std::vector<std::string> AuditRecord::violations(std::uint32_t device_id, const std::string& prefix) const {
  std::vector<std::string> out = launches_off(device_id);
  for (auto& v : fences_off(device_id)) out.push_back(std::move(v));
  for (auto& v : allocations_without_prefix(prefix)) out.push_back(std::move(v));
  for (auto& v : launches_without_prefix(prefix)) out.push_back(std::move(v));
  return out;
}

KokkosToolsAudit::KokkosToolsAudit() {
  if (active_record != nullptr) {
    throw Error("foxrl::KokkosToolsAudit: another audit is already active");
  }
  storage_of_the_active_audit = AuditRecord{};
  active_record = &storage_of_the_active_audit;
  namespace KTE = Kokkos::Tools::Experimental;
  KTE::set_begin_parallel_for_callback(on_begin_for);
  KTE::set_end_parallel_for_callback(on_end);
  KTE::set_begin_parallel_reduce_callback(on_begin_reduce);
  KTE::set_end_parallel_reduce_callback(on_end);
  KTE::set_begin_parallel_scan_callback(on_begin_scan);
  KTE::set_end_parallel_scan_callback(on_end);
  KTE::set_begin_fence_callback(on_begin_fence);
  KTE::set_end_fence_callback(on_end);
  KTE::set_allocate_data_callback(on_allocate);
  KTE::set_begin_deep_copy_callback(on_begin_deep_copy);
  open_regions.clear();
  KTE::set_push_region_callback(on_push_region);
  KTE::set_pop_region_callback(on_pop_region);
}

KokkosToolsAudit::~KokkosToolsAudit() {
  namespace KTE = Kokkos::Tools::Experimental;
  KTE::set_begin_parallel_for_callback(nullptr);
  KTE::set_end_parallel_for_callback(nullptr);
  KTE::set_begin_parallel_reduce_callback(nullptr);
  KTE::set_end_parallel_reduce_callback(nullptr);
  KTE::set_begin_parallel_scan_callback(nullptr);
  KTE::set_end_parallel_scan_callback(nullptr);
  KTE::set_begin_fence_callback(nullptr);
  KTE::set_end_fence_callback(nullptr);
  KTE::set_allocate_data_callback(nullptr);
  KTE::set_begin_deep_copy_callback(nullptr);
  KTE::set_push_region_callback(nullptr);
  KTE::set_pop_region_callback(nullptr);
  active_record = nullptr;
}

const AuditRecord& KokkosToolsAudit::record() const { return storage_of_the_active_audit; }

void KokkosToolsAudit::clear() { storage_of_the_active_audit = AuditRecord{}; }

}  // namespace foxrl
