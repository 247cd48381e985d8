//===- KernelSupport.cpp - checks, attributes, loops and windows ----------===//
#include "lib/Runtime/kernels/KernelSupport.h"

#include <cerrno>
#include <cstdlib>

namespace trainc::rt {

//===----------------------------------------------------------------------===//
// Errors and checks
//===----------------------------------------------------------------------===//

bool fail(const Launch &launch, std::string &error,
          const std::string &message) {
  error =
      (launch.op.empty() ? std::string("kernel") : launch.op) + ": " + message;
  return false;
}

std::string formatShape(const Shape &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

int64_t product(const int64_t *begin, const int64_t *end) {
  int64_t count = 1;
  for (; begin != end; ++begin)
    count *= *begin;
  return count;
}

int64_t product(const Shape &shape) {
  return product(shape.data(), shape.data() + shape.size());
}

Shape stridesOf(const Shape &shape) {
  Shape strides(shape.size(), 1);
  for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  return strides;
}

static std::string range(size_t low, size_t high) {
  return low == high ? std::to_string(low)
                     : std::to_string(low) + ".." + std::to_string(high);
}

bool checkArity(const Launch &launch, size_t minInputs, size_t maxInputs,
                size_t minOutputs, size_t maxOutputs, std::string &error) {
  size_t inputs = launch.inputs.size(), outputs = launch.outputs.size();
  if (inputs < minInputs || inputs > maxInputs)
    return fail(launch, error,
                "expected " + range(minInputs, maxInputs) + " inputs, got " +
                    std::to_string(inputs));
  if (outputs < minOutputs || outputs > maxOutputs)
    return fail(launch, error,
                "expected " + range(minOutputs, maxOutputs) + " outputs, got " +
                    std::to_string(outputs));
  return true;
}

bool checkOutput(const Launch &launch, size_t index, DType dtype,
                 const Shape &shape, std::string &error) {
  const OperandInfo &output = launch.outputs[index];
  if (output.dtype != dtype)
    return fail(launch, error,
                "output " + std::to_string(index) + " has element type " +
                    dtypeName(output.dtype) + ", expected " + dtypeName(dtype));
  if (output.shape != shape)
    return fail(launch, error,
                "output " + std::to_string(index) + " has shape " +
                    formatShape(output.shape) + ", expected " +
                    formatShape(shape));
  return true;
}

bool checkShape(const Launch &launch, const OperandInfo &operand,
                const Shape &shape, const std::string &what,
                std::string &error) {
  if (operand.shape == shape)
    return true;
  return fail(launch, error,
              what + " has shape " + formatShape(operand.shape) +
                  ", expected " + formatShape(shape));
}

bool checkScalar(const Launch &launch, const OperandInfo &operand,
                 const std::string &what, std::string &error) {
  if (operand.numElements() == 1)
    return true;
  return fail(launch, error,
              what + " must have one element, got shape " +
                  formatShape(operand.shape));
}

bool isIndexType(DType dtype) {
  return dtype == DType::I64 || dtype == DType::I32;
}

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

static bool parseInteger(const std::string &text, int64_t &value) {
  if (text.empty())
    return false;
  errno = 0;
  char *end = nullptr;
  long long parsed = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || *end != '\0')
    return false;
  value = parsed;
  return true;
}

static bool parseReal(const std::string &text, double &value) {
  if (text.empty())
    return false;
  char *end = nullptr;
  value = std::strtod(text.c_str(), &end);
  return *end == '\0';
}

void Attributes::problem(const std::string &message) {
  if (firstProblem.empty())
    firstProblem = message;
}

const std::string *Attributes::lookup(const std::string &name, bool required) {
  auto it = launch.attributes.find(name);
  if (it != launch.attributes.end())
    return &it->second;
  if (required)
    problem("missing attribute '" + name + "'");
  return nullptr;
}

std::optional<int64_t> Attributes::optionalInteger(const std::string &name) {
  const std::string *text = lookup(name, false);
  if (!text)
    return std::nullopt;
  int64_t value = 0;
  if (!parseInteger(*text, value)) {
    problem("attribute '" + name + "' is not an integer: '" + *text + "'");
    return std::nullopt;
  }
  return value;
}

int64_t Attributes::integer(const std::string &name) {
  if (!lookup(name, true))
    return 0;
  return optionalInteger(name).value_or(0);
}

int64_t Attributes::integer(const std::string &name, int64_t defaultValue) {
  return optionalInteger(name).value_or(defaultValue);
}

Shape Attributes::integers(const std::string &name) {
  Shape values;
  const std::string *text = lookup(name, true);
  if (!text || text->empty())
    return values;
  size_t begin = 0;
  while (true) {
    size_t comma = text->find(',', begin);
    int64_t value = 0;
    if (!parseInteger(text->substr(begin, comma - begin), value)) {
      problem("attribute '" + name + "' is not a list of integers: '" + *text +
              "'");
      return {};
    }
    values.push_back(value);
    if (comma == std::string::npos)
      return values;
    begin = comma + 1;
  }
}

std::optional<double> Attributes::optionalReal(const std::string &name) {
  const std::string *text = lookup(name, false);
  if (!text)
    return std::nullopt;
  double value = 0.0;
  if (!parseReal(*text, value)) {
    problem("attribute '" + name + "' is not a number: '" + *text + "'");
    return std::nullopt;
  }
  return value;
}

double Attributes::real(const std::string &name) {
  if (!lookup(name, true))
    return 0.0;
  return optionalReal(name).value_or(0.0);
}

double Attributes::real(const std::string &name, double defaultValue) {
  return optionalReal(name).value_or(defaultValue);
}

bool Attributes::flag(const std::string &name, bool defaultValue) {
  const std::string *text = lookup(name, false);
  if (!text)
    return defaultValue;
  if (*text == "1" || *text == "true")
    return true;
  if (*text == "0" || *text == "false")
    return false;
  problem("attribute '" + name + "' is not a boolean (0/1): '" + *text + "'");
  return defaultValue;
}

std::string Attributes::string(const std::string &name,
                               const std::string &defaultValue) {
  const std::string *text = lookup(name, false);
  return text ? *text : defaultValue;
}

std::string Attributes::string(const std::string &name) {
  const std::string *text = lookup(name, true);
  return text ? *text : std::string();
}

bool Attributes::ok(std::string &error) const {
  if (firstProblem.empty())
    return true;
  return fail(launch, error, firstProblem);
}

//===----------------------------------------------------------------------===//
// Broadcasting and strided loops
//===----------------------------------------------------------------------===//

std::optional<Shape> broadcastShapes(const Shape &a, const Shape &b) {
  size_t rank = std::max(a.size(), b.size());
  Shape result(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    int64_t x = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t y = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (x == 1)
      result[i] = y;
    else if (y == 1 || x == y)
      result[i] = x;
    else
      return std::nullopt;
  }
  return result;
}

Shape broadcastStrides(const Shape &result, const Shape &operand) {
  Shape strides(result.size(), 0);
  Shape dense = stridesOf(operand);
  size_t offset = result.size() - operand.size();
  for (size_t d = 0; d < operand.size(); ++d)
    strides[d + offset] = operand[d] == 1 ? 0 : dense[d];
  return strides;
}

StridedLoop::StridedLoop(const Shape &fullShape,
                         const std::vector<Shape> &fullStrides,
                         const std::vector<int64_t> &baseOffsets) {
  operands = std::min(fullStrides.size(), kMaxOperands);
  for (size_t k = 0; k < operands && k < baseOffsets.size(); ++k)
    bases[k] = baseOffsets[k];
  total = product(fullShape);
  strides.resize(operands);
  // Drop unit dims, then merge dim d into the previous one when every
  // operand steps over it contiguously (stride[prev] == stride[d] * size).
  for (size_t d = 0; d < fullShape.size(); ++d) {
    if (fullShape[d] == 1)
      continue;
    bool merge = !shape.empty();
    for (size_t k = 0; merge && k < operands; ++k)
      merge = strides[k].back() == fullStrides[k][d] * fullShape[d];
    if (merge) {
      shape.back() *= fullShape[d];
      for (size_t k = 0; k < operands; ++k)
        strides[k].back() = fullStrides[k][d];
      continue;
    }
    shape.push_back(fullShape[d]);
    for (size_t k = 0; k < operands; ++k)
      strides[k].push_back(fullStrides[k][d]);
  }
}

//===----------------------------------------------------------------------===//
// Windows
//===----------------------------------------------------------------------===//

std::optional<int64_t> windowOutputSize(int64_t input, int64_t kernel,
                                        int64_t stride, int64_t padBegin,
                                        int64_t padEnd, int64_t dilation,
                                        bool ceilMode) {
  int64_t extent = dilation * (kernel - 1) + 1;
  int64_t room = input + padBegin + padEnd - extent;
  if (room < 0 || stride <= 0)
    return std::nullopt;
  int64_t size = (ceilMode ? (room + stride - 1) / stride : room / stride) + 1;
  if (ceilMode && (size - 1) * stride >= input + padBegin)
    --size;
  return size;
}

bool makeWindow(const Launch &launch, const Shape &inputShape,
                const Shape &kernel, const Shape &strides, const Shape &pads,
                const Shape &dilations, bool ceilMode, Window &window,
                std::string &error) {
  if (inputShape.size() < 3 || inputShape.size() - 2 > kMaxSpatialRank)
    return fail(launch, error,
                "expected an input [N, C, D...] with 1 to " +
                    std::to_string(kMaxSpatialRank) + " spatial dims, got " +
                    formatShape(inputShape));
  size_t rank = inputShape.size() - 2;
  if (kernel.size() != rank || strides.size() != rank ||
      pads.size() != 2 * rank || dilations.size() != rank)
    return fail(launch, error,
                "window attributes do not match " + std::to_string(rank) +
                    " spatial dims");
  window = Window();
  window.rank = rank;
  window.kernel = kernel;
  window.strides = strides;
  window.padsBegin.assign(pads.begin(), pads.begin() + rank);
  window.padsEnd.assign(pads.begin() + rank, pads.end());
  window.dilations = dilations;
  window.inputSpatial.assign(inputShape.begin() + 2, inputShape.end());
  for (size_t d = 0; d < rank; ++d) {
    if (kernel[d] <= 0 || strides[d] <= 0 || dilations[d] <= 0 ||
        window.padsBegin[d] < 0 || window.padsEnd[d] < 0)
      return fail(launch, error,
                  "kernel, strides and dilations must be positive and pads "
                  "non-negative");
    auto size = windowOutputSize(window.inputSpatial[d], kernel[d], strides[d],
                                 window.padsBegin[d], window.padsEnd[d],
                                 dilations[d], ceilMode);
    if (!size)
      return fail(launch, error,
                  "the window does not fit input " + formatShape(inputShape));
    window.outputSpatial.push_back(*size);
  }
  window.inputStrides = stridesOf(window.inputSpatial);
  window.kernelStrides = stridesOf(kernel);
  window.inputPlane = product(window.inputSpatial);
  window.outputPlane = product(window.outputSpatial);
  window.kernelSize = product(kernel);
  return true;
}

double averagePoolDivisor(const Window &window, const int64_t *output,
                          bool countIncludePad) {
  double withPads = 1.0, inside = 1.0;
  for (size_t d = 0; d < window.rank; ++d) {
    int64_t start = output[d] * window.strides[d] - window.padsBegin[d];
    int64_t end = std::min(start + window.kernel[d],
                           window.inputSpatial[d] + window.padsEnd[d]);
    withPads *= static_cast<double>(end - start);
    int64_t clippedStart = std::max<int64_t>(start, 0);
    int64_t clippedEnd = std::min(end, window.inputSpatial[d]);
    inside *=
        static_cast<double>(std::max<int64_t>(clippedEnd - clippedStart, 0));
  }
  return countIncludePad ? withPads : inside;
}

bool makeConvShape(const Launch &launch, const Shape &inputShape,
                   const Shape &weightShape, ConvShape &conv,
                   std::string &error) {
  Attributes attributes(launch);
  Shape strides = attributes.integers("strides");
  Shape pads = attributes.integers("pads");
  Shape dilations = attributes.integers("dilations");
  int64_t group = attributes.integer("group");
  if (!attributes.ok(error))
    return false;
  if (inputShape.size() < 3 || weightShape.size() != inputShape.size())
    return fail(launch, error,
                "expected input [N, C, D...] and weight [M, C/group, K...], "
                "got " +
                    formatShape(inputShape) + " and " +
                    formatShape(weightShape));
  conv.batch = inputShape[0];
  conv.channels = inputShape[1];
  conv.outChannels = weightShape[0];
  conv.groupChannels = weightShape[1];
  conv.group = group;
  if (group <= 0 || conv.outChannels % group != 0 ||
      conv.groupChannels * group != conv.channels)
    return fail(launch, error,
                "weight " + formatShape(weightShape) + " with group " +
                    std::to_string(group) + " does not match input " +
                    formatShape(inputShape));
  conv.groupOutputs = conv.outChannels / group;
  Shape kernel(weightShape.begin() + 2, weightShape.end());
  if (!makeWindow(launch, inputShape, kernel, strides, pads, dilations,
                  /*ceilMode=*/false, conv.window, error))
    return false;
  conv.inputShape = inputShape;
  conv.weightShape = weightShape;
  conv.outputShape = {conv.batch, conv.outChannels};
  conv.outputShape.insert(conv.outputShape.end(),
                          conv.window.outputSpatial.begin(),
                          conv.window.outputSpatial.end());
  return true;
}

//===----------------------------------------------------------------------===//
// Gather
//===----------------------------------------------------------------------===//

bool makeGatherShape(const Launch &launch, const Shape &dataShape,
                     const OperandInfo &indices, const void *indexData,
                     int64_t axis, GatherShape &gather, std::string &error) {
  int64_t rank = static_cast<int64_t>(dataShape.size());
  if (axis < 0 || axis >= rank)
    return fail(launch, error, "gather axis is out of range");
  if (!isIndexType(indices.dtype))
    return fail(launch, error, "indices must be i32 or i64");
  gather.outer = product(dataShape.data(), dataShape.data() + axis);
  gather.axisSize = dataShape[axis];
  gather.count = indices.numElements();
  gather.inner =
      product(dataShape.data() + axis + 1, dataShape.data() + dataShape.size());
  for (int64_t j = 0; j < gather.count; ++j) {
    int64_t value = indexAt(indexData, indices.dtype, j);
    if (value < -gather.axisSize || value >= gather.axisSize)
      return fail(launch, error,
                  "index " + std::to_string(value) +
                      " is out of range for a dim of size " +
                      std::to_string(gather.axisSize));
  }
  gather.outputShape.assign(dataShape.begin(), dataShape.begin() + axis);
  gather.outputShape.insert(gather.outputShape.end(), indices.shape.begin(),
                            indices.shape.end());
  gather.outputShape.insert(gather.outputShape.end(),
                            dataShape.begin() + axis + 1, dataShape.end());
  return true;
}

bool gatherElementsSources(const Launch &launch, const Shape &dataShape,
                           const OperandInfo &indices, const void *indexData,
                           int64_t axis, std::vector<int64_t> &sources,
                           std::string &error) {
  size_t rank = dataShape.size();
  if (axis < 0 || axis >= static_cast<int64_t>(rank))
    return fail(launch, error, "gather_elements axis is out of range");
  if (!isIndexType(indices.dtype))
    return fail(launch, error, "indices must be i32 or i64");
  if (indices.shape.size() != rank)
    return fail(launch, error, "indices and data have different ranks");
  for (size_t d = 0; d < rank; ++d)
    if (static_cast<int64_t>(d) != axis && indices.shape[d] > dataShape[d])
      return fail(launch, error,
                  "indices exceed the data in dim " + std::to_string(d));
  Shape dataStrides = stridesOf(dataShape);
  int64_t size = dataShape[axis], count = indices.numElements();
  sources.resize(count);
  Shape index(rank, 0);
  for (int64_t j = 0; j < count; ++j) {
    int64_t value = indexAt(indexData, indices.dtype, j);
    if (value < -size || value >= size)
      return fail(launch, error,
                  "index " + std::to_string(value) +
                      " is out of range for a dim of size " +
                      std::to_string(size));
    int64_t flat = 0;
    for (size_t d = 0; d < rank; ++d)
      flat +=
          (static_cast<int64_t>(d) == axis ? (value < 0 ? value + size : value)
                                           : index[d]) *
          dataStrides[d];
    sources[j] = flat;
    // The next row-major position of the indices.
    for (size_t d = rank; d-- > 0;)
      if (++index[d] < indices.shape[d])
        break;
      else
        index[d] = 0;
  }
  return true;
}

bool checkConv(const Launch &launch, ConvShape &conv, std::string &error) {
  if (!checkArity(launch, 2, 3, 1, 1, error))
    return false;
  const OperandInfo &input = launch.inputs[0];
  if (!makeConvShape(launch, input.shape, launch.inputs[1].shape, conv, error))
    return false;
  for (const OperandInfo &operand : launch.inputs)
    if (operand.dtype != input.dtype)
      return fail(launch, error, "operands have different element types");
  if (launch.inputs.size() == 3 &&
      !checkShape(launch, launch.inputs[2], {conv.outChannels}, "bias", error))
    return false;
  return checkOutput(launch, 0, input.dtype, conv.outputShape, error);
}

/// The shared part of both conv gradients: `shapeName` is the attribute
/// holding the result's shape; the result is the forward input (else the
/// weight) when `resultIsInput`.
static bool checkConvBackward(const Launch &launch, const char *shapeName,
                              bool resultIsInput, ConvShape &conv,
                              std::string &error) {
  if (!checkArity(launch, 2, 2, 1, 1, error))
    return false;
  Attributes attributes(launch);
  Shape resultShape = attributes.integers(shapeName);
  if (!attributes.ok(error))
    return false;
  const OperandInfo &gradOutput = launch.inputs[0], &other = launch.inputs[1];
  const Shape &inputShape = resultIsInput ? resultShape : other.shape;
  const Shape &weightShape = resultIsInput ? other.shape : resultShape;
  if (!makeConvShape(launch, inputShape, weightShape, conv, error) ||
      !checkShape(launch, gradOutput, conv.outputShape, "grad_output", error) ||
      !checkOutput(launch, 0, gradOutput.dtype, resultShape, error))
    return false;
  if (other.dtype != gradOutput.dtype)
    return fail(launch, error, "operands have different element types");
  return true;
}

bool checkConvBackwardInput(const Launch &launch, ConvShape &conv,
                            std::string &error) {
  return checkConvBackward(launch, "input_shape", true, conv, error);
}

bool checkConvBackwardWeight(const Launch &launch, ConvShape &conv,
                             std::string &error) {
  return checkConvBackward(launch, "weight_shape", false, conv, error);
}

//===----------------------------------------------------------------------===//
// Pooling and batch norm checks
//===----------------------------------------------------------------------===//

bool checkPool(const Launch &launch, bool isMax, bool backward,
               PoolShape &pool, std::string &error) {
  size_t inputs = backward && isMax ? 2 : 1;
  if (!checkArity(launch, inputs, inputs, 1, 1, error))
    return false;
  Attributes attributes(launch);
  Shape kernel = attributes.integers("kernel_shape");
  Shape strides = attributes.integers("strides");
  Shape pads = attributes.integers("pads");
  Shape dilations = isMax ? attributes.integers("dilations")
                          : Shape(kernel.size(), 1);
  pool.ceilMode = attributes.flag("ceil_mode", false);
  pool.countIncludePad =
      !isMax && attributes.flag("count_include_pad", false);
  // The forward input: the operand, or avg_pool_backward's attribute.
  pool.inputShape = !backward ? launch.inputs[0].shape
                    : isMax   ? launch.inputs[1].shape
                              : attributes.integers("input_shape");
  if (!attributes.ok(error) ||
      !makeWindow(launch, pool.inputShape, kernel, strides, pads, dilations,
                  pool.ceilMode, pool.window, error))
    return false;
  pool.outputShape = {pool.inputShape[0], pool.inputShape[1]};
  pool.outputShape.insert(pool.outputShape.end(),
                          pool.window.outputSpatial.begin(),
                          pool.window.outputSpatial.end());
  const OperandInfo &first = launch.inputs[0];
  if (!backward)
    return checkOutput(launch, 0, first.dtype, pool.outputShape, error);
  if (!checkShape(launch, first, pool.outputShape, "grad_output", error) ||
      !checkOutput(launch, 0, first.dtype, pool.inputShape, error))
    return false;
  if (isMax && launch.inputs[1].dtype != first.dtype)
    return fail(launch, error, "operands have different element types");
  return true;
}

/// [N, C, inner...] and per-channel [C] operands [first, first + count) of
/// a batch norm; output 0 is like the input.
static bool checkChannels(const Launch &launch, size_t input, size_t first,
                          size_t count, BatchNormShape &norm,
                          std::string &error) {
  const OperandInfo &x = launch.inputs[input];
  if (x.shape.size() < 2)
    return fail(launch, error,
                "expected an [N, C, ...] input, got " + formatShape(x.shape));
  norm.batch = x.shape[0];
  norm.channels = x.shape[1];
  norm.inner = product(x.shape.data() + 2, x.shape.data() + x.shape.size());
  for (size_t i = first; i < first + count; ++i) {
    if (launch.inputs[i].dtype != x.dtype)
      return fail(launch, error, "operands have different element types");
    if (!checkShape(launch, launch.inputs[i], {norm.channels},
                    "operand " + std::to_string(i), error))
      return false;
  }
  return checkOutput(launch, 0, x.dtype, x.shape, error);
}

bool checkBatchNormTraining(const Launch &launch, BatchNormShape &norm,
                            std::string &error) {
  if (!checkArity(launch, 5, 5, 3, 3, error))
    return false;
  Attributes attributes(launch);
  norm.epsilon = attributes.real("epsilon");
  norm.momentum = attributes.real("momentum");
  if (!attributes.ok(error) || !checkChannels(launch, 0, 1, 4, norm, error))
    return false;
  for (size_t i = 1; i < 3; ++i)
    if (!checkOutput(launch, i, launch.inputs[0].dtype, {norm.channels},
                     error))
      return false;
  if (norm.batch * norm.inner <= 1)
    return fail(launch, error,
                "batch statistics need more than one value per channel");
  return true;
}

bool checkBatchNormInference(const Launch &launch, BatchNormShape &norm,
                             std::string &error) {
  if (!checkArity(launch, 5, 5, 1, 1, error))
    return false;
  Attributes attributes(launch);
  norm.epsilon = attributes.real("epsilon");
  return attributes.ok(error) && checkChannels(launch, 0, 1, 4, norm, error);
}

bool checkBatchNormBackward(const Launch &launch, BatchNormShape &norm,
                            std::string &error) {
  if (!checkArity(launch, 3, 3, 3, 3, error))
    return false;
  Attributes attributes(launch);
  norm.epsilon = attributes.real("epsilon");
  if (!attributes.ok(error) || !checkChannels(launch, 1, 2, 1, norm, error))
    return false;
  const OperandInfo &gradOutput = launch.inputs[0], &x = launch.inputs[1];
  if (!checkShape(launch, gradOutput, x.shape, "grad_output", error) ||
      !checkOutput(launch, 1, x.dtype, {norm.channels}, error) ||
      !checkOutput(launch, 2, x.dtype, {norm.channels}, error))
    return false;
  if (gradOutput.dtype != x.dtype)
    return fail(launch, error, "operands have different element types");
  return true;
}

} // namespace trainc::rt
