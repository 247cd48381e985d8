/* A fake cuDNN 9 for the CUDA target's host runtime tests (with
 * fake_libcuda.c): what the cuDNN kernels of a --target cuda library ask
 * for, appended to $FAKE_CUDA_LOG, one line each:
 *   cudnn create | cudnn stream
 *   cudnn tensor D0,D1,... type T | cudnn filter D0,D1,... type T
 *   cudnn convolution PADS STRIDES DILATIONS (comma-separated) | cudnn group G
 *   cudnn math M
 *   cudnn find fwd|bwd_data|bwd_filter
 *   cudnn fwd|bwd_data|bwd_filter ALGO WORKSPACE_BYTES | cudnn add_tensor
 *   cudnn destroy tensor|filter|convolution
 * Find reports four algorithms, fastest first: one that failed, one that
 * needs tensor cores, algorithm 5 (an FFT or Winograd one in every
 * direction; trainc skips these three unless $TRAINC_CUDNN_TRANSFORMS=1),
 * then algorithm 1 (a GEMM in every direction); each with
 * $FAKE_CUDNN_WORKSPACE bytes of workspace (default 4096). Nothing is
 * computed. */
#include "fake_log.h"

#include <stdio.h>
#include <stdlib.h>

#define EXPORT __attribute__((visibility("default")))

#define record(...) fake_log("cudnn ", __VA_ARGS__)

/* "1,2,3" from an int array. */
static const char *list(int count, const int *values, char *out) {
  char *at = out;
  for (int i = 0; i < count; ++i)
    at += sprintf(at, i ? ",%d" : "%d", values[i]);
  *at = 0;
  return out;
}

typedef struct {
  int algo, status;
  float time;
  size_t memory;
  int determinism, mathType, reserved[3];
} Perf;

static int theHandle, descriptors;

EXPORT int cudnnCreate(void **handle) {
  record("create");
  *handle = &theHandle;
  return 0;
}
EXPORT int cudnnDestroy(void *handle) { return 0; }
EXPORT int cudnnSetStream(void *handle, void *stream) {
  record("stream");
  return 0;
}
EXPORT const char *cudnnGetErrorString(int status) {
  return "CUDNN_STATUS_FAKE";
}

static int create(void **descriptor) {
  *descriptor = &descriptors;
  return 0;
}
EXPORT int cudnnCreateTensorDescriptor(void **d) { return create(d); }
EXPORT int cudnnCreateFilterDescriptor(void **d) { return create(d); }
EXPORT int cudnnCreateConvolutionDescriptor(void **d) { return create(d); }
EXPORT int cudnnDestroyTensorDescriptor(void *d) {
  record("destroy tensor");
  return 0;
}
EXPORT int cudnnDestroyFilterDescriptor(void *d) {
  record("destroy filter");
  return 0;
}
EXPORT int cudnnDestroyConvolutionDescriptor(void *d) {
  record("destroy convolution");
  return 0;
}

EXPORT int cudnnSetTensorNdDescriptor(void *d, int type, int rank,
                                      const int *dims, const int *strides) {
  char text[256];
  record("tensor %s type %d", list(rank, dims, text), type);
  return 0;
}
EXPORT int cudnnSetFilterNdDescriptor(void *d, int type, int format, int rank,
                                      const int *dims) {
  char text[256];
  record("filter %s type %d", list(rank, dims, text), type);
  return 0;
}
EXPORT int cudnnSetConvolutionNdDescriptor(void *d, int rank, const int *pads,
                                           const int *strides,
                                           const int *dilations, int mode,
                                           int type) {
  char a[64], b[64], c[64];
  record("convolution %s %s %s", list(rank, pads, a), list(rank, strides, b),
         list(rank, dilations, c));
  return 0;
}
EXPORT int cudnnSetConvolutionGroupCount(void *d, int groups) {
  record("group %d", groups);
  return 0;
}
EXPORT int cudnnSetConvolutionMathType(void *d, int math) {
  record("math %d", math);
  return 0;
}

static int find(const char *which, int requested, int *returned, Perf *out) {
  record("find %s", which);
  const char *bytes = getenv("FAKE_CUDNN_WORKSPACE");
  size_t memory = bytes ? strtoull(bytes, NULL, 10) : 4096;
  Perf results[4] = {
      {.algo = 0, .status = 3, .time = 0.1f},
      {.algo = 1, .time = 0.2f, .memory = memory, .mathType = 1},
      {.algo = 5, .time = 0.3f, .memory = memory},
      {.algo = 1, .time = 0.4f, .memory = memory, .mathType = 3}};
  *returned = requested < 4 ? requested : 4;
  for (int i = 0; i < *returned; ++i)
    out[i] = results[i];
  return 0;
}
EXPORT int cudnnFindConvolutionForwardAlgorithm(void *h, void *x, void *w,
                                                void *c, void *y, int n,
                                                int *returned, Perf *out) {
  return find("fwd", n, returned, out);
}
EXPORT int cudnnFindConvolutionBackwardDataAlgorithm(void *h, void *w, void *dy,
                                                     void *c, void *dx, int n,
                                                     int *returned, Perf *out) {
  return find("bwd_data", n, returned, out);
}
EXPORT int cudnnFindConvolutionBackwardFilterAlgorithm(void *h, void *x,
                                                       void *dy, void *c,
                                                       void *dw, int n,
                                                       int *returned,
                                                       Perf *out) {
  return find("bwd_filter", n, returned, out);
}

EXPORT int cudnnConvolutionForward(void *h, const void *alpha, void *xd,
                                   const void *x, void *wd, const void *w,
                                   void *cd, int algo, void *space,
                                   size_t bytes, const void *beta, void *yd,
                                   void *y) {
  record("fwd %d %zu", algo, bytes);
  return 0;
}
EXPORT int cudnnConvolutionBackwardData(void *h, const void *alpha, void *wd,
                                        const void *w, void *dyd,
                                        const void *dy, void *cd, int algo,
                                        void *space, size_t bytes,
                                        const void *beta, void *dxd, void *dx) {
  record("bwd_data %d %zu", algo, bytes);
  return 0;
}
EXPORT int cudnnConvolutionBackwardFilter(void *h, const void *alpha, void *xd,
                                          const void *x, void *dyd,
                                          const void *dy, void *cd, int algo,
                                          void *space, size_t bytes,
                                          const void *beta, void *dwd,
                                          void *dw) {
  record("bwd_filter %d %zu", algo, bytes);
  return 0;
}
EXPORT int cudnnAddTensor(void *h, const void *alpha, void *ad, const void *a,
                          const void *beta, void *cd, void *c) {
  record("add_tensor");
  return 0;
}
