/* A fake cuBLAS for the CUDA target's host runtime tests (with
 * fake_libcuda.c): what the cuBLAS kernels of a --target cuda library ask
 * for, appended to $FAKE_CUDA_LOG, one line each:
 *   cublas create | cublas stream | cublas workspace BYTES
 *   cublas sgemm OPB OPA N M K LDB LDA LDC  (column-major, as called)
 *   cublas sgemm_batched OPB OPA N M K BATCH | cublas scopy N
 * Nothing is computed. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#define EXPORT __attribute__((visibility("default")))

__attribute__((format(printf, 1, 2))) static void record(const char *format,
                                                         ...) {
  const char *path = getenv("FAKE_CUDA_LOG");
  FILE *log = path ? fopen(path, "a") : NULL;
  if (!log)
    return;
  va_list args;
  va_start(args, format);
  fputs("cublas ", log);
  vfprintf(log, format, args);
  va_end(args);
  fputc('\n', log);
  fclose(log);
}

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
