// Downstream use of an installed foxrl: create the run's context and run a
// labelled kernel on its instance.
#include <foxrl/core/execution_context.hpp>

#include <Kokkos_Core.hpp>

#include <cstdio>

int main(int argc, char** argv) {
  Kokkos::ScopeGuard kokkos(argc, argv);
  int sum = 0;
  {
    foxrl::ExecutionContext<> context(7);
    using Exec = foxrl::ExecutionContext<>::execution_space;
    Kokkos::parallel_reduce(
        "foxrl::downstream::sum", Kokkos::RangePolicy<Exec>(context.space(), 0, 100),
        KOKKOS_LAMBDA(int i, int& acc) { acc += i; }, sum);
    context.fence("downstream::done");
  }
  if (sum != 4950) {
    std::printf("foxrl install test: wrong sum %d\n", sum);
    return 1;
  }
  std::printf("foxrl install test: ok (backend %s)\n", Kokkos::DefaultExecutionSpace::name());
  return 0;
}
