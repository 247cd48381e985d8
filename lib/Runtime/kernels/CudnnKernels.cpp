//===- CudnnKernels.cpp - convolutions of the CUDA runtime on cuDNN -------===//
//
// Backend "cudnn" of graph.conv, graph.conv_backward_input and
// graph.conv_backward_weight in libtrainc_rt_cuda.a. cuDNN 9 is opened with
// dlopen (libcudnn.so.9, or $TRAINC_LIBCUDNN) when a session prepares its
// first convolution: one handle per device, on the device's stream (so that
// a step can be captured as a CUDA graph), and one workspace per device,
// sized at session open to the largest one the chosen algorithms need.
//
// Each launch builds its descriptors and chooses its algorithm once, when
// the session opens: cuDNN's Find* runs every algorithm on the launch's
// shapes, and the fastest is kept among those that succeeded in fp32
// arithmetic for f32 data (CUDNN_FMA_MATH: no TF32, as the CPU target and
// the other kernels compute; bf16 data, --amp bf16, runs on tensor cores
// with f32 accumulation), fit kMaxWorkspaceBytes and compute the products
// directly or as a GEMM. The FFT and Winograd algorithms, which transform
// the operands first, are less accurate in fp32: ResNet-18 on an H200
// failed the parity criterion with them (docs/GPU.md);
// $TRAINC_CUDNN_TRANSFORMS=1 lets Find choose them too (for A/B timing).
// Layouts are the graph's: NCHW activations, [M, C/group, k...] weights,
// dense. A 1-D convolution is a 2-D one of height 1 (cuDNN's descriptors
// take 4 or 5 dims). The bias of a forward convolution is added after it:
// cudnnAddTensor in f32 (broadcast over N and the positions), a rank-1
// update per image on cuBLAS in bf16 (CudaKernels.h's addChannelBias).
//
// The types and constants below are cuDNN 9's (cudnn_graph.h, cudnn_cnn.h):
// the runtime is compiled without CUDA's headers and links no CUDA library.
//
//===----------------------------------------------------------------------===//
#include "lib/Runtime/CudaDevice.h"
#include "lib/Runtime/kernels/CudaKernels.h"
#include "lib/Runtime/kernels/KernelSupport.h"

#include "lib/Runtime/DynamicLibrary.h"

#include <algorithm>
#include <array>

namespace trainc::rt {

namespace {

constexpr int kDataFloat = 0;          // CUDNN_DATA_FLOAT
constexpr int kDataBf16 = 9;           // CUDNN_DATA_BFLOAT16
constexpr int kNCHW = 0;               // CUDNN_TENSOR_NCHW
constexpr int kCrossCorrelation = 1;   // CUDNN_CROSS_CORRELATION
constexpr int kFmaMath = 3;            // CUDNN_FMA_MATH
constexpr int kTensorOpMath = 1;       // CUDNN_TENSOR_OP_MATH
constexpr int kTensorOpConversion = 2; // ..._ALLOW_CONVERSION
constexpr size_t kMaxWorkspaceBytes = size_t(1) << 30;
// The first FFT or Winograd algorithm of each direction (cudnn_ops.h's
// cudnnConvolution{Fwd,BwdData,BwdFilter}Algo_t); every one from there on
// transforms its operands, but backward filter's ALGO_3, a GEMM.
constexpr int kFirstTransformForward = 4;      // ..._FWD_ALGO_FFT
constexpr int kFirstTransformBackwardData = 2; // ..._BWD_DATA_ALGO_FFT
constexpr int kTransformBackwardFilter[] = {2, 4, 5, 6}; // FFT, WINOGRAD...
constexpr int kMaxAlgorithms = 16;

/// cudnnConvolution{Fwd,BwdData,BwdFilter}AlgoPerf_t (one layout).
struct AlgorithmPerf {
  int algorithm;
  int status;
  float time;
  size_t memory;
  int determinism;
  int mathType;
  int reserved[3];
};

using Handle = void *;
using Descriptor = void *;

/// cuDNN on one device.
struct Cudnn final : CudaLibrary {
  DynamicLibrary library;
  Handle handle = nullptr;
  CudaDevice *device = nullptr;
  DeviceBuffer workspace;

