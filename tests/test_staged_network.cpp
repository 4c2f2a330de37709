// Where the fused small-network kernels place each float of the flat
// parameter layout in shared memory (kernels/nn/staged_network.hpp): the
// kernels copy the flat buffer in aligned groups of four and place each
// group through segment_of() and offset_in(). The reference is the
// staged layout written out independently: layer by layer, the weight
// [out, in] with row stride in | 1, then the bias; the layout's padding
// goes nowhere. Run inside a kernel on every backend, for ragged shapes
// (observation 65, hidden 120 and 84, single-unit layers, a deep plain
// network).
#include "kernels/nn/staged_network.hpp"
#include "support/test_spaces.hpp"

#include <catch2/catch.hpp>

#include <set>
#include <vector>

namespace {

struct Shape {
  int obs;
  std::vector<int> hidden;
  int outputs;
  foxrl::HeadKind head;
};

std::vector<Shape> shapes() {
  return {{65, {120, 84}, 3, foxrl::HeadKind::dueling}, {4, {120, 84}, 2, foxrl::HeadKind::dueling},
          {1, {1}, 1, foxrl::HeadKind::dueling},        {5, {7, 6}, 3, foxrl::HeadKind::dueling},
          {3, {5}, 4, foxrl::HeadKind::plain},          {7, {9, 11, 13, 3}, 5, foxrl::HeadKind::plain},
          {33, {31, 64}, 9, foxrl::HeadKind::dueling}};
}

/// The staged offset of every flat float (-1 for padding), from the
/// layout's shapes alone.
std::vector<int> reference_placement(const foxrl::NetworkLayout& layout, int& staged_floats) {
  std::vector<int> where(layout.total, -1);
  int at = 0;
  for (int l = 0; l < layout.num_layers; ++l) {
    const auto& s = layout.layers[l];
    const int ld = s.in % 2 == 1 ? s.in : s.in + 1;
    for (int j = 0; j < s.out; ++j)
      for (int k = 0; k < s.in; ++k) where[s.weight_offset + std::size_t(j) * s.in + k] = at + j * ld + k;
    at += s.out * ld;
    for (int j = 0; j < s.out; ++j) where[s.bias_offset + j] = at + j;
    at += s.out;
  }
  staged_floats = at;
  return where;
}

}  // namespace

TEMPLATE_TEST_CASE("StagedNetwork places every flat float where the staged layout says, in groups of four",
                   "[nn][staged]", FOXRL_TEST_SPACES) {
  using Exec = TestType;
  const Exec space;
  for (const auto& shape : shapes()) {
    const foxrl::NetworkLayout layout(shape.obs, shape.hidden, shape.outputs, shape.head);
    const foxrl::kernels::StagedNetwork net(layout);
    INFO("obs " << shape.obs << ", " << shape.hidden.size() << " hidden, " << layout.total << " flat floats");
    int staged_floats = 0;
    const auto expected = reference_placement(layout, staged_floats);
    REQUIRE(net.floats == staged_floats);
    REQUIRE(net.flat_floats == static_cast<int>(layout.total));
    REQUIRE(net.flat_floats % 4 == 0);  // the kernels copy whole float4 groups
    REQUIRE(net.divides_exactly(layout, 64));

    // As the kernels do it: one lookup per group of four, then each element.
    Kokkos::View<int*, typename Exec::memory_space> placed("foxrl::test::placed", layout.total);
    Kokkos::parallel_for(
        "foxrl::test::staged_placement", Kokkos::RangePolicy<Exec>(space, 0, layout.total / 4),
        KOKKOS_LAMBDA(int group) {
          const int f = 4 * group;
          const auto& g = net.segment_of(f);
          const int idx = f - g.begin;
          for (int e = 0; e < 4; ++e)
            placed(f + e) = idx + e < g.length ? foxrl::kernels::StagedNetwork::offset_in(g, idx + e) : -1;
        });
    const auto got = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), placed);
    int wrong = 0, staged = 0;
    std::set<int> targets;
    for (std::size_t f = 0; f < layout.total; ++f) {
      wrong += got(f) != expected[f] ? 1 : 0;
      if (got(f) >= 0) {
        ++staged;
        targets.insert(got(f));
        CHECK(got(f) < net.floats);
      }
    }
    CHECK(wrong == 0);
    // Every parameter lands once, on a place of its own.
    CHECK(staged == static_cast<int>(layout.parameter_count()));
    CHECK(targets.size() == layout.parameter_count());
  }
}

TEST_CASE("StagedNetwork's widths divide exactly and widest_hidden is the widest trunk layer", "[nn][staged]") {
  const foxrl::NetworkLayout layout(4, {120, 84}, 2);
  const foxrl::kernels::StagedNetwork net(layout);
  for (int l = 0; l < layout.num_layers; ++l) {
    CHECK(net.in[l].divisor() == static_cast<std::uint32_t>(layout.layers[l].in));
    CHECK(net.out[l].divisor() == static_cast<std::uint32_t>(layout.layers[l].out));
  }
  CHECK(foxrl::kernels::widest_hidden(layout) == 120);
  CHECK(foxrl::kernels::widest_hidden(foxrl::NetworkLayout(3, {}, 2, foxrl::HeadKind::plain)) == 1);
}
