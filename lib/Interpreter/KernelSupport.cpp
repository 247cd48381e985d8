//===- KernelSupport.cpp - index arithmetic shared by the kernels ---------===//
#include "lib/Interpreter/Kernels.h"

#include "mlir/IR/TypeUtilities.h"

#include <cmath>
#include <string>

using namespace mlir;

namespace trainc::interpreter {

llvm::Error kernelError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

KernelResult result(HostTensor tensor) {
  std::vector<HostTensor> results;
  results.push_back(std::move(tensor));
  return results;
}

HostTensor filled(llvm::ArrayRef<int64_t> shape, double value) {
  HostTensor tensor;
  tensor.shape.assign(shape.begin(), shape.end());
  tensor.data.assign(product(shape), value);
  return tensor;
}

int64_t product(llvm::ArrayRef<int64_t> shape) {
  int64_t count = 1;
  for (int64_t dim : shape)
    count *= dim;
  return count;
}

llvm::SmallVector<int64_t> stridesOf(llvm::ArrayRef<int64_t> shape) {
  llvm::SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  return strides;
}

llvm::SmallVector<int64_t> unravel(int64_t flat,
                                   llvm::ArrayRef<int64_t> shape) {
  llvm::SmallVector<int64_t> index(shape.size(), 0);
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    index[d] = flat % shape[d];
    flat /= shape[d];
  }
  return index;
}

int64_t ravel(llvm::ArrayRef<int64_t> index, llvm::ArrayRef<int64_t> strides) {
  int64_t flat = 0;
  for (size_t d = 0; d < index.size(); ++d)
    flat += index[d] * strides[d];
  return flat;
}

std::string formatShape(llvm::ArrayRef<int64_t> shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + (ShapedType::isDynamic(shape[i])
                                   ? std::string("?")
                                   : std::to_string(shape[i]));
  return text + "]";
}

llvm::Error forEachGathered(ArrayRef<int64_t> dataShape, const HostTensor &indices,
                     int64_t axis,
                     llvm::function_ref<void(int64_t, int64_t)> visit) {
  int64_t size = dataShape[axis];
  for (double index : indices.data)
    if (toIndex(index) < -size || toIndex(index) >= size)
      return kernelError("index " + std::to_string(toIndex(index)) +
                         " is out of range for a dim of size " +
                         std::to_string(size));
  llvm::SmallVector<int64_t> outputShape(dataShape.take_front(axis));
  llvm::append_range(outputShape, indices.shape);
  llvm::append_range(outputShape, dataShape.drop_front(axis + 1));
  llvm::SmallVector<int64_t> dataStrides = stridesOf(dataShape);
  llvm::SmallVector<int64_t> indexStrides = stridesOf(indices.shape);
  size_t indexRank = indices.shape.size();
  llvm::SmallVector<int64_t> dataIndex(dataShape.size());
  int64_t flat = 0;
  forEachIndex(outputShape, [&](ArrayRef<int64_t> index) {
    for (int64_t d = 0; d < axis; ++d)
      dataIndex[d] = index[d];
    int64_t position = toIndex(
        indices.data[ravel(index.slice(axis, indexRank), indexStrides)]);
    dataIndex[axis] = position < 0 ? position + size : position;
    for (size_t d = axis + 1; d < dataShape.size(); ++d)
      dataIndex[d] = index[d - 1 + indexRank];
    visit(flat++, ravel(dataIndex, dataStrides));
  });
  return llvm::Error::success();
}

llvm::Error
forEachGatheredElement(ArrayRef<int64_t> dataShape, const HostTensor &indices,
                       int64_t axis,
                       llvm::function_ref<void(int64_t, int64_t)> visit) {
  size_t rank = dataShape.size();
  if (axis < 0 || axis >= static_cast<int64_t>(rank) ||
      indices.shape.size() != rank)
    return kernelError("gather_elements needs indices of the data's rank "
                       "and an axis of it");
  for (size_t d = 0; d < rank; ++d)
    if (static_cast<int64_t>(d) != axis && indices.shape[d] > dataShape[d])
      return kernelError("gather_elements indices exceed the data in dim " +
                         std::to_string(d));
  int64_t size = dataShape[axis];
  for (double index : indices.data)
    if (toIndex(index) < -size || toIndex(index) >= size)
      return kernelError("index " + std::to_string(toIndex(index)) +
                         " is out of range for a dim of size " +
                         std::to_string(size));
  llvm::SmallVector<int64_t> dataStrides = stridesOf(dataShape);
  llvm::SmallVector<int64_t> dataIndex(rank);
  int64_t flat = 0;
  forEachIndex(indices.shape, [&](ArrayRef<int64_t> index) {
    llvm::copy(index, dataIndex.begin());
    int64_t position = toIndex(indices.data[flat]);
    dataIndex[axis] = position < 0 ? position + size : position;
    visit(flat, ravel(dataIndex, dataStrides));
    ++flat;
  });
  return llvm::Error::success();
}

