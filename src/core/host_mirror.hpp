#pragma once
// host_mirror(view): a host View to copy a device View into, made without
// any Kokkos launch. create_mirror_view zero-fills a new host allocation
// with a kernel on the default host instance (and fences it), which a run
// must not do: every launch belongs to the run's instance. Where the View
// already lives in host memory the View itself is returned, as
// create_mirror_view does.

#include <Kokkos_Core.hpp>

#include <string>
#include <type_traits>

namespace foxrl {

template <class View>
auto host_mirror(const View& view) {
  using mirror_type = typename View::HostMirror;
  if constexpr (std::is_same_v<typename mirror_type::memory_space, typename View::memory_space>) {
    return mirror_type(view);
  } else {
    const auto& l = view.layout();
    return mirror_type(Kokkos::view_alloc(Kokkos::WithoutInitializing, view.label() + "_mirror"), l);
  }
}

}  // namespace foxrl
