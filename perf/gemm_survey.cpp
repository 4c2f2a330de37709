// foxrl_gemm_survey: every fp32 algorithm cuBLASLt offers for the dense
// layers' products of the pipeline configs, timed warm on this GPU, beside
// cuBLAS' own choice (cublasSgemm, what RowMajorGemm calls) and the first
// of cuBLASLt's heuristics (what EpilogueGemm keeps). It answers one
// question before a per-shape algorithm choice is built: how much of the
// gemms' time a better algorithm would save, shape by shape.
//
// No Kokkos: plain cuBLAS / cuBLASLt on one stream, operands filled with
// random values once. Each candidate runs twice on the same inputs and its
// outputs are compared bit for bit (a candidate whose result changes run
// to run cannot serve a bit-exact resume). Prints one JSON line per
// candidate and a summary table per shape.
//
//   foxrl_gemm_survey [--repeats 5] [--calls 200] [--algos 32] [--shapes TEXT]
//
// --shapes keeps the products whose name contains TEXT (e.g. "dW").
// Every split-K candidate is also timed with its slices added in place
// (CUBLASLT_REDUCTION_SCHEME_INPLACE, at its own and at other slice
// counts: no separate reduction kernel; "variant":"inplace" lines), the
// question before the weight-gradient products drop their reduction
// launch (perf/NOTES.md).
//
// Times are per call inside a replayed graph of `calls` products (warm
// operands in L2, as in the iteration graph).
//
// Only built in CUDA builds (perf/CMakeLists.txt).

#include "gemm_probe.hpp"

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using foxrl::perf::check;
using foxrl::perf::col_major;
using foxrl::perf::ColMajor;
using foxrl::perf::Libraries;
using foxrl::perf::Shape;
using foxrl::perf::Timer;

namespace {

int algo_attr(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t attr) {
  std::uint32_t v = 0;
  std::size_t written = 0;
  if (cublasLtMatmulAlgoConfigGetAttribute(&algo, attr, &v, sizeof(v), &written) != CUBLAS_STATUS_SUCCESS) return -1;
  return static_cast<int>(v);
}

}  // namespace

