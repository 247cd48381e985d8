//===- CudaDevice.h - the CUDA driver, loaded when a session opens -*- C++
//-*-===//
//
// The CUDA target's runtime: the driver API from libcuda.so.1, opened with
// dlopen when a session of a `--target cuda` library opens (never linked:
// the CPU target and CPU-only machines need no CUDA at all). One device
// (ordinal 0, or $TRAINC_CUDA_DEVICE), its primary context, the legacy
// default stream, the model's kernels loaded from the fatbin of the
// highest architecture the device runs. $TRAINC_LIBCUDA names another
// driver library (the tests' fake one).
//
//===----------------------------------------------------------------------===//
#ifndef TRAINC_LIB_RUNTIME_CUDADEVICE_H
#define TRAINC_LIB_RUNTIME_CUDADEVICE_H

#include "trainc/runtime.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace trainc::rt {

struct CudaDriver;

/// A CUDA library a device opened for its kernels (cuBLAS:
/// kernels/CublasKernels.cpp), released before the device.
struct CudaLibrary {
  virtual ~CudaLibrary() = default;
};

/// The device code of a model: one fatbin per architecture.
struct GpuImage {
  std::string arch; ///< "sm_90"
  const void *data;
  size_t size;
};

class CudaDevice {
public:
  /// Opens the device and loads the image it can run; on failure returns
  /// null with `status` (TRAINC_ERROR_DEVICE, TRAINC_ERROR_OUT_OF_MEMORY)
  /// and `error` saying what is missing.
  static std::unique_ptr<CudaDevice> open(const std::vector<GpuImage> &images,
                                          trainc_status &status,
                                          std::string &error);
  ~CudaDevice();
  CudaDevice(const CudaDevice &) = delete;
  CudaDevice &operator=(const CudaDevice &) = delete;

  /// Device memory, zeroed; 0 and an error when it cannot be had.
  uint64_t allocate(size_t bytes, std::string &error);
  void release(uint64_t address);
  bool upload(uint64_t device, const void *host, size_t bytes,
              std::string &error);
  bool download(void *host, uint64_t device, size_t bytes, std::string &error);
  /// Kernel `name` of the loaded image on `blocks` x `threads`, with one
  /// device address per parameter (`addresses[i]`), on the stream.
  bool launch(const char *name, int64_t blocks, int64_t threads,
              void *const *addresses, int32_t count, std::string &error);
  /// Makes the device's context current on the calling thread.
  void makeCurrent();

  /// CUDA graphs: the launches between beginCapture and endCapture are
  /// recorded (not run) into a graph, which endCapture instantiates and
  /// returns (null, with `error`, when anything in the capture failed);
  /// launchGraph replays it on the stream.
  bool beginCapture(std::string &error);
  void *endCapture(std::string &error);
  bool launchGraph(void *graph, std::string &error);
  void destroyGraph(void *graph);

  /// "NVIDIA H100 80GB HBM3 (sm_90, image sm_90)".
  const std::string &description() const { return described; }
  /// The stream every launch goes to (a CUstream).
  void *launchStream() const { return stream; }
  /// The libraries kernels opened on this device, by name.
  std::unique_ptr<CudaLibrary> &library(const std::string &name) {
    return libraries[name];
  }

private:
  CudaDevice() = default;
  bool check(int result, const char *what, std::string &error);

  std::unique_ptr<CudaDriver> driver;
  int device = 0;
  void *context = nullptr;
  void *module = nullptr;
  /// The stream every launch goes to (blocking: the legacy default stream
  /// of the synchronous copies orders against it).
  void *stream = nullptr;
  std::unordered_map<const char *, void *> functions;
  std::unordered_map<std::string, std::unique_ptr<CudaLibrary>> libraries;
  std::string described;
};

/// A training step as CUDA graphs (CudaSession.cpp): the segments of the
/// launch sequence between input checks, each a graph, and the check that
/// follows it (a loop.check status on the device and its message; null
/// after the last segment). Replayed segment by segment, each check read
/// before the next segment runs, as the eager step does.
struct CapturedStep {
  struct Segment {
    void *graph;
    void *status;
    const char *message;
  };
  CudaDevice *device = nullptr;
  std::vector<Segment> segments;
  CapturedStep() = default;
  CapturedStep(const CapturedStep &) = delete;
  CapturedStep &operator=(const CapturedStep &) = delete;
  ~CapturedStep() { clear(); }
  void clear() {
    for (const Segment &segment : segments)
      device->destroyGraph(segment.graph);
    segments.clear();
  }
};

/// The device of the calling thread's current CUDA session (set when a
/// session opens and before each of its calls), for the library kernels,
/// whose signature carries no session.
CudaDevice *activeCudaDevice();
void setActiveCudaDevice(CudaDevice *device);

/// The CUDA library `Library` (a CudaLibrary with `bool open(CudaDevice &,
/// std::string &error)`) of `device`, opened on first use and kept as the
/// device's library `name`; null with `error` when it cannot be opened or
/// no session is active (`what` names the library).
template <typename Library>
Library *deviceLibrary(CudaDevice *device, const std::string &name,
                       const char *what, std::string &error) {
  if (!device) {
    error = std::string("a ") + what + " kernel outside a CUDA session";
    return nullptr;
  }
  std::unique_ptr<CudaLibrary> &slot = device->library(name);
  if (!slot) {
    auto library = std::make_unique<Library>();
    if (!library->open(*device, error))
      return nullptr;
    slot = std::move(library);
  }
  return static_cast<Library *>(slot.get());
}

/// Device memory freed with its device.
class DeviceBuffer {
public:
  DeviceBuffer() = default;
  DeviceBuffer(CudaDevice *device, uint64_t address, size_t bytes)
      : device(device), address_(address), bytes(bytes) {}
  DeviceBuffer(DeviceBuffer &&other) noexcept { *this = std::move(other); }
  DeviceBuffer &operator=(DeviceBuffer &&other) noexcept {
    std::swap(device, other.device);
    std::swap(address_, other.address_);
    std::swap(bytes, other.bytes);
    return *this;
  }
  ~DeviceBuffer() {
    if (device && address_)
      device->release(address_);
  }
  uint64_t address() const { return address_; }
  size_t size() const { return bytes; }

private:
  CudaDevice *device = nullptr;
  uint64_t address_ = 0;
  size_t bytes = 0;
};

} // namespace trainc::rt

#endif
