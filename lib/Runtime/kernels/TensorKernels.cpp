//===- TensorKernels.cpp - data movement, constants, the dropout mask -----===//
//
// reshape, transpose, expand, concat, slice and gather move elements of
// any dtype (they only look at the element size); graph.constant writes
// its `value` attribute; graph.random_mask draws the Philox mask of
// trainc/Random.h.
//
// graph.constant's descriptor: `value` holds the elements in row-major
// order, comma-separated (integers in decimal, floats with 17 significant
// digits, i1 as 0/1); a single entry is a splat.
//
//===----------------------------------------------------------------------===//
#include "lib/Runtime/kernels/KernelSupport.h"

#include "trainc/Random.h"

#include <cstdlib>

namespace trainc::rt {
namespace {

bool reshapeKernel(const Launch &launch, void *const *inputs,
                   void *const *outputs, std::string &error) {
  if (!checkArity(launch, 1, 1, 1, 1, error))
    return false;
  Attributes attributes(launch);
  Shape shape = attributes.integers("shape");
  if (!attributes.ok(error))
    return false;
  const OperandInfo &input = launch.inputs[0];
  // ONNX Reshape (allowzero = 0): 0 copies the input dim, one -1 is inferred.
  std::optional<size_t> inferred;
  int64_t known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0) {
      if (i >= input.shape.size())
        return fail(launch, error,
                    "entry 0 at index " + std::to_string(i) +
                        " has no input dim to copy");
      shape[i] = input.shape[i];
    }
    if (shape[i] == -1) {
      if (inferred)
        return fail(launch, error, "more than one -1 entry");
      inferred = i;
      continue;
    }
    if (shape[i] < 0)
      return fail(launch, error, "negative entry " + std::to_string(shape[i]));
    known *= shape[i];
  }
  if (inferred) {
    if (known == 0 || input.numElements() % known != 0)
      return fail(launch, error,
                  "cannot infer the -1 entry for input " +
                      formatShape(input.shape));
    shape[*inferred] = input.numElements() / known;
  }
  if (product(shape) != input.numElements())
    return fail(launch, error,
                "cannot reshape " + formatShape(input.shape) + " into " +
                    formatShape(shape));
  if (!checkOutput(launch, 0, input.dtype, shape, error))
    return false;
  if (inputs[0] != outputs[0] && input.bytes() != 0)
    std::memmove(outputs[0], inputs[0], input.bytes());
  return true;
}

/// Copies input 0 into output 0 along `loop` (operand 0 the output,
/// operand 1 the input).
bool stridedCopy(const Launch &launch, const StridedLoop &loop,
                 const void *input, void *output, std::string &error) {
  return withBits(launch, launch.outputs[0].dtype, error, [&](auto tag) {
    using T = decltype(tag);
    const T *x = static_cast<const T *>(input);
    T *y = static_cast<T *>(output);
    loop.run([&](const StridedLoop::Offsets &at,
                 const StridedLoop::Offsets &step, int64_t count) {
      for (int64_t i = 0; i < count; ++i)
        y[at[0] + i * step[0]] = x[at[1] + i * step[1]];
    });
    return true;
  });
}

bool transposeKernel(const Launch &launch, void *const *inputs,
                     void *const *outputs, std::string &error) {
  if (!checkArity(launch, 1, 1, 1, 1, error))
    return false;
  Attributes attributes(launch);
  Shape perm = attributes.integers("perm");
  if (!attributes.ok(error))
    return false;
  const OperandInfo &input = launch.inputs[0];
  size_t rank = input.shape.size();
  std::vector<bool> seen(rank, false);
  if (perm.size() != rank)
    return fail(launch, error, "the permutation does not match the rank");
  Shape shape, strides = stridesOf(input.shape), inputStrides;
  for (int64_t axis : perm) {
    if (axis < 0 || axis >= static_cast<int64_t>(rank) || seen[axis])
      return fail(launch, error, "perm is not a permutation");
    seen[axis] = true;
    shape.push_back(input.shape[axis]);
    inputStrides.push_back(strides[axis]);
  }
  if (!checkOutput(launch, 0, input.dtype, shape, error))
    return false;
  StridedLoop loop(shape, {stridesOf(shape), inputStrides});
  return stridedCopy(launch, loop, inputs[0], outputs[0], error);
}

