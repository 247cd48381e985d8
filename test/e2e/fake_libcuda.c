/* A fake CUDA driver for the CUDA target's host runtime tests: what a
 * --target cuda library asks the driver for, without a GPU.
 *
 * "Device" memory is host memory (copies and memsets really happen, so a
 * step's loss and the parameters read back are what was uploaded); kernels
 * are not run. Every call the runtime makes is appended to $FAKE_CUDA_LOG,
 * one line each:
 *   init | device <ordinal> | context | module <fatbin bytes> | function NAME
 *   alloc BYTES | free | memset BYTES | htod BYTES | dtoh BYTES
 *   launch NAME GRID BLOCK (a launch that runs), captured NAME GRID BLOCK
 *   (one recorded into a graph) | capture | end capture | graph LAUNCHES
 *   (a replay of a graph of that many launches)
 * The fatbin's magic is checked at module load. The environment shapes the
 * device: FAKE_CUDA_CC (compute capability, default 90), FAKE_CUDA_DEVICES
 * (default 1), FAKE_CUDA_MEMORY (bytes the allocations may total). */
#include "fake_log.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

enum {
  OK = 0,
  OUT_OF_MEMORY = 2,
  INVALID_IMAGE = 200,
  STREAM_CAPTURE_UNSUPPORTED = 900
};

static size_t allocated;
/* Stream capture: launches are counted into the graph, not run. */
static int capturing;
static long captured;

#define record(...) fake_log("", __VA_ARGS__)

static long env(const char *name, long fallback) {
  const char *value = getenv(name);
  return value ? atol(value) : fallback;
}

EXPORT int cuInit(unsigned flags) {
  record("init");
  return OK;
}
EXPORT int cuDeviceGetCount(int *count) {
  *count = (int)env("FAKE_CUDA_DEVICES", 1);
  return OK;
}
EXPORT int cuDeviceGet(int *device, int ordinal) {
  record("device %d", ordinal);
  *device = ordinal;
  return OK;
}
EXPORT int cuDeviceGetAttribute(int *value, int attribute, int device) {
  long cc = env("FAKE_CUDA_CC", 90);
  *value = attribute == 75   ? (int)(cc / 10)
           : attribute == 76 ? (int)(cc % 10)
                             : 0;
  return OK;
}
EXPORT int cuDeviceGetName(char *name, int length, int device) {
  snprintf(name, length, "Fake GPU");
  return OK;
}
EXPORT int cuDevicePrimaryCtxRetain(void **context, int device) {
  static int primary;
  record("context");
  *context = &primary;
  return OK;
}
EXPORT int cuDevicePrimaryCtxRelease_v2(int device) { return OK; }
EXPORT int cuCtxSetCurrent(void *context) { return OK; }
EXPORT int cuCtxSynchronize(void) { return OK; }

EXPORT int cuModuleLoadData(void **module, const void *image) {
  uint32_t magic;
  memcpy(&magic, image, sizeof(magic));
  if (magic != 0xba55ed50u)
    return INVALID_IMAGE;
  /* The fatbin header: magic, version, header size, then the body size. */
  uint16_t headerSize;
  uint64_t bodySize;
  memcpy(&headerSize, (const char *)image + 6, sizeof(headerSize));
  memcpy(&bodySize, (const char *)image + 8, sizeof(bodySize));
  record("module %llu", (unsigned long long)(headerSize + bodySize));
  *module = (void *)(uintptr_t)image;
  return OK;
}
EXPORT int cuModuleUnload(void *module) { return OK; }
EXPORT int cuModuleGetFunction(void **function, void *module,
                               const char *name) {
  record("function %s", name);
  *function = strdup(name);
  return OK;
}

EXPORT int cuMemAlloc_v2(uint64_t *address, size_t bytes) {
  long limit = env("FAKE_CUDA_MEMORY", -1);
  if (limit >= 0 && allocated + bytes > (size_t)limit)
    return OUT_OF_MEMORY;
  /* The size is kept in front of the memory handed out. */
  char *p = calloc(1, bytes + 64);
  if (!p)
    return OUT_OF_MEMORY;
  memcpy(p, &bytes, sizeof(bytes));
  allocated += bytes;
  record("alloc %zu", bytes);
  *address = (uint64_t)(uintptr_t)(p + 64);
  return OK;
}
EXPORT int cuMemFree_v2(uint64_t address) {
  char *p = (char *)(uintptr_t)address - 64;
  size_t bytes;
  memcpy(&bytes, p, sizeof(bytes));
  allocated -= bytes;
  record("free");
  free(p);
  return OK;
}
EXPORT int cuMemsetD8_v2(uint64_t address, unsigned char value, size_t bytes) {
  memset((void *)(uintptr_t)address, value, bytes);
  return OK;
}
EXPORT int cuMemcpyHtoD_v2(uint64_t device, const void *host, size_t bytes) {
  if (capturing)
    return STREAM_CAPTURE_UNSUPPORTED;
  record("htod %zu", bytes);
  memcpy((void *)(uintptr_t)device, host, bytes);
  return OK;
}
EXPORT int cuMemcpyDtoH_v2(void *host, uint64_t device, size_t bytes) {
  if (capturing)
    return STREAM_CAPTURE_UNSUPPORTED;
  record("dtoh %zu", bytes);
  memcpy(host, (const void *)(uintptr_t)device, bytes);
  return OK;
}
EXPORT int cuStreamCreate(void **stream, unsigned flags) {
  static int theStream;
  record("stream");
  *stream = &theStream;
  return OK;
}
EXPORT int cuStreamDestroy_v2(void *stream) { return OK; }
EXPORT int cuStreamBeginCapture_v2(void *stream, int mode) {
  record("capture");
  capturing = 1;
  captured = 0;
  return OK;
}
EXPORT int cuStreamEndCapture(void *stream, void **graph) {
  record("end capture");
  capturing = 0;
  long *launches = malloc(sizeof(long));
  *launches = captured;
  *graph = launches;
  return OK;
}
EXPORT int cuGraphInstantiateWithFlags(void **executable, void *graph,
                                       unsigned long long flags) {
  long *launches = malloc(sizeof(long));
  *launches = *(long *)graph;
  *executable = launches;
  return OK;
}
EXPORT int cuGraphLaunch(void *executable, void *stream) {
  record("graph %ld", *(long *)executable);
  return OK;
}
EXPORT int cuGraphDestroy(void *graph) {
  free(graph);
  return OK;
}
EXPORT int cuGraphExecDestroy(void *executable) {
  free(executable);
  return OK;
}

EXPORT int cuLaunchKernel(void *function, unsigned gx, unsigned gy, unsigned gz,
                          unsigned bx, unsigned by, unsigned bz,
                          unsigned shared, void *stream, void **parameters,
                          void **extra) {
  record("%s %s %u %u", capturing ? "captured" : "launch",
         (const char *)function, gx, bx);
  captured += capturing;
  return OK;
}
EXPORT int cuGetErrorString(int error, const char **text) {
  *text = error == OUT_OF_MEMORY ? "out of memory" : "fake error";
  return OK;
}
