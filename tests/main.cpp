// Catch2 runner with Kokkos initialised around the whole session.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <Kokkos_Core.hpp>

int main(int argc, char* argv[]) {
  Catch::Session session;
  if (const int rc = session.applyCommandLine(argc, argv); rc != 0) return rc;
  Kokkos::ScopeGuard kokkos;
  return session.run();
}