bool expandKernel(const Launch &launch, void *const *inputs,
                  void *const *outputs, std::string &error) {
  if (!checkArity(launch, 1, 1, 1, 1, error))
    return false;
  Attributes attributes(launch);
  Shape target = attributes.integers("shape");
  if (!attributes.ok(error))
    return false;
  const OperandInfo &input = launch.inputs[0];
  auto shape = broadcastShapes(input.shape, target);
  if (!shape)
    return fail(launch, error,
                "cannot expand " + formatShape(input.shape) + " to " +
                    formatShape(target));
  if (!checkOutput(launch, 0, input.dtype, *shape, error))
    return false;
  StridedLoop loop(*shape,
                   {stridesOf(*shape), broadcastStrides(*shape, input.shape)});
  return stridedCopy(launch, loop, inputs[0], outputs[0], error);
}

bool concatKernel(const Launch &launch, void *const *inputs,
                  void *const *outputs, std::string &error) {
  if (!checkArity(launch, 1, SIZE_MAX, 1, 1, error))
    return false;
  Attributes attributes(launch);
  int64_t axis = attributes.integer("axis");
  if (!attributes.ok(error))
    return false;
  const OperandInfo &first = launch.inputs[0];
  int64_t rank = static_cast<int64_t>(first.shape.size());
  if (axis < 0 || axis >= rank)
    return fail(launch, error, "concat axis is out of range");
  Shape shape = first.shape;
  shape[axis] = 0;
  for (const OperandInfo &input : launch.inputs) {
    if (input.dtype != first.dtype)
      return fail(launch, error, "inputs have different element types");
    for (int64_t d = 0; d < rank; ++d)
      if (static_cast<int64_t>(input.shape.size()) != rank ||
          (d != axis && input.shape[d] != shape[d]))
        return fail(launch, error,
                    "inputs " + formatShape(first.shape) + " and " +
                        formatShape(input.shape) + " differ off the axis");
    shape[axis] += input.shape[axis];
  }
  if (!checkOutput(launch, 0, first.dtype, shape, error))
    return false;
  size_t elementSize = dtypeSize(first.dtype);
  int64_t outer = product(shape.data(), shape.data() + axis);
  int64_t inner = product(shape.data() + axis + 1, shape.data() + shape.size());
  int64_t rowBytes = shape[axis] * inner * elementSize;
  // Each input's bytes per output row, and where they go in the row.
  int64_t count = static_cast<int64_t>(launch.inputs.size());
  std::vector<int64_t> chunks(count), offsets(count, 0);
  for (int64_t k = 0; k < count; ++k) {
    chunks[k] = launch.inputs[k].shape[axis] * inner * elementSize;
    if (k + 1 < count)
      offsets[k + 1] = offsets[k] + chunks[k];
  }
  // One memcpy per (row, input), in the output's order: the threads take
  // contiguous ranges of the output (DenseNet's concatenations of up to 32
  // inputs of a few KiB each are not left to one thread).
  char *out = static_cast<char *>(outputs[0]);
  int64_t copies = outer * count;
#pragma omp parallel for schedule(static) if (outer * rowBytes >=              \
                                              4 * kParallelElements)
  for (int64_t copy = 0; copy < copies; ++copy) {
    int64_t row = copy / count, k = copy % count;
    if (chunks[k])
      std::memcpy(out + row * rowBytes + offsets[k],
                  static_cast<const char *>(inputs[k]) + row * chunks[k],
                  chunks[k]);
  }
  return true;
}

/// The output shape of a normalized slice, or a message.
bool sliceShape(const Launch &launch, const Shape &inputShape,
                const Shape &starts, const Shape &ends, const Shape &steps,
                Shape &shape, std::string &error) {
  size_t rank = inputShape.size();
  if (starts.size() != rank || ends.size() != rank || steps.size() != rank)
    return fail(launch, error, "slice needs one start, end and step per dim");
  for (size_t d = 0; d < rank; ++d) {
    int64_t dim = inputShape[d], start = starts[d], end = ends[d],
            step = steps[d];
    // The normalized form the op's description promises.
    bool valid = step > 0 ? 0 <= start && start <= dim && 0 <= end && end <= dim
                 : step < 0
                     ? 0 <= start && start < dim && -1 <= end && end < dim
                     : false;
    if (!valid)
      return fail(launch, error,
                  "slice (start " + std::to_string(start) + ", end " +
                      std::to_string(end) + ", step " + std::to_string(step) +
                      ") is not normalized for dim " + std::to_string(d) +
                      " of size " + std::to_string(dim));
    int64_t span = step > 0 ? end - start : start - end;
    int64_t stride = step > 0 ? step : -step;
    shape.push_back(std::max<int64_t>(0, (span + stride - 1) / stride));
  }
  return true;
}