int main(int argc, char** argv) {
  int repeats = 5, calls = 200, max_algos = 32;
  std::string only;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    const int v = std::atoi(argv[i + 1]);
    if (a == "--shapes")
      only = argv[i + 1];
    else if (a == "--repeats")
      repeats = v;
    else if (a == "--calls")
      calls = v;
    else if (a == "--algos")
      max_algos = v;
    else {
      std::fprintf(stderr, "usage: foxrl_gemm_survey [--repeats N] [--calls N] [--algos N] [--shapes TEXT]\n");
      return 2;
    }
  }
  const std::vector<Shape> shapes = {
      {"cartpole-throughput", "collector L1 4096x256<-256", 'f', 4096, 256, 256, false},
      {"cartpole-throughput", "collector L0 4096x256<-4", 'f', 4096, 4, 256, true},
      {"cartpole-throughput", "update [s;s'] L1 2048x256<-256", 'f', 2048, 256, 256, false},
      {"cartpole-throughput", "update [s;s'] L0 2048x256<-4", 'f', 2048, 4, 256, true},
      {"cartpole-throughput", "target s' L1 1024x256<-256", 'f', 1024, 256, 256, false},
      {"cartpole-throughput", "dX L1 1024x256", 'x', 1024, 256, 256, false},
      {"cartpole-throughput", "dW L1 256x256 over 1024", 'w', 1024, 256, 256, false},
      {"cartpole-throughput", "dW L0 256x4 over 1024", 'w', 1024, 4, 256, false},
      {"market-throughput", "collector L1 4096x512<-512", 'f', 4096, 512, 512, false},
      {"market-throughput", "collector L0 4096x512<-65", 'f', 4096, 65, 512, true},
      {"market-throughput", "update [s;s'] L1 2048x512<-512", 'f', 2048, 512, 512, false},
      {"market-throughput", "update [s;s'] L0 2048x512<-65", 'f', 2048, 65, 512, true},
      {"market-throughput", "target s' L1 1024x512<-512", 'f', 1024, 512, 512, false},
      {"market-throughput", "target s' L0 1024x512<-65", 'f', 1024, 65, 512, true},
      {"market-throughput", "dX L1 1024x512", 'x', 1024, 512, 512, false},
      {"market-throughput", "dW L1 512x512 over 1024", 'w', 1024, 512, 512, false},
      {"market-throughput", "dW L0 512x65 over 1024", 'w', 1024, 65, 512, false},
      {"padded", "collector L0 4096x512<-68", 'f', 4096, 68, 512, true},
      {"padded", "collector L0 4096x512<-72", 'f', 4096, 72, 512, true},
      {"padded", "update [s;s'] L0 2048x512<-68", 'f', 2048, 68, 512, true},
      {"padded", "target s' L0 1024x512<-68", 'f', 1024, 68, 512, true},
      {"padded", "dW L0 512x68 over 1024", 'w', 1024, 68, 512, false},
      {"padded", "collector L0 4096x256<-8", 'f', 4096, 8, 256, true},
  };

  Libraries libs;
  cudaStream_t stream = libs.stream;
  cublasHandle_t blas = libs.blas;
  cublasLtHandle_t lt = libs.lt;
  void* workspace = libs.workspace;
  const std::size_t workspace_bytes = Libraries::workspace_bytes;
  std::printf("# %s, %d SMs; fp32 (CUBLAS_COMPUTE_32F), median of %d replays of a CUDA graph of %d calls\n",
              libs.prop.name, libs.prop.multiProcessorCount, repeats, calls);

  std::mt19937 rng(1);
  std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
  Timer timer(stream);
  for (const Shape& s : shapes) {
    if (!only.empty() && std::string(s.what).find(only) == std::string::npos) continue;
    const ColMajor c = col_major(s);
    const std::size_t a_elems = std::size_t(c.lda) * (c.ta == CUBLAS_OP_N ? c.k : c.m);
    const std::size_t b_elems = std::size_t(c.ldb) * (c.tb == CUBLAS_OP_N ? c.n : c.k);
    const std::size_t d_elems = std::size_t(c.ldd) * c.n;
    std::vector<float> host(std::max({a_elems, b_elems, d_elems}));
    float *A, *B, *D, *D2, *bias;
    check(cudaMalloc(&A, a_elems * 4), "A");
    check(cudaMalloc(&B, b_elems * 4), "B");
    check(cudaMalloc(&D, d_elems * 4), "D");
    check(cudaMalloc(&D2, d_elems * 4), "D2");
    check(cudaMalloc(&bias, std::size_t(c.m) * 4), "bias");
    const auto fill = [&](float* p, std::size_t n) {
      for (std::size_t i = 0; i < n; ++i) host[i] = uni(rng);
      check(cudaMemcpy(p, host.data(), n * 4, cudaMemcpyHostToDevice), "fill");
    };
    fill(A, a_elems);
    fill(B, b_elems);
    fill(bias, std::size_t(c.m));
    const float one = 1.0f, zero = 0.0f;
    const double flops = 2.0 * c.m * c.n * c.k;
    // cuBLAS' own choice (plain product; the epilogue's work is not in it).
    const double sgemm_us = timer.median_us(
        [&] {
          check(cublasSgemm(blas, c.ta, c.tb, c.m, c.n, c.k, &one, A, c.lda, B, c.ldb, &zero, D, c.ldd), "sgemm");
        },
        calls, repeats);

    cublasLtMatmulDesc_t desc;
    check(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "desc");
    check(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &c.ta, sizeof(c.ta)), "ta");
    check(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &c.tb, sizeof(c.tb)), "tb");
    const cublasLtEpilogue_t epi = s.relu_bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
    check(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi)), "epilogue");
    if (s.relu_bias)
      check(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)), "bias");
    cublasLtMatrixLayout_t la, lb, ld;
    check(cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, c.ta == CUBLAS_OP_N ? c.m : c.k, c.ta == CUBLAS_OP_N ? c.k : c.m,
                                     c.lda),
          "layout a");
    check(cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, c.tb == CUBLAS_OP_N ? c.k : c.n, c.tb == CUBLAS_OP_N ? c.n : c.k,
                                     c.ldb),
          "layout b");
    check(cublasLtMatrixLayoutCreate(&ld, CUDA_R_32F, c.m, c.n, c.ldd), "layout d");
    cublasLtMatmulPreference_t pref;
    check(cublasLtMatmulPreferenceCreate(&pref), "pref");
    const std::uint64_t ws = workspace_bytes;
    check(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)),
          "pref ws");
    std::vector<cublasLtMatmulHeuristicResult_t> results(max_algos);
    int found = 0;
    check(cublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, ld, ld, pref, max_algos, results.data(), &found),
          "heuristic");
    double first_us = 0, best_us = 1e30;
    int best = -1;
    std::vector<float> r1(d_elems), r2(d_elems);
    // Times one algorithm (false: the library refused it); prints its line.
    const auto time_algo = [&](const cublasLtMatmulAlgo_t& algo, int rank, const char* variant, double& us,
                               bool& same) {
      const auto run = [&](float* out) {
        return cublasLtMatmul(lt, desc, &one, A, la, B, lb, &zero, out, ld, out, ld, &algo, workspace, workspace_bytes,
                              stream);
      };
      if (run(D) != CUBLAS_STATUS_SUCCESS) return false;
      check(run(D2), "run twice");
      check(cudaStreamSynchronize(stream), "sync");
      check(cudaMemcpy(r1.data(), D, d_elems * 4, cudaMemcpyDeviceToHost), "r1");
      check(cudaMemcpy(r2.data(), D2, d_elems * 4, cudaMemcpyDeviceToHost), "r2");
      same = std::memcmp(r1.data(), r2.data(), d_elems * 4) == 0;
      us = timer.median_us([&] { check(run(D), "lt"); }, calls, repeats);
      std::printf(
          "{\"bench\":\"gemm_survey\",\"config\":\"%s\",\"shape\":\"%s\",\"rank\":%d,\"variant\":\"%s\","
          "\"us\":%.3f,\"tflops\":%.2f,\"tile\":%d,\"stages\":%d,\"splitk\":%d,\"reduction\":%d,\"swizzle\":%d,"
          "\"algo_id\":%d,\"same_bits_twice\":%s}\n",
          s.config, s.what, rank, variant, us, flops / us * 1e-6, algo_attr(algo, CUBLASLT_ALGO_CONFIG_TILE_ID),
          algo_attr(algo, CUBLASLT_ALGO_CONFIG_STAGES_ID), algo_attr(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM),
          algo_attr(algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME), algo_attr(algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING),
          algo_attr(algo, CUBLASLT_ALGO_CONFIG_ID), same ? "true" : "false");
      return true;
    };
    double inplace_best_us = 1e30;
    for (int i = 0; i < found; ++i) {
      if (results[i].state != CUBLAS_STATUS_SUCCESS) continue;
      double us = 0;
      bool same = false;
      if (!time_algo(results[i].algo, i, "heuristic", us, same)) continue;
      if (i == 0) first_us = us;
      if (same && us < best_us) {
        best_us = us;
        best = i;
      }
      // The same tile with its split-K slices added in place, at its own
      // slice count and at fewer and more.
      const int splits = algo_attr(results[i].algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM);
      if (splits <= 1) continue;
      for (const int k : {splits / 4, splits / 2, splits, splits * 2}) {
        if (k < 2) continue;
        cublasLtMatmulAlgo_t algo = results[i].algo;
        const std::uint32_t scheme = CUBLASLT_REDUCTION_SCHEME_INPLACE, slices = std::uint32_t(k);
        if (cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &slices, sizeof(slices)) !=
                CUBLAS_STATUS_SUCCESS ||
            cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &scheme,
                                                 sizeof(scheme)) != CUBLAS_STATUS_SUCCESS)
          continue;
        cublasLtMatmulHeuristicResult_t checked{};
        if (cublasLtMatmulAlgoCheck(lt, desc, la, lb, ld, ld, &algo, &checked) != CUBLAS_STATUS_SUCCESS ||
            checked.workspaceSize > workspace_bytes)
          continue;
        if (time_algo(algo, i, "inplace", us, same) && same) inplace_best_us = std::min(inplace_best_us, us);
      }
    }
    std::printf(
        "# %-20s %-34s sgemm %7.2f us | lt first %7.2f | lt best %7.2f (rank %d of %d) | in place best %7.2f | "
        "%.2f TFLOP/s\n",
        s.config, s.what, sgemm_us, first_us, best_us, best, found, inplace_best_us < 1e29 ? inplace_best_us : -1.0,
        flops / std::min(best_us, sgemm_us) * 1e-6);
    std::fflush(stdout);
    cublasLtMatmulPreferenceDestroy(pref);
    cublasLtMatrixLayoutDestroy(la);
    cublasLtMatrixLayoutDestroy(lb);
    cublasLtMatrixLayoutDestroy(ld);
    cublasLtMatmulDescDestroy(desc);
    for (float* p : {A, B, D, D2, bias}) cudaFree(p);
  }
  return 0;
}
