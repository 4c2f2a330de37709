#!/usr/bin/env bash
# Installs what a host build of foxrl needs on Debian 12 (bookworm).
set -euo pipefail
packages=(
  cmake g++ ninja-build git ca-certificates
  libtrilinos-kokkos-dev libtrilinos-kokkos-kernels-dev  # Kokkos 3.4.1 + Kokkos Kernels (Serial)
  # An optimized BLAS behind Kokkos Kernels' host gemm (Debian's alternatives
  # make it libblas.so.3): the reference BLAS spends 86% of a CartPole run in
  # sgemm_ and makes host training about 5x slower. Single-threaded, so it
  # neither competes with Kokkos' host threads nor changes results with the
  # core count.
  libopenblas0-serial
  catch2 libcli11-dev nlohmann-json3-dev
  clang-format-14 clang-tidy-14  # ci/check-format.sh, ci/check-tidy.sh
  strace  # ci/crash-campaign.sh (kills at chosen system calls)
  python3  # perf/regress.py (the smoke run, its CTest checks) and perf/floors.py
  clang-14 libclang-rt-14-dev  # ci/run-fuzzers.sh: libFuzzer, ASan and UBSan runtimes
  libopenmpi-dev openmpi-bin  # data-parallel training (src/dist) and its mpirun tests (tests/mpi)
)
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "ci: all Debian packages present"
  exit 0
fi
echo "ci: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