BroadcastIndexer::BroadcastIndexer(llvm::ArrayRef<int64_t> resultShape,
                                   llvm::ArrayRef<int64_t> operandShape)
    : resultShape(resultShape), strides(resultShape.size(), 0) {
  llvm::SmallVector<int64_t> operandStrides = stridesOf(operandShape);
  size_t offset = resultShape.size() - operandShape.size();
  for (size_t d = 0; d < operandShape.size(); ++d)
    strides[d + offset] = operandShape[d] == 1 ? 0 : operandStrides[d];
}

int64_t BroadcastIndexer::operator()(int64_t flat) const {
  int64_t index = 0;
  for (int64_t d = static_cast<int64_t>(resultShape.size()) - 1; d >= 0; --d) {
    index += (flat % resultShape[d]) * strides[d];
    flat /= resultShape[d];
  }
  return index;
}

std::optional<llvm::SmallVector<int64_t>> staticResultShape(Operation *op,
                                                            unsigned index) {
  auto type = dyn_cast<RankedTensorType>(op->getResult(index).getType());
  if (!type || !type.hasStaticShape())
    return std::nullopt;
  return llvm::SmallVector<int64_t>(type.getShape());
}

bool isIntegerTensor(Value value) {
  return isa<IntegerType>(getElementTypeOrSelf(value.getType()));
}

std::optional<int64_t> windowOutputSize(int64_t input, int64_t kernel,
                                        int64_t stride, int64_t padBegin,
                                        int64_t padEnd, int64_t dilation,
                                        bool ceilMode) {
  int64_t extent = dilation * (kernel - 1) + 1;
  int64_t room = input + padBegin + padEnd - extent;
  if (room < 0 || stride <= 0)
    return std::nullopt;
  int64_t size = (ceilMode ? (room + stride - 1) / stride : room / stride) + 1;
  // ceil_mode never starts a window in the end padding (PyTorch's rule,
  // which ONNX adopted).
  if (ceilMode && (size - 1) * stride >= input + padBegin)
    --size;
  return size;
}

llvm::Expected<Window> makeWindow(size_t spatialRank,
                                  llvm::ArrayRef<int64_t> kernel,
                                  llvm::ArrayRef<int64_t> strides,
                                  llvm::ArrayRef<int64_t> pads,
                                  llvm::ArrayRef<int64_t> dilations) {
  if (kernel.size() != spatialRank || strides.size() != spatialRank ||
      pads.size() != 2 * spatialRank || dilations.size() != spatialRank)
    return kernelError("window attributes do not match " +
                       std::to_string(spatialRank) + " spatial dims");
  Window window;
  window.kernel.assign(kernel.begin(), kernel.end());
  window.strides.assign(strides.begin(), strides.end());
  window.padsBegin.assign(pads.begin(), pads.begin() + spatialRank);
  window.padsEnd.assign(pads.begin() + spatialRank, pads.end());
  window.dilations.assign(dilations.begin(), dilations.end());
  for (size_t i = 0; i < spatialRank; ++i)
    if (kernel[i] <= 0 || strides[i] <= 0 || dilations[i] <= 0 ||
        window.padsBegin[i] < 0 || window.padsEnd[i] < 0)
      return kernelError("kernel, strides and dilations must be positive and "
                         "pads non-negative");
  return window;
}

llvm::Expected<llvm::SmallVector<int64_t>>
windowedShape(llvm::ArrayRef<int64_t> inputShape, int64_t channels,
              const Window &window, bool ceilMode) {
  if (inputShape.size() != window.rank() + 2)
    return kernelError("input " + formatShape(inputShape) + " does not have " +
                       std::to_string(window.rank()) + " spatial dims");
  llvm::SmallVector<int64_t> shape = {inputShape[0], channels};
  for (size_t i = 0; i < window.rank(); ++i) {
    auto size = windowOutputSize(
        inputShape[i + 2], window.kernel[i], window.strides[i],
        window.padsBegin[i], window.padsEnd[i], window.dilations[i], ceilMode);
    if (!size)
      return kernelError("the window does not fit input " +
                         formatShape(inputShape));
    shape.push_back(*size);
  }
  return shape;
}