/// The loop of a slice: operand 0 walks the sliced shape densely, operand
/// 1 the selected elements of the full tensor.
StridedLoop sliceLoop(const Shape &shape, const Shape &fullShape,
                      const Shape &starts, const Shape &steps) {
  Shape fullStrides = stridesOf(fullShape), strides;
  int64_t base = 0;
  for (size_t d = 0; d < fullShape.size(); ++d) {
    strides.push_back(steps[d] * fullStrides[d]);
    base += starts[d] * fullStrides[d];
  }
  return StridedLoop(shape, {stridesOf(shape), strides}, {0, base});
}

bool sliceKernel(const Launch &launch, void *const *inputs,
                 void *const *outputs, std::string &error) {
  if (!checkArity(launch, 1, 1, 1, 1, error))
    return false;
  Attributes attributes(launch);
  Shape starts = attributes.integers("starts");
  Shape ends = attributes.integers("ends");
  Shape steps = attributes.integers("steps");
  if (!attributes.ok(error))
    return false;
  const OperandInfo &input = launch.inputs[0];
  Shape shape;
  if (!sliceShape(launch, input.shape, starts, ends, steps, shape, error) ||
      !checkOutput(launch, 0, input.dtype, shape, error))
    return false;
  StridedLoop loop = sliceLoop(shape, input.shape, starts, steps);
  return stridedCopy(launch, loop, inputs[0], outputs[0], error);
}

} // namespace

// Shared with BackwardKernels.cpp (slice_backward).
bool sliceGeometry(const Launch &launch, const Shape &inputShape,
                   const Shape &starts, const Shape &ends, const Shape &steps,
                   Shape &shape, std::string &error) {
  return sliceShape(launch, inputShape, starts, ends, steps, shape, error);
}
StridedLoop sliceWalk(const Shape &shape, const Shape &fullShape,
                      const Shape &starts, const Shape &steps) {
  return sliceLoop(shape, fullShape, starts, steps);
}

namespace {

bool gatherKernel(const Launch &launch, void *const *inputs,
                  void *const *outputs, std::string &error) {
  if (!checkArity(launch, 2, 2, 1, 1, error))
    return false;
  Attributes attributes(launch);
  int64_t axis = attributes.integer("axis");
  if (!attributes.ok(error))
    return false;
  const OperandInfo &data = launch.inputs[0], &indices = launch.inputs[1];
  GatherShape gather;
  if (!makeGatherShape(launch, data.shape, indices, inputs[1], axis, gather,
                       error) ||
      !checkOutput(launch, 0, data.dtype, gather.outputShape, error))
    return false;
  size_t rowBytes = gather.inner * dtypeSize(data.dtype);
  const char *x = static_cast<const char *>(inputs[0]);
  char *y = static_cast<char *>(outputs[0]);
  int64_t rows = gather.outer * gather.count;
#pragma omp parallel for schedule(static) if (rows * gather.inner >=           \
                                              kParallelElements)
  for (int64_t row = 0; row < rows; ++row) {
    int64_t o = row / gather.count, j = row % gather.count;
    int64_t index = gather.position(inputs[1], indices.dtype, j);
    if (rowBytes)
      std::memcpy(y + row * rowBytes,
                  x + (o * gather.axisSize + index) * rowBytes, rowBytes);
  }
  return true;
}

bool gatherElementsKernel(const Launch &launch, void *const *inputs,
                          void *const *outputs, std::string &error) {
  if (!checkArity(launch, 2, 2, 1, 1, error))
    return false;
  Attributes attributes(launch);
  int64_t axis = attributes.integer("axis");
  if (!attributes.ok(error))
    return false;
  const OperandInfo &data = launch.inputs[0], &indices = launch.inputs[1];
  std::vector<int64_t> sources;
  if (!gatherElementsSources(launch, data.shape, indices, inputs[1], axis,
                             sources, error) ||
      !checkOutput(launch, 0, data.dtype, indices.shape, error))
    return false;
  size_t bytes = dtypeSize(data.dtype);
  const char *x = static_cast<const char *>(inputs[0]);
  char *y = static_cast<char *>(outputs[0]);
  for (size_t j = 0; j < sources.size(); ++j)
    std::memcpy(y + j * bytes, x + sources[j] * bytes, bytes);
  return true;
}