  int (*create)(Handle *);
  int (*destroy)(Handle);
  int (*setStream)(Handle, void *);
  const char *(*errorString)(int);
  int (*createTensor)(Descriptor *);
  int (*setTensor)(Descriptor, int, int, const int *, const int *);
  int (*destroyTensor)(Descriptor);
  int (*createFilter)(Descriptor *);
  int (*setFilter)(Descriptor, int, int, int, const int *);
  int (*destroyFilter)(Descriptor);
  int (*createConvolution)(Descriptor *);
  int (*setConvolution)(Descriptor, int, const int *, const int *, const int *,
                        int, int);
  int (*setGroupCount)(Descriptor, int);
  int (*setMathType)(Descriptor, int);
  int (*destroyConvolution)(Descriptor);
  int (*findForward)(Handle, Descriptor, Descriptor, Descriptor, Descriptor,
                     int, int *, AlgorithmPerf *);
  int (*findBackwardData)(Handle, Descriptor, Descriptor, Descriptor,
                          Descriptor, int, int *, AlgorithmPerf *);
  int (*findBackwardFilter)(Handle, Descriptor, Descriptor, Descriptor,
                            Descriptor, int, int *, AlgorithmPerf *);
  int (*forward)(Handle, const void *, Descriptor, const void *, Descriptor,
                 const void *, Descriptor, int, void *, size_t, const void *,
                 Descriptor, void *);
  int (*backwardData)(Handle, const void *, Descriptor, const void *,
                      Descriptor, const void *, Descriptor, int, void *, size_t,
                      const void *, Descriptor, void *);
  int (*backwardFilter)(Handle, const void *, Descriptor, const void *,
                        Descriptor, const void *, Descriptor, int, void *,
                        size_t, const void *, Descriptor, void *);
  int (*addTensor)(Handle, const void *, Descriptor, const void *, const void *,
                   Descriptor, void *);

  /// Every descriptor the launches made: the launches' kernels outlive
  /// this library (a session releases its device, and so its libraries,
  /// before its prepared launches), so the library destroys them.
  std::vector<Descriptor> tensors, filters, convolutions;

  ~Cudnn() override {
    for (Descriptor tensor : tensors)
      destroyTensor(tensor);
    for (Descriptor filter : filters)
      destroyFilter(filter);
    for (Descriptor convolution : convolutions)
      destroyConvolution(convolution);
    if (handle)
      destroy(handle);
  }

  bool check(int status, const char *what, std::string &error) {
    if (status == 0)
      return true;
    error = std::string(what) + " failed: cuDNN status " +
            std::to_string(status) + " (" + errorString(status) + ")";
    return false;
  }

  bool open(CudaDevice &on, std::string &error) {
    device = &on;
    if (!library.open("TRAINC_LIBCUDNN", "libcudnn.so.9", error)) {
      error = "cannot load cuDNN (" + error +
              "): --target cuda libraries run their convolutions on cuDNN 9 "
              "(libcudnn.so.9 on the library path), or compile them as "
              "generated kernels (--dispatch conv=generated --dispatch "
              "conv_backward_input=generated --dispatch "
              "conv_backward_weight=generated)";
      return false;
    }
    auto bind = [&](auto &function, const char *symbol) {
      library.bind(function, symbol);
    };
    bind(create, "cudnnCreate");
    bind(destroy, "cudnnDestroy");
    bind(setStream, "cudnnSetStream");
    bind(errorString, "cudnnGetErrorString");
    bind(createTensor, "cudnnCreateTensorDescriptor");
    bind(setTensor, "cudnnSetTensorNdDescriptor");
    bind(destroyTensor, "cudnnDestroyTensorDescriptor");
    bind(createFilter, "cudnnCreateFilterDescriptor");
    bind(setFilter, "cudnnSetFilterNdDescriptor");
    bind(destroyFilter, "cudnnDestroyFilterDescriptor");
    bind(createConvolution, "cudnnCreateConvolutionDescriptor");
    bind(setConvolution, "cudnnSetConvolutionNdDescriptor");
    bind(setGroupCount, "cudnnSetConvolutionGroupCount");
    bind(setMathType, "cudnnSetConvolutionMathType");
    bind(destroyConvolution, "cudnnDestroyConvolutionDescriptor");
    bind(findForward, "cudnnFindConvolutionForwardAlgorithm");
    bind(findBackwardData, "cudnnFindConvolutionBackwardDataAlgorithm");
    bind(findBackwardFilter, "cudnnFindConvolutionBackwardFilterAlgorithm");
    bind(forward, "cudnnConvolutionForward");
    bind(backwardData, "cudnnConvolutionBackwardData");
    bind(backwardFilter, "cudnnConvolutionBackwardFilter");
    bind(addTensor, "cudnnAddTensor");
    if (!library.missing.empty()) {
      error = "cuDNN (" + library.path + ") has no " + library.missing;
      return false;
    }
    return check(create(&handle), "cudnnCreate", error) &&
           check(setStream(handle, on.launchStream()), "cudnnSetStream", error);
  }