llvm::SmallVector<WindowTap> windowTaps(const Window &window,
                                        llvm::ArrayRef<int64_t> inputSpatial,
                                        llvm::ArrayRef<int64_t> output) {
  llvm::SmallVector<WindowTap> taps;
  llvm::SmallVector<int64_t> inputStrides = stridesOf(inputSpatial);
  int64_t kernelFlat = 0;
  forEachIndex(window.kernel, [&](llvm::ArrayRef<int64_t> kernel) {
    int64_t inputFlat = 0;
    bool inside = true;
    for (size_t d = 0; d < window.rank() && inside; ++d) {
      int64_t position = output[d] * window.strides[d] - window.padsBegin[d] +
                         kernel[d] * window.dilations[d];
      inside = position >= 0 && position < inputSpatial[d];
      inputFlat += position * inputStrides[d];
    }
    if (inside)
      taps.push_back({kernelFlat, inputFlat});
    ++kernelFlat;
  });
  return taps;
}

double averagePoolDivisor(const Window &window,
                          llvm::ArrayRef<int64_t> inputSpatial,
                          llvm::ArrayRef<int64_t> output,
                          bool countIncludePad) {
  double withPads = 1.0, inside = 1.0;
  for (size_t d = 0; d < window.rank(); ++d) {
    int64_t start = output[d] * window.strides[d] - window.padsBegin[d];
    int64_t end =
        std::min(start + window.kernel[d], inputSpatial[d] + window.padsEnd[d]);
    withPads *= static_cast<double>(end - start);
    int64_t clippedStart = std::max<int64_t>(start, 0);
    int64_t clippedEnd = std::min(end, inputSpatial[d]);
    inside *=
        static_cast<double>(std::max<int64_t>(clippedEnd - clippedStart, 0));
  }
  return countIncludePad ? withPads : inside;
}

int64_t maxPoolArgmax(const Window &window,
                      llvm::ArrayRef<int64_t> inputSpatial,
                      llvm::ArrayRef<int64_t> output,
                      llvm::ArrayRef<double> plane) {
  int64_t best = -1;
  for (const WindowTap &tap : windowTaps(window, inputSpatial, output)) {
    double value = plane[tap.input];
    // Strictly greater keeps the first of equal maxima (PyTorch's test).
    if (best < 0 || value > plane[best] || std::isnan(value))
      best = tap.input;
  }
  return best;
}

void forEachIndex(llvm::ArrayRef<int64_t> shape,
                  llvm::function_ref<void(llvm::ArrayRef<int64_t>)> body) {
  if (product(shape) == 0)
    return;
  llvm::SmallVector<int64_t> index(shape.size(), 0);
  while (true) {
    body(index);
    // Odometer increment, last dim fastest.
    int64_t d = static_cast<int64_t>(shape.size()) - 1;
    for (; d >= 0; --d) {
      if (++index[d] < shape[d])
        break;
      index[d] = 0;
    }
    if (d < 0)
      return;
  }
}

llvm::Error forEachConvMatrixEntry(
    llvm::ArrayRef<int64_t> weight, llvm::ArrayRef<int64_t> input,
    llvm::ArrayRef<int64_t> output, llvm::ArrayRef<int64_t> strides,
    llvm::ArrayRef<int64_t> pads,
    llvm::function_ref<void(int64_t, int64_t)> visit) {
  size_t spatial = input.size();
  if (weight.size() != spatial + 2 || output.size() != spatial ||
      strides.size() != spatial || pads.size() != spatial)
    return kernelError("conv_matrix needs a weight [M, C, K...] and one input "
                       "size, output size, stride and pad per spatial dim");
  llvm::ArrayRef<int64_t> kernel = weight.drop_front(2);
  int64_t taps = product(kernel);
  // The tap of each (output, input) position pair, flat in the kernel.
  llvm::SmallVector<int64_t> tapOf;
  bool inside = true;
  forEachIndex(output, [&](llvm::ArrayRef<int64_t> o) {
    forEachIndex(input, [&](llvm::ArrayRef<int64_t> i) {
      int64_t tap = 0;
      for (size_t d = 0; d < spatial; ++d) {
        int64_t t = i[d] - o[d] * strides[d] + pads[d];
        inside &= t >= 0 && t < kernel[d];
        tap = tap * kernel[d] + t;
      }
      tapOf.push_back(tap);
    });
  });
  if (!inside)
    return kernelError("conv_matrix: an output position reads an input "
                       "position outside the kernel");
  int64_t outputs = product(output), inputs = product(input);
  int64_t entry = 0;
  for (int64_t m = 0; m < weight[0]; ++m)
    for (int64_t o = 0; o < outputs; ++o)
      for (int64_t c = 0; c < weight[1]; ++c)
        for (int64_t i = 0; i < inputs; ++i)
          visit(entry++, (m * weight[1] + c) * taps + tapOf[o * inputs + i]);
  return llvm::Error::success();
}

} // namespace trainc::interpreter