bool constantKernel(const Launch &launch, void *const *inputs,
                    void *const *outputs, std::string &error) {
  if (!checkArity(launch, 0, 0, 1, 1, error))
    return false;
  Attributes attributes(launch);
  std::string text = attributes.string("value");
  if (!attributes.ok(error))
    return false;
  const OperandInfo &output = launch.outputs[0];
  std::vector<std::string> items;
  for (size_t begin = 0; !text.empty();) {
    size_t comma = text.find(',', begin);
    items.push_back(text.substr(begin, comma - begin));
    if (comma == std::string::npos)
      break;
    begin = comma + 1;
  }
  int64_t count = output.numElements();
  if (static_cast<int64_t>(items.size()) != count &&
      !(items.size() == 1 && count > 0))
    return fail(launch, error,
                "value has " + std::to_string(items.size()) +
                    " elements for output " + formatShape(output.shape));
  return withNumber(launch, output.dtype, error, [&](auto tag) {
    using T = decltype(tag);
    T *y = static_cast<T *>(outputs[0]);
    for (int64_t i = 0; i < count; ++i) {
      const std::string &item = items.size() == 1 ? items[0] : items[i];
      char *end = nullptr;
      long long integer = std::strtoll(item.c_str(), &end, 10);
      if (!item.empty() && *end == '\0') {
        y[i] = fromInteger<T>(integer);
        continue;
      }
      double real = std::strtod(item.c_str(), &end);
      if (item.empty() || *end != '\0')
        return fail(launch, error,
                    "value entry '" + item + "' is not a number");
      y[i] = fromDouble<T>(real);
    }
    return true;
  });
}

bool randomMaskKernel(const Launch &launch, void *const *inputs,
                      void *const *outputs, std::string &error) {
  if (!checkArity(launch, 2, 2, 1, 1, error))
    return false;
  Attributes attributes(launch);
  Shape shape = attributes.integers("shape");
  std::string elementType = attributes.string("element_type");
  double ratio = attributes.real("ratio");
  int64_t stream = attributes.integer("stream");
  if (!attributes.ok(error))
    return false;
  const OperandInfo &seed = launch.inputs[0], &step = launch.inputs[1];
  if (seed.dtype != DType::I64 || step.dtype != DType::I64)
    return fail(launch, error, "seed and step must be i64");
  if (!checkScalar(launch, seed, "seed", error) ||
      !checkScalar(launch, step, "step", error))
    return false;
  auto dtype = parseDType(elementType);
  if (!dtype)
    return fail(launch, error, "unknown element type '" + elementType + "'");
  if (!checkOutput(launch, 0, *dtype, shape, error))
    return false;
  if (!(ratio >= 0.0 && ratio < 1.0))
    return fail(launch, error, "ratio must be in [0, 1)");
  // i64 values wrap into the RNG's unsigned words.
  uint64_t seedWord =
      static_cast<uint64_t>(*static_cast<const int64_t *>(inputs[0]));
  uint64_t stepWord =
      static_cast<uint64_t>(*static_cast<const int64_t *>(inputs[1]));
  uint64_t streamWord = static_cast<uint64_t>(stream);
  int64_t count = product(shape);
  return withFloat(launch, *dtype, error, [&](auto tag) {
    using T = decltype(tag);
    T *y = static_cast<T *>(outputs[0]);
#pragma omp parallel for schedule(static) if (count >= kParallelElements / 8)
    for (int64_t i = 0; i < count; ++i)
      y[i] = static_cast<T>(trainc_random_mask_value(
          seedWord, streamWord, stepWord, static_cast<uint64_t>(i), ratio));
    return true;
  });
}

} // namespace

void registerTensorKernels() {
  const char *ref = "reference";
  TRAINC_RT_REGISTER("graph.constant", ref, constantKernel);
  TRAINC_RT_REGISTER("graph.reshape", ref, reshapeKernel);
  TRAINC_RT_REGISTER("graph.transpose", ref, transposeKernel);
  TRAINC_RT_REGISTER("graph.expand", ref, expandKernel);
  TRAINC_RT_REGISTER("graph.concat", ref, concatKernel);
  TRAINC_RT_REGISTER("graph.slice", ref, sliceKernel);
  TRAINC_RT_REGISTER("graph.gather", ref, gatherKernel);
  TRAINC_RT_REGISTER("graph.gather_elements", ref, gatherElementsKernel);
  TRAINC_RT_REGISTER("graph.random_mask", ref, randomMaskKernel);
}

} // namespace trainc::rt
