//===- CudaDevice.cpp - the CUDA driver, loaded when a session opens ------===//
//
// The driver API is declared here, not included: the runtime builds and
// runs without the toolkit. Symbol names are what cuda.h's macros expand
// to (the _v2 entry points).
//
//===----------------------------------------------------------------------===//
#include "lib/Runtime/CudaDevice.h"
#include "lib/Runtime/DynamicLibrary.h"

#include <algorithm>
#include <cstdlib>

namespace trainc::rt {

namespace {
// CUresult values the runtime names.
constexpr int kSuccess = 0;
constexpr int kOutOfMemory = 2;
constexpr int kNoDevice = 100;
constexpr int kStubLibrary = 34;
constexpr int kInsufficientDriver = 35;
// CUdevice_attribute
constexpr int kComputeCapabilityMajor = 75;
constexpr int kComputeCapabilityMinor = 76;
} // namespace

struct CudaDriver {
  DynamicLibrary library;
  int (*cuInit)(unsigned);
  int (*cuDeviceGetCount)(int *);
  int (*cuDeviceGet)(int *, int);
  int (*cuDeviceGetAttribute)(int *, int, int);
  int (*cuDeviceGetName)(char *, int, int);
  int (*cuDevicePrimaryCtxRetain)(void **, int);
  int (*cuDevicePrimaryCtxRelease)(int);
  int (*cuCtxSetCurrent)(void *);
  int (*cuModuleLoadData)(void **, const void *);
  int (*cuModuleUnload)(void *);
  int (*cuModuleGetFunction)(void **, void *, const char *);
  int (*cuMemAlloc)(uint64_t *, size_t);
  int (*cuMemFree)(uint64_t);
  int (*cuMemsetD8)(uint64_t, unsigned char, size_t);
  int (*cuMemcpyHtoD)(uint64_t, const void *, size_t);
  int (*cuMemcpyDtoH)(void *, uint64_t, size_t);
  int (*cuLaunchKernel)(void *, unsigned, unsigned, unsigned, unsigned,
                        unsigned, unsigned, unsigned, void *, void **, void **);
  int (*cuCtxSynchronize)();
  int (*cuGetErrorString)(int, const char **);
  int (*cuStreamCreate)(void **, unsigned);
  int (*cuStreamDestroy)(void *);
  int (*cuStreamBeginCapture)(void *, int);
  int (*cuStreamEndCapture)(void *, void **);
  int (*cuGraphInstantiateWithFlags)(void **, void *, unsigned long long);
  int (*cuGraphLaunch)(void *, void *);
  int (*cuGraphExecDestroy)(void *);
  int (*cuGraphDestroy)(void *);