  /// Checks the status of a descriptor's creation (`descriptor` is read after
  /// the call that set it) and records it in `list`.
  bool made(int status, const Descriptor &descriptor,
            std::vector<Descriptor> &list, const char *what,
            std::string &error) {
    if (!check(status, what, error))
      return false;
    list.push_back(descriptor);
    return true;
  }

  /// Grows the device's workspace to `bytes` (at session open only: a
  /// captured step keeps the address it was captured with).
  bool reserveWorkspace(size_t bytes, std::string &error) {
    if (workspace.size() >= bytes)
      return true;
    workspace = DeviceBuffer(); // free the old one first
    uint64_t address = device->allocate(bytes, error);
    if (!address)
      return false;
    workspace = DeviceBuffer(device, address, bytes);
    return true;
  }
};

enum class Direction { Forward, BackwardData, BackwardFilter };

/// One convolution launch on cuDNN: its descriptors and algorithm.
class CudnnConvolution final : public PreparedKernel {
public:
  CudnnConvolution(Cudnn &dnn, Launch launch)
      : dnn(dnn), launch(std::move(launch)) {}

  bool prepare(std::string &error) {
    const std::string &op = launch.op;
    direction = op == "graph.conv"                  ? Direction::Forward
                : op == "graph.conv_backward_input" ? Direction::BackwardData
                                                    : Direction::BackwardFilter;
    ConvShape conv;
    bool checked = direction == Direction::Forward
                       ? checkConv(launch, conv, error)
                   : direction == Direction::BackwardData
                       ? checkConvBackwardInput(launch, conv, error)
                       : checkConvBackwardWeight(launch, conv, error);
    if (!checked)
      return false;
    if (!uniformF32OrBf16(launch, "cuDNN convolutions", bf16, error))
      return false;
    int dataType = bf16 ? kDataBf16 : kDataFloat;
    const Window &window = conv.window;
    if (window.rank < 1 || window.rank > 3)
      return fail(launch, error, "cuDNN convolves 1 to 3 spatial dims");
    // A 1-D convolution is a 2-D one of height 1.
    size_t lifted = window.rank == 1 ? 1 : 0;
    size_t spatial = window.rank + lifted;
    std::vector<int> pads(spatial, 0), strides(spatial, 1),
        dilations(spatial, 1);
    for (size_t d = 0; d < window.rank; ++d) {
      if (window.padsBegin[d] != window.padsEnd[d])
        return fail(launch, error, "cuDNN pads both ends of a dim alike");
      pads[d + lifted] = static_cast<int>(window.padsBegin[d]);
      strides[d + lifted] = static_cast<int>(window.strides[d]);
      dilations[d + lifted] = static_cast<int>(window.dilations[d]);
    }
    auto dims = [&](const Shape &shape) {
      std::vector<int> result;
      for (size_t d = 0; d < shape.size(); ++d) {
        if (d == 2 && lifted)
          result.push_back(1);
        result.push_back(static_cast<int>(shape[d]));
      }
      return result;
    };
    for (const Shape *shape :
         {&conv.inputShape, &conv.weightShape, &conv.outputShape})
      for (int64_t extent : *shape)
        if (extent > INT32_MAX)
          return fail(launch, error, "a dim exceeds cuDNN's int");
    std::vector<int> inputDims = dims(conv.inputShape),
                     weightDims = dims(conv.weightShape),
                     outputDims = dims(conv.outputShape);
    std::vector<int> biasDims(outputDims.size(), 1);
    biasDims[1] = outputDims[1];
    hasBias = direction == Direction::Forward && launch.inputs.size() == 3;
    batch = conv.outputShape[0];
    channels = conv.outputShape[1];
    positions = conv.window.outputPlane;
    if (!tensor(input, inputDims, dataType, error) ||
        !tensor(output, outputDims, dataType, error) ||
        (hasBias && !bf16 && !tensor(bias, biasDims, dataType, error)) ||
        (hasBias && bf16 &&
         !prepareChannelBias(dnn.device, positions, bf16, error)) ||
        !dnn.made(dnn.createFilter(&weight), weight, dnn.filters,
                  "cudnnCreateFilterDescriptor", error) ||
        !dnn.check(dnn.setFilter(weight, dataType, kNCHW,
                                 static_cast<int>(weightDims.size()),
                                 weightDims.data()),
                   "cudnnSetFilterNdDescriptor", error) ||
        !dnn.made(dnn.createConvolution(&convolution), convolution,
                  dnn.convolutions, "cudnnCreateConvolutionDescriptor",
                  error) ||
        !dnn.check(dnn.setConvolution(convolution, static_cast<int>(spatial),
                                      pads.data(), strides.data(),
                                      dilations.data(), kCrossCorrelation,
                                      kDataFloat),
                   "cudnnSetConvolutionNdDescriptor", error) ||
        !dnn.check(dnn.setGroupCount(convolution, static_cast<int>(conv.group)),
                   "cudnnSetConvolutionGroupCount", error) ||
        !dnn.check(
            dnn.setMathType(convolution, bf16 ? kTensorOpMath : kFmaMath),
            "cudnnSetConvolutionMathType", error))
      return false;
    return chooseAlgorithm(error);
  }

