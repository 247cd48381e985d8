/* A fake cuBLAS for the CUDA target's host runtime tests (with
 * fake_libcuda.c): what the cuBLAS kernels of a --target cuda library ask
 * for, appended to $FAKE_CUDA_LOG, one line each:
 *   cublas create | cublas stream | cublas workspace BYTES
 *   cublas sgemm OPB OPA N M K LDB LDA LDC  (column-major, as called)
 *   cublas sgemm_batched OPB OPA N M K BATCH | cublas scopy N
 * Nothing is computed. */
#include "fake_log.h"

#include <stdio.h>
#include <stdlib.h>

#define EXPORT __attribute__((visibility("default")))

#define record(...) fake_log("cublas ", __VA_ARGS__)

static int theHandle;

EXPORT int cublasCreate_v2(void **handle) {
  record("create");
  *handle = &theHandle;
  return 0;
}
EXPORT int cublasDestroy_v2(void *handle) { return 0; }
EXPORT int cublasSetStream_v2(void *handle, void *stream) {
  record("stream");
  return 0;
}
EXPORT int cublasSetWorkspace_v2(void *handle, void *workspace, size_t bytes) {
  record("workspace %zu", bytes);
  return 0;
}
EXPORT int cublasSgemm_v2(void *handle, int opA, int opB, int m, int n, int k,
                          const float *alpha, const float *a, int lda,
                          const float *b, int ldb, const float *beta, float *c,
                          int ldc) {
  record("sgemm %d %d %d %d %d %d %d %d", opA, opB, m, n, k, lda, ldb, ldc);
  return 0;
}
EXPORT int cublasSgemmStridedBatched(void *handle, int opA, int opB, int m,
                                     int n, int k, const float *alpha,
                                     const float *a, int lda, long long strideA,
                                     const float *b, int ldb, long long strideB,
                                     const float *beta, float *c, int ldc,
                                     long long strideC, int batch) {
  record("sgemm_batched %d %d %d %d %d %d", opA, opB, m, n, k, batch);
  return 0;
}
EXPORT int cublasScopy_v2(void *handle, int n, const float *x, int incx,
                          float *y, int incy) {
  record("scopy %d", n);
  return 0;
}
