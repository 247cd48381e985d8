//===- OpenBlasKernels.cpp - matmul and gemm on OpenBLAS ------------------===//
//
// Backend "openblas" of graph.matmul and graph.gemm (the convolutions are
// in OpenBlasConvKernels.cpp): cblas_sgemm / cblas_dgemm, see Blas.h for
// the threading.
//
//===----------------------------------------------------------------------===//
#include "lib/Runtime/kernels/Blas.h"

#include <cblas.h>

#include <climits>

extern "C" void openblas_set_num_threads(int);
extern "C" int openblas_get_num_threads(void);
// Stops OpenBLAS's worker threads (pthreads builds; weak: other builds may
// not have it). Calls on one thread do not start them again.
extern "C" int blas_thread_shutdown_(void) __attribute__((weak));

namespace trainc::rt {

namespace blas {

void call(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
          float alpha, const float *a, int64_t lda, const float *b, int64_t ldb,
          float beta, float *c, int64_t ldc) {
  cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans,
              transB ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b,
              ldb, beta, c, ldc);
}

void call(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
          double alpha, const double *a, int64_t lda, const double *b,
          int64_t ldb, double beta, double *c, int64_t ldc) {
  cblas_dgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans,
              transB ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b,
              ldb, beta, c, ldc);
}

bool prepare(const Launch &launch, std::initializer_list<int64_t> sizes,
             std::string &error) {
  for (int64_t size : sizes)
    if (size > INT_MAX)
      return fail(launch, error, "a matrix dimension exceeds BLAS's int range");
  // Cheap enough for every launch, and robust against whoever set more
  // threads since (OpenBLAS's setting is process-wide).
  if (openblas_get_num_threads() != 1)
    openblas_set_num_threads(1);
  // OpenBLAS's pthreads build starts a worker per core when it loads, and
  // a worker spins (sched_yield) for ~0.1 s after its start and after each
  // threaded call: on 2 cores that stalls the OpenMP barriers of oneDNN and
  // of the generated kernels by scheduler ticks (--tune timed the first
  // launch it measured at 8 ms instead of 0.45 in 4 of 13 compiles). On
  // one thread the workers are never needed: stop them once.
  static bool stopped = [] {
    if (blas_thread_shutdown_)
      blas_thread_shutdown_();
    return true;
  }();
  (void)stopped;
  return true;
}

} // namespace blas

namespace {

bool matmulKernel(const Launch &launch, void *const *inputs,
                  void *const *outputs, std::string &error) {
  if (!checkArity(launch, 2, 2, 1, 1, error))
    return false;
  Launch logical = launch; // the shapes the product sees
  bool transA = false, transB = false;
  if (!transposedOperand(launch, 0, "lhs_perm", logical.inputs[0].shape,
                         transA, error) ||
      !transposedOperand(launch, 1, "rhs_perm", logical.inputs[1].shape,
                         transB, error))
    return false;
  MatmulShape mm;
  if (!makeMatmulShape(logical, mm, error) ||
      !blas::prepare(launch, {mm.m * mm.batch, mm.n, mm.k}, error))
    return false;
  return withFloat(launch, launch.inputs[0].dtype, error, [&](auto tag) {
    using T = decltype(tag);
    const T *lhs = static_cast<const T *>(inputs[0]);
    const T *rhs = static_cast<const T *>(inputs[1]);
    T *out = static_cast<T *>(outputs[0]);
    int64_t m = mm.m, n = mm.n, k = mm.k;
    int64_t lda = transA ? m : k, ldb = transB ? k : n;
    // One shared rhs and a dense, untransposed lhs: a single [batch * m, k]
    // product.
    bool foldBatch = !transA;
    for (int64_t p = 0; p < mm.batch && foldBatch; ++p)
      foldBatch = mm.rhsIndex[p] == 0 && mm.lhsIndex[p] == p;
    if (foldBatch) {
      blas::parallelGemm<T>(false, transB, mm.batch * m, n, k, 1, lhs, k, rhs,
                            ldb, 0, out, n);
    } else if (mm.batch >= 4) {
#pragma omp parallel for schedule(static)
      for (int64_t p = 0; p < mm.batch; ++p)
        blas::gemm<T>(transA, transB, m, n, k, 1, lhs + mm.lhsIndex[p] * m * k,
                      lda, rhs + mm.rhsIndex[p] * k * n, ldb, 0,
                      out + p * m * n, n);
    } else {
      for (int64_t p = 0; p < mm.batch; ++p)
        blas::parallelGemm<T>(transA, transB, m, n, k, 1,
                              lhs + mm.lhsIndex[p] * m * k, lda,
                              rhs + mm.rhsIndex[p] * k * n, ldb, 0,
                              out + p * m * n, n);
    }
    return true;
  });
}

bool gemmKernel(const Launch &launch, void *const *inputs, void *const *outputs,
                std::string &error) {
  GemmShape g;
  if (!makeGemmShape(launch, g, error) ||
      !blas::prepare(launch, {g.m, g.n, g.k}, error))
    return false;
  return withFloat(launch, launch.inputs[0].dtype, error, [&](auto tag) {
    using T = decltype(tag);
    T *out = static_cast<T *>(outputs[0]);
    T beta = 0;
    if (g.hasC) { // out = c broadcast to [m, n], then beta * out
      const T *c = static_cast<const T *>(inputs[2]);
      for (int64_t i = 0; i < g.m; ++i)
        for (int64_t j = 0; j < g.n; ++j)
          out[i * g.n + j] = c[i * g.cStrides[0] + j * g.cStrides[1]];
      beta = static_cast<T>(g.beta);
    }
    blas::parallelGemm<T>(
        g.transA, g.transB, g.m, g.n, g.k, static_cast<T>(g.alpha),
        static_cast<const T *>(inputs[0]), g.transA ? g.m : g.k,
        static_cast<const T *>(inputs[1]), g.transB ? g.k : g.n, beta, out,
        g.n);
    return true;
  });
}

} // namespace

void registerOpenBlasKernels() {
  const char *backend = "openblas";
  TRAINC_RT_REGISTER("graph.matmul", backend, matmulKernel);
  TRAINC_RT_REGISTER("graph.gemm", backend, gemmKernel);
  registerOpenBlasConvKernels();
}

} // namespace trainc::rt