  /// Loads the driver; false with `error` when it or a symbol is missing.
  bool load(std::string &error) {
    if (!library.open("TRAINC_LIBCUDA", "libcuda.so.1", error)) {
      error = "no CUDA driver: cannot load " + library.path + " (" + error +
              "); a --target cuda library needs an NVIDIA GPU and its driver";
      return false;
    }
    auto bind = [&](auto &function, const char *symbol) {
      library.bind(function, symbol);
    };
    bind(cuInit, "cuInit");
    bind(cuDeviceGetCount, "cuDeviceGetCount");
    bind(cuDeviceGet, "cuDeviceGet");
    bind(cuDeviceGetAttribute, "cuDeviceGetAttribute");
    bind(cuDeviceGetName, "cuDeviceGetName");
    bind(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
    bind(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2");
    bind(cuCtxSetCurrent, "cuCtxSetCurrent");
    bind(cuModuleLoadData, "cuModuleLoadData");
    bind(cuModuleUnload, "cuModuleUnload");
    bind(cuModuleGetFunction, "cuModuleGetFunction");
    bind(cuMemAlloc, "cuMemAlloc_v2");
    bind(cuMemFree, "cuMemFree_v2");
    bind(cuMemsetD8, "cuMemsetD8_v2");
    bind(cuMemcpyHtoD, "cuMemcpyHtoD_v2");
    bind(cuMemcpyDtoH, "cuMemcpyDtoH_v2");
    bind(cuLaunchKernel, "cuLaunchKernel");
    bind(cuCtxSynchronize, "cuCtxSynchronize");
    bind(cuGetErrorString, "cuGetErrorString");
    bind(cuStreamCreate, "cuStreamCreate");
    bind(cuStreamDestroy, "cuStreamDestroy_v2");
    bind(cuStreamBeginCapture, "cuStreamBeginCapture_v2");
    bind(cuStreamEndCapture, "cuStreamEndCapture");
    bind(cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags");
    bind(cuGraphLaunch, "cuGraphLaunch");
    bind(cuGraphExecDestroy, "cuGraphExecDestroy");
    bind(cuGraphDestroy, "cuGraphDestroy");

    if (!library.missing.empty())
      error = "the CUDA driver " + library.path + " has no " + library.missing;
    return library.missing.empty();
  }
};

bool CudaDevice::check(int result, const char *what, std::string &error) {
  if (result == kSuccess)
    return true;
  const char *text = nullptr;
  if (driver->cuGetErrorString(result, &text) != kSuccess || !text)
    text = "unknown error";
  error = std::string(what) + " failed: CUDA error " + std::to_string(result) +
          " (" + text + ")";
  return false;
}

std::unique_ptr<CudaDevice>
CudaDevice::open(const std::vector<GpuImage> &images, trainc_status &status,
                 std::string &error) {
  status = TRAINC_ERROR_DEVICE;
  std::unique_ptr<CudaDevice> device(new CudaDevice);
  device->driver = std::make_unique<CudaDriver>();
  CudaDriver &cu = *device->driver;
  if (!cu.load(error))
    return nullptr;
  int result = cu.cuInit(0);
  if (result == kStubLibrary || result == kInsufficientDriver) {
    error = "no CUDA driver: libcuda.so.1 is the toolkit's stub or older than "
            "the CUDA 13 runtime needs (CUDA error " +
            std::to_string(result) + ")";
    return nullptr;
  }
  int count = 0;
  if (result == kNoDevice ||
      (result == kSuccess && cu.cuDeviceGetCount(&count) == kSuccess &&
       count == 0)) {
    error = "no CUDA device: the driver found no GPU";
    return nullptr;
  }
  if (!device->check(result, "cuInit", error))
    return nullptr;
  int ordinal = 0;
  if (const char *chosen = std::getenv("TRAINC_CUDA_DEVICE"))
    ordinal = std::atoi(chosen);
  if (ordinal < 0 || ordinal >= count) {
    error = "no CUDA device " + std::to_string(ordinal) +
            " ($TRAINC_CUDA_DEVICE); " + std::to_string(count) + " found";
    return nullptr;
  }
  int major = 0, minor = 0;
  char name[256] = {};
  if (!device->check(cu.cuDeviceGet(&device->device, ordinal), "cuDeviceGet",
                     error) ||
      !device->check(cu.cuDeviceGetAttribute(&major, kComputeCapabilityMajor,
                                             device->device),
                     "cuDeviceGetAttribute", error) ||
      !device->check(cu.cuDeviceGetAttribute(&minor, kComputeCapabilityMinor,
                                             device->device),
                     "cuDeviceGetAttribute", error) ||
      !device->check(cu.cuDeviceGetName(name, sizeof(name) - 1, device->device),
                     "cuDeviceGetName", error) ||
      !device->check(
          cu.cuDevicePrimaryCtxRetain(&device->context, device->device),
          "cuDevicePrimaryCtxRetain", error) ||
      !device->check(cu.cuCtxSetCurrent(device->context), "cuCtxSetCurrent",
                     error) ||
      !device->check(cu.cuStreamCreate(&device->stream, 0), "cuStreamCreate",
                     error))
    return nullptr;
  int capability = major * 10 + minor;
  // The device's own architecture first, then older ones newest first (a
  // fatbin's PTX is compiled for a newer chip by the driver).
  std::vector<std::pair<int, const GpuImage *>> candidates;
  std::string compiled;
  for (const GpuImage &image : images) {
    int arch = std::atoi(image.arch.c_str() + 3);
    compiled += (compiled.empty() ? "" : ", ") + image.arch;
    if (arch <= capability)
      candidates.push_back({arch, &image});
  }
  std::sort(candidates.begin(), candidates.end(),
            [](auto &a, auto &b) { return a.first > b.first; });
  std::string loadError;
  for (const auto &[arch, image] : candidates)
    if (device->check(cu.cuModuleLoadData(&device->module, image->data),
                      "cuModuleLoadData", loadError)) {
      device->described = std::string(name) + " (sm_" +
                          std::to_string(capability) + ", code for " +
                          image->arch + ")";
      status = TRAINC_OK;
      return device;
    }
  error = std::string("no code for this GPU: ") + name + " is sm_" +
          std::to_string(capability) + ", the library was compiled for " +
          compiled + " (recompile with --gpu-arch sm_" +
          std::to_string(capability) + ")" +
          (loadError.empty() ? "" : "; " + loadError);
  return nullptr;
}

static thread_local CudaDevice *activeDevice = nullptr;
CudaDevice *activeCudaDevice() { return activeDevice; }
void setActiveCudaDevice(CudaDevice *device) { activeDevice = device; }

CudaDevice::~CudaDevice() {
  if (!driver || !driver->cuCtxSetCurrent)
    return;
  if (context)
    driver->cuCtxSetCurrent(context);
  libraries.clear(); // they may free device memory
  if (context) {
    driver->cuCtxSetCurrent(context);
    if (stream)
      driver->cuStreamDestroy(stream);
    if (module)
      driver->cuModuleUnload(module);
    driver->cuDevicePrimaryCtxRelease(device);
  }
}

void CudaDevice::makeCurrent() { driver->cuCtxSetCurrent(context); }

uint64_t CudaDevice::allocate(size_t bytes, std::string &error) {
  uint64_t address = 0;
  int result = driver->cuMemAlloc(&address, std::max<size_t>(bytes, 1));
  if (result == kOutOfMemory) {
    error = "out of GPU memory: " + std::to_string(bytes) + " bytes";
    return 0;
  }
  if (!check(result, "cuMemAlloc", error))
    return 0;
  if (!check(driver->cuMemsetD8(address, 0, std::max<size_t>(bytes, 1)),
             "cuMemsetD8", error)) {
    driver->cuMemFree(address);
    return 0;
  }
  return address;
}

void CudaDevice::release(uint64_t address) { driver->cuMemFree(address); }

bool CudaDevice::upload(uint64_t device, const void *host, size_t bytes,
                        std::string &error) {
  return bytes == 0 || check(driver->cuMemcpyHtoD(device, host, bytes),
                             "cuMemcpyHtoD", error);
}

bool CudaDevice::download(void *host, uint64_t device, size_t bytes,
                          std::string &error) {
  return bytes == 0 || check(driver->cuMemcpyDtoH(host, device, bytes),
                             "cuMemcpyDtoH", error);
}

bool CudaDevice::launch(const char *name, int64_t blocks, int64_t threads,
                        void *const *addresses, int32_t count,
                        std::string &error) {
  void *&function = functions[name];
  if (!function &&
      !check(driver->cuModuleGetFunction(&function, module, name),
             (std::string("cuModuleGetFunction of ") + name).c_str(), error))
    return false;
  // Each parameter is a device address: the kernel reads it from the
  // array slot that holds it.
  std::vector<void *> parameters(count);
  for (int32_t i = 0; i < count; ++i)
    parameters[i] = const_cast<void **>(&addresses[i]);
  return check(driver->cuLaunchKernel(function, static_cast<unsigned>(blocks),
                                      1, 1, static_cast<unsigned>(threads), 1,
                                      1, 0, stream, parameters.data(), nullptr),
               name, error);
}

bool CudaDevice::beginCapture(std::string &error) {
  // Thread-local: a call of this thread that cannot be captured (a
  // synchronous copy) fails the capture instead of running.
  constexpr int kCaptureThreadLocal = 1;
  return check(driver->cuStreamBeginCapture(stream, kCaptureThreadLocal),
               "cuStreamBeginCapture", error);
}

void *CudaDevice::endCapture(std::string &error) {
  void *graph = nullptr, *executable = nullptr;
  bool ok = check(driver->cuStreamEndCapture(stream, &graph),
                  "cuStreamEndCapture", error) &&
            check(driver->cuGraphInstantiateWithFlags(&executable, graph, 0),
                  "cuGraphInstantiateWithFlags", error);
  if (graph)
    driver->cuGraphDestroy(graph);
  return ok ? executable : nullptr;
}

bool CudaDevice::launchGraph(void *graph, std::string &error) {
  return check(driver->cuGraphLaunch(graph, stream), "cuGraphLaunch", error);
}

void CudaDevice::destroyGraph(void *graph) {
  driver->cuGraphExecDestroy(graph);
}

} // namespace trainc::rt