  size_t scratchBytes() const override { return 0; }

  bool run(void *const *inputs, void *const *outputs, void *,
           std::string &error) override {
    float one = 1, zero = 0;
    auto *space = reinterpret_cast<void *>(dnn.workspace.address());
    size_t spaceBytes = dnn.workspace.size();
    switch (direction) {
    case Direction::Forward:
      if (!dnn.check(dnn.forward(dnn.handle, &one, input, inputs[0], weight,
                                 inputs[1], convolution, algorithm, space,
                                 spaceBytes, &zero, output, outputs[0]),
                     "cudnnConvolutionForward", error))
        return false;
      if (!hasBias)
        return true;
      if (bf16)
        return addChannelBias(dnn.device, inputs[2], outputs[0], batch,
                              channels, positions, bf16, error);
      return dnn.check(dnn.addTensor(dnn.handle, &one, bias, inputs[2], &one,
                                     output, outputs[0]),
                       "cudnnAddTensor", error);
    case Direction::BackwardData: // (grad_output, weight) -> grad_input
      return dnn.check(dnn.backwardData(dnn.handle, &one, weight, inputs[1],
                                        output, inputs[0], convolution,
                                        algorithm, space, spaceBytes, &zero,
                                        input, outputs[0]),
                       "cudnnConvolutionBackwardData", error);
    case Direction::BackwardFilter: // (grad_output, input) -> grad_weight
      return dnn.check(dnn.backwardFilter(dnn.handle, &one, input, inputs[1],
                                          output, inputs[0], convolution,
                                          algorithm, space, spaceBytes, &zero,
                                          weight, outputs[0]),
                       "cudnnConvolutionBackwardFilter", error);
    }
    return false;
  }

private:
  bool tensor(Descriptor &descriptor, const std::vector<int> &dims,
              int dataType, std::string &error) {
    std::vector<int> strides(dims.size(), 1);
    for (size_t d = dims.size() - 1; d > 0; --d)
      strides[d - 1] = strides[d] * dims[d];
    return dnn.made(dnn.createTensor(&descriptor), descriptor, dnn.tensors,
                    "cudnnCreateTensorDescriptor", error) &&
           dnn.check(dnn.setTensor(descriptor, dataType,
                                   static_cast<int>(dims.size()), dims.data(),
                                   strides.data()),
                     "cudnnSetTensorNdDescriptor", error);
  }

  /// Whether `algorithm` transforms its operands (FFT, Winograd).
  bool transforms(int algorithm) const {
    switch (direction) {
    case Direction::Forward:
      return algorithm >= kFirstTransformForward;
    case Direction::BackwardData:
      return algorithm >= kFirstTransformBackwardData;
    case Direction::BackwardFilter:
      return std::find(std::begin(kTransformBackwardFilter),
                       std::end(kTransformBackwardFilter),
                       algorithm) != std::end(kTransformBackwardFilter);
    }
    return true;
  }

  /// Runs cuDNN's Find for this launch and keeps the fastest algorithm
  /// that succeeded (f32: without tensor-core math), fits the workspace
  /// cap and does not transform its operands (unless
  /// $TRAINC_CUDNN_TRANSFORMS=1).
  bool chooseAlgorithm(std::string &error) {
    std::array<AlgorithmPerf, kMaxAlgorithms> results{};
    int count = 0;
    int status =
        direction == Direction::Forward
            ? dnn.findForward(dnn.handle, input, weight, convolution, output,
                              kMaxAlgorithms, &count, results.data())
        : direction == Direction::BackwardData
            ? dnn.findBackwardData(dnn.handle, weight, output, convolution,
                                   input, kMaxAlgorithms, &count,
                                   results.data())
            : dnn.findBackwardFilter(dnn.handle, input, output, convolution,
                                     weight, kMaxAlgorithms, &count,
                                     results.data());
    if (!dnn.check(status, "cuDNN's algorithm search", error))
      return false;
    const char *allow = std::getenv("TRAINC_CUDNN_TRANSFORMS");
    bool allowTransforms = allow && std::string(allow) == "1";
    // Find returns them fastest first.
    for (int i = 0; i < std::min(count, kMaxAlgorithms); ++i) {
      const AlgorithmPerf &perf = results[i];
      bool tensorCores = perf.mathType == kTensorOpMath ||
                         perf.mathType == kTensorOpConversion;
      if (perf.status != 0 || perf.memory > kMaxWorkspaceBytes ||
          (tensorCores && !bf16) ||
          (!allowTransforms && transforms(perf.algorithm)))
        continue;
      algorithm = perf.algorithm;
      return dnn.reserveWorkspace(perf.memory, error);
    }
    return fail(launch, error,
                "cuDNN has no algorithm without FFT or Winograd (f32: "
                "without tensor cores) for this convolution within " +
                    std::to_string(kMaxWorkspaceBytes >> 20) +
                    " MiB of workspace (--dispatch " + launch.op.substr(6) +
                    "=generated compiles it as a "
                    "generated kernel)");
  }

  Cudnn &dnn;
  Launch launch;
  Direction direction = Direction::Forward;
  bool bf16 = false; ///< every operand bf16 (else f32)
  bool hasBias = false;
  int64_t batch = 0, channels = 0, positions = 0; ///< of the output
  /// The forward convolution's x, y (dy in the gradients) and bias.
  Descriptor input = nullptr, output = nullptr, bias = nullptr;
  Descriptor weight = nullptr, convolution = nullptr;
  int algorithm = 0;
};

std::unique_ptr<PreparedKernel>
prepareCudnn(const Launch &launch, LibraryContext &, std::string &error) {
  auto *dnn = deviceLibrary<Cudnn>(activeCudaDevice(), "cudnn", "cuDNN", error);
  if (!dnn)
    return nullptr;
  auto kernel = std::make_unique<CudnnConvolution>(*dnn, launch);
  if (!kernel->prepare(error))
    return nullptr;
  return kernel;
}

} // namespace

void registerCudnnKernels() {
  for (const char *op : {"graph.conv", "graph.conv_backward_input",
                         "graph.conv_backward_weight"})
    registerPreparedKernel(op, "cudnn", prepareCudnn);
}

} // namespace trainc::rt
