//===- DnnlKernels.cpp - matmul, gemm, pooling, batch norm on oneDNN ------===//
//
// Backend "dnnl" (the convolutions are in DnnlConvKernels.cpp; the
// prepared-program machinery in DnnlSupport.cpp). Each kernel computes its
// graph op's exact semantics, or refuses the launch when oneDNN would
// differ (the dispatch predicates in dialects/kernel/BackendRegistry.cpp
// mirror these refusals):
//
//  * matmul: numpy broadcasting of batch dims, 1-D operands promoted;
//  * gemm: transposes as strides; c as a bias when alpha = beta = 1 and c
//    is a row, otherwise copied and added by a `sum` post-op (alpha as the
//    output scale);
//  * pooling: no window may lie entirely in the padding (oneDNN's max is
//    then the lowest float, not -inf, and its average 0); an average that
//    counts the padding must not cross the end padding (ceil_mode: oneDNN
//    divides by the whole kernel, PyTorch by the window clipped to input +
//    pads). Max pooling selects the first maximal tap in row-major window
//    order, as the reference does. oneDNN never selects NaN: a host step
//    after the primitive sets the windows holding one to NaN, as PyTorch
//    outputs them (the gradient kernel still routes a window's gradient to
//    its largest number, not to the NaN); -inf inputs differ;
//  * batch norm: oneDNN's statistics (biased variance); the running
//    statistics are updated on the host with the unbiased variance (as
//    PyTorch does), since oneDNN does not keep them. The gradient kernel
//    recomputes the statistics with a forward primitive into scratch.
//
//===----------------------------------------------------------------------===//
#include "lib/Runtime/kernels/Dnnl.h"

namespace trainc::rt {
namespace {

using dnnl::memory;

bool checkNotEmpty(const Launch &launch, std::string &error) {
  for (const auto *operands : {&launch.inputs, &launch.outputs})
    for (const OperandInfo &operand : *operands)
      if (operand.numElements() == 0)
        return fail(launch, error, "the dnnl backend runs no empty tensors");
  return true;
}

//===----------------------------------------------------------------------===//
// Matrix products
//===----------------------------------------------------------------------===//

/// Row-major strides of `shape`.
memory::dims denseStrides(const Shape &shape) {
  memory::dims strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;)
    strides[d - 1] = strides[d] * shape[d];
  return strides;
}

/// A matmul operand as the product reads it. After --trainc-fold-transposes
/// the buffer may hold it untransposed: dim d of the operand is dim perm[d]
/// of the buffer (`lhs_perm` / `rhs_perm`), read through that dim's stride.
struct MatmulOperand {
  Shape shape;
  memory::dims strides;

  MatmulOperand(const Launch &launch, unsigned index, const char *permOption)
      : shape(launch.inputs[index].shape), strides(denseStrides(shape)) {
    std::vector<int64_t> perm = launch.ints(permOption);
    if (perm.size() != shape.size())
      return;
    Shape stored = shape;
    memory::dims storedStrides = strides;
    for (size_t d = 0; d < perm.size(); ++d) {
      shape[d] = stored[perm[d]];
      strides[d] = storedStrides[perm[d]];
    }
  }

  /// Inserts a dim of extent 1 at `position` (its stride is never used).
  void insertUnitDim(size_t position) {
    shape.insert(shape.begin() + position, 1);
    strides.insert(strides.begin() + position, 1);
  }

  memory::desc desc(memory::data_type type) const {
    return memory::desc(shape, type, strides);
  }

  /// When `rhs` is shared by the whole batch (its batch dims are all 1)
  /// and this lhs's batch dims and rows are one dense run of rows, makes
  /// this lhs the 2-D [batch * m, k] matrix and returns true.
  bool foldBatchIntoRows(const MatmulOperand &rhs) {
    size_t rank = shape.size();
    if (strides[rank - 1] != 1)
      return false;
    int64_t dense = strides[rank - 2] * shape[rank - 2];
    for (size_t d = rank - 2; d-- > 0; dense *= shape[d])
      if (rhs.shape[d] != 1 || (shape[d] != 1 && strides[d] != dense))
        return false;
    int64_t rows = 1;
    for (size_t d = 0; d + 1 < rank; ++d)
      rows *= shape[d];
    shape = {rows, shape[rank - 1]};
    strides = {strides[rank - 2], 1};
    return true;
  }
};

bool buildMatmul(const Launch &launch, DnnlKernel &kernel,
                 std::string &error) {
  memory::data_type type = dnnlDataType(launch);
  // A third input (--trainc-fuse-activations) is a bias along the last
  // dim, [N] or [1, ..., N].
  if (!checkArity(launch, 2, 3, 1, 1, error))
    return false;
  MatmulOperand lhs(launch, 0, "lhs_perm"), rhs(launch, 1, "rhs_perm");
  Launch logical = launch; // the shapes the product sees
  logical.inputs.resize(2);
  logical.inputs[0].shape = lhs.shape;
  logical.inputs[1].shape = rhs.shape;
  MatmulShape mm;
  if (!makeMatmulShape(logical, mm, error) || !checkNotEmpty(launch, error))
    return false;
  // Promote 1-D operands, then pad the batch dims to one rank.
  if (lhs.shape.size() == 1)
    lhs.insertUnitDim(0);
  if (rhs.shape.size() == 1)
    rhs.insertUnitDim(1);
  size_t rank = std::max(lhs.shape.size(), rhs.shape.size());
  if (rank > static_cast<size_t>(DNNL_MAX_NDIMS))
    return fail(launch, error, "too many dims for the dnnl backend");
  while (lhs.shape.size() < rank)
    lhs.insertUnitDim(0);
  while (rhs.shape.size() < rank)
    rhs.insertUnitDim(0);
  Shape result(rank);
  for (size_t d = 0; d + 2 < rank; ++d)
    result[d] = std::max(lhs.shape[d], rhs.shape[d]);
  result[rank - 2] = mm.m;
  result[rank - 1] = mm.n;
  if (rank > 2 && lhs.foldBatchIntoRows(rhs)) {
    // One [batch * m, k] x [k, n] product: oneDNN runs it on its brgemm
    // kernels, ~8% faster than its batch loop (Transformer FFN products).
    rhs.shape.erase(rhs.shape.begin(), rhs.shape.end() - 2);
    rhs.strides.erase(rhs.strides.begin(), rhs.strides.end() - 2);
    result = {lhs.shape[0], mm.n};
  }
  memory::desc bias;
  if (launch.inputs.size() == 3) {
    const Shape &biasShape = launch.inputs[2].shape;
    if (launch.inputs[0].shape.size() < 2 ||
        launch.inputs[1].shape.size() < 2 || biasShape.empty() ||
        biasShape.back() != mm.n || product(biasShape) != mm.n)
      return fail(launch, error,
                  "a bias (third input) must be [N] or [1, ..., N] and the "
                  "operands matrices");
    Shape broadcast(result.size(), 1);
    broadcast.back() = mm.n;
    bias = plainDesc(broadcast, type);
  }
  dnnl::matmul::desc desc(lhs.desc(type), rhs.desc(type), bias,
                          plainDesc(result, type));
  dnnl::matmul::primitive_desc primitive(desc, dnnlAttributes(launch),
                                         kernel.engine());
  std::vector<std::pair<int, DnnlKernel::Memory>> arguments = {
      {DNNL_ARG_SRC, kernel.input(0, lhs.desc(type))},
      {DNNL_ARG_WEIGHTS, kernel.input(1, rhs.desc(type))},
      {DNNL_ARG_DST, kernel.output(0, plainDesc(result, type))}};
  if (launch.inputs.size() == 3)
    arguments.push_back({DNNL_ARG_BIAS, kernel.input(2, bias)});
  kernel.add(dnnl::matmul(primitive), primitive, arguments);
  return true;
}

/// A [rows, columns] matrix stored transposed or not.
memory::desc matrixDesc(int64_t rows, int64_t columns, bool transposed,
                        memory::data_type type) {
  return memory::desc({rows, columns}, type,
                      transposed ? memory::dims{1, rows}
                                 : memory::dims{columns, 1});
}

bool buildGemm(const Launch &launch, DnnlKernel &kernel, std::string &error) {
  memory::data_type type = dnnlDataType(launch);
  GemmShape g;
  if (!makeGemmShape(launch, g, error) || !checkNotEmpty(launch, error))
    return false;
  memory::desc a = matrixDesc(g.m, g.k, g.transA, type);
  memory::desc b = matrixDesc(g.k, g.n, g.transB, type);
  memory::desc out = plainDesc({g.m, g.n}, type);
  // c as [1 or m, 1 or n].
  Shape cShape = g.hasC ? launch.inputs[2].shape : Shape();
  cShape.insert(cShape.begin(), 2 - std::min<size_t>(2, cShape.size()), 1);
  bool asBias = g.hasC && g.alpha == 1.0 && g.beta == 1.0 && cShape[0] == 1;
  dnnl::post_ops sum;
  if (g.hasC && !asBias)
    sum.append_sum(static_cast<float>(g.beta));
  dnnl::primitive_attr attributes = dnnlAttributes(launch, sum);
  if (g.alpha != 1.0)
    attributes.set_output_scales(0, {static_cast<float>(g.alpha)});
  memory::desc bias = asBias ? plainDesc(cShape, type) : memory::desc();
  dnnl::matmul::desc desc(a, b, bias, out);
  dnnl::matmul::primitive_desc primitive(desc, attributes, kernel.engine());
  auto result = kernel.output(0, out);
  std::vector<std::pair<int, DnnlKernel::Memory>> arguments = {
      {DNNL_ARG_SRC, kernel.input(0, a)},
      {DNNL_ARG_WEIGHTS, kernel.input(1, b)},
      {DNNL_ARG_DST, result}};
  if (asBias) {
    arguments.push_back({DNNL_ARG_BIAS, kernel.input(2, bias)});
  } else if (g.hasC) {
    // out = c broadcast to [m, n]; the sum post-op adds beta * out.
    if (type != memory::data_type::f32)
      return fail(launch, error,
                  "the dnnl backend adds a c that is not a bias row to f32 "
                  "products only");
    auto c = kernel.input(2, plainDesc(cShape, type));
    kernel.addHost([g, c, result](const DnnlKernel &k) {
      const float *from = static_cast<const float *>(k.data(c));
      float *to = static_cast<float *>(k.data(result));
      for (int64_t i = 0; i < g.m; ++i)
        for (int64_t j = 0; j < g.n; ++j)
          to[i * g.n + j] = from[i * g.cStrides[0] + j * g.cStrides[1]];
    });
  }
  kernel.add(dnnl::matmul(primitive), primitive, arguments);
  return true;
}

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

/// oneDNN's view of a pooling window; refuses what oneDNN computes
/// differently from the graph op (see the file comment).
struct DnnlPool {
  memory::dims strides, kernel, dilations, padsBegin, padsEnd;
  dnnl::algorithm algorithm;
};

bool describePool(const Launch &launch, const PoolShape &pool, bool isMax,
                  DnnlPool &dnnlPool, std::string &error) {
  const Window &w = pool.window;
  if (w.rank > 3)
    return fail(launch, error,
                "the dnnl backend runs pooling over 1 to 3 spatial dims");
  if (product(pool.inputShape) == 0)
    return fail(launch, error, "the dnnl backend runs no empty tensors");
  for (size_t d = 0; d < w.rank; ++d) {
    int64_t extent = (w.kernel[d] - 1) * w.dilations[d] + 1;
    int64_t lastStart = (w.outputSpatial[d] - 1) * w.strides[d] - w.padsBegin[d];
    // Every window needs a tap inside the input (a window is empty when it
    // is empty along one dim).
    bool padsOnly = false;
    for (int64_t o = 0; o < w.outputSpatial[d] && !padsOnly; ++o) {
      int64_t start = o * w.strides[d] - w.padsBegin[d];
      bool inside = false;
      for (int64_t k = 0; k < w.kernel[d] && !inside; ++k) {
        int64_t at = start + k * w.dilations[d];
        inside = at >= 0 && at < w.inputSpatial[d];
      }
      padsOnly = !inside;
    }
    if (padsOnly)
      return fail(launch, error,
                  "a window lies entirely in the padding (the dnnl backend "
                  "would not give the reference's -inf / NaN)");
    if (pool.countIncludePad &&
        lastStart + extent > w.inputSpatial[d] + w.padsEnd[d])
      return fail(launch, error,
                  "an average counting the padding crosses the end padding "
                  "(ceil_mode); the dnnl backend would divide differently");
    dnnlPool.strides.push_back(w.strides[d]);
    dnnlPool.kernel.push_back(w.kernel[d]);
    dnnlPool.dilations.push_back(w.dilations[d] - 1);
    dnnlPool.padsBegin.push_back(w.padsBegin[d]);
    // ceil_mode's extra window reads past the end pads: oneDNN wants the
    // end padding that makes its output size formula exact.
    dnnlPool.padsEnd.push_back(std::max(
        w.padsEnd[d], lastStart + extent - w.inputSpatial[d]));
  }
  dnnlPool.algorithm = isMax ? dnnl::algorithm::pooling_max
                       : pool.countIncludePad
                           ? dnnl::algorithm::pooling_avg_include_padding
                           : dnnl::algorithm::pooling_avg_exclude_padding;
  return true;
}

/// Whether oneDNN runs `desc` with generated code, not a plain C++ loop.
bool isJit(const dnnl::primitive_desc_base &desc) {
  return std::string(desc.impl_info_str()).rfind("jit", 0) == 0;
}

/// The channel-blocked layout (nCw / nChw / nCdhw with `block` channels
/// innermost) of an [N, C, D...] f32 tensor.
dnnl::memory::desc channelBlocked(const Shape &shape, int block,
                                  dnnl::memory::data_type type) {
  using tag = dnnl::memory::format_tag;
  static const tag tags[2][3] = {{tag::nCw8c, tag::nChw8c, tag::nCdhw8c},
                                 {tag::nCw16c, tag::nChw16c, tag::nCdhw16c}};
  return dnnl::memory::desc(shape, type, tags[block == 16][shape.size() - 3]);
}

/// oneDNN's max pooling never selects NaN, where PyTorch's (and the
/// reference kernel) output NaN for a window that holds one: a NaN in the
/// data would not reach the loss. After the primitive, each input plane
/// (dense NCHW, f32 or bf16 bits) is scanned for NaN, and only in a plane
/// that holds one are the outputs of the windows covering it set to NaN: a
/// pass that reads the input once when there is none.
void propagateNaN(const Window &window, int64_t planes, bool bf16,
                  const void *input, void *output) {
  auto isNaN = [&](const void *plane, int64_t i) {
    if (bf16)
      return (static_cast<const uint16_t *>(plane)[i] & 0x7fff) > 0x7f80;
    float value = static_cast<const float *>(plane)[i];
    return value != value;
  };
  size_t width = bf16 ? 2 : 4;
#pragma omp parallel for schedule(static)
  for (int64_t p = 0; p < planes; ++p) {
    const char *plane =
        static_cast<const char *>(input) + p * window.inputPlane * width;
    bool any = false;
    if (bf16) {
      const uint16_t *bits = reinterpret_cast<const uint16_t *>(plane);
      for (int64_t i = 0; i < window.inputPlane; ++i)
        any |= (bits[i] & 0x7fff) > 0x7f80;
    } else {
      const float *values = reinterpret_cast<const float *>(plane);
      for (int64_t i = 0; i < window.inputPlane; ++i)
        any |= values[i] != values[i];
    }
    if (!any)
      continue;
    char *out = static_cast<char *>(output) + p * window.outputPlane * width;
    int64_t position[kMaxSpatialRank] = {};
    for (int64_t o = 0; o < window.outputPlane;
         ++o, window.nextOutput(position)) {
      bool nan = false;
      window.forEachTap(position,
                        [&](int64_t, int64_t in) { nan |= isNaN(plane, in); });
      if (!nan)
        continue;
      if (bf16)
        reinterpret_cast<uint16_t *>(out)[o] = 0x7fc0;
      else
        reinterpret_cast<float *>(out)[o] =
            std::numeric_limits<float>::quiet_NaN();
    }
  }
}

/// The forward pooling primitive over dense tensors where oneDNN has
/// generated code for them, else over the first channel-blocked source
/// layout it has generated code for (its destination in the layout oneDNN
/// picks); the kernels reorder into and out of that. oneDNN 2.6 without
/// AVX-512 pools dense NCHW with a plain C++ loop (`simple_nchw`): on an
/// AVX2 Zen 3, ResNet-18's 3x3/2 max pool (32x64x16x16) took 4.4 ms
/// forward and 6.8 ms backward on 2 threads (docs/RUNTIME.md), slower
/// than the reference kernel.
dnnl::pooling_v2_forward::primitive_desc
poolForwardDesc(const PoolShape &pool, const DnnlPool &dnnlPool,
                dnnl::memory::data_type type, dnnl::prop_kind kind,
                const dnnl::engine &engine) {
  auto make = [&](const dnnl::memory::desc &src,
                  const dnnl::memory::desc &dst) {
    dnnl::pooling_v2_forward::desc desc(
        kind, dnnlPool.algorithm, src, dst, dnnlPool.strides, dnnlPool.kernel,
        dnnlPool.dilations, dnnlPool.padsBegin, dnnlPool.padsEnd);
    return dnnl::pooling_v2_forward::primitive_desc(desc, dnnlAttributes(),
                                                    engine);
  };
  auto dense =
      make(plainDesc(pool.inputShape, type), plainDesc(pool.outputShape, type));
  if (isJit(dense))
    return dense;
  for (int block : {16, 8}) {
    try {
      auto blocked = make(channelBlocked(pool.inputShape, block, type),
                          anyLayout(pool.outputShape, type));
      if (isJit(blocked))
        return blocked;
    } catch (const dnnl::error &) { // no implementation for this layout
    }
  }
  return dense;
}

template <bool isMax>
bool buildPool(const Launch &launch, DnnlKernel &kernel, std::string &error) {
  memory::data_type type = dnnlDataType(launch);
  PoolShape pool;
  DnnlPool dnnlPool;
  if (!checkPool(launch, isMax, /*backward=*/false, pool, error) ||
      !describePool(launch, pool, isMax, dnnlPool, error))
    return false;
  auto desc =
      poolForwardDesc(pool, dnnlPool, type, dnnl::prop_kind::forward_inference,
                      kernel.engine());
  DnnlKernel::Memory input = kernel.input(0, plainDesc(pool.inputShape, type));
  DnnlKernel::Memory src = kernel.toLayout(input, desc.src_desc());
  DnnlKernel::Memory output =
      kernel.output(0, plainDesc(pool.outputShape, type));
  DnnlKernel::Memory dst = kernel.like(output, desc.dst_desc());
  kernel.add(dnnl::pooling_v2_forward(desc), desc,
             {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}});
  kernel.reorder(dst, output);
  if (isMax)
    kernel.addHost([window = pool.window,
                    planes = pool.inputShape[0] * pool.inputShape[1],
                    bf16 = type == memory::data_type::bf16, input,
                    output](const DnnlKernel &k) {
      propagateNaN(window, planes, bf16, k.data(input), k.data(output));
    });
  return true;
}

template <bool isMax>
bool buildPoolBackward(const Launch &launch, DnnlKernel &kernel,
                       std::string &error) {
  memory::data_type type = dnnlDataType(launch);
  PoolShape pool;
  DnnlPool dnnlPool;
  if (!checkPool(launch, isMax, /*backward=*/true, pool, error) ||
      !describePool(launch, pool, isMax, dnnlPool, error))
    return false;
  auto forward = poolForwardDesc(
      pool, dnnlPool, type, dnnl::prop_kind::forward_training, kernel.engine());
  // The gradients in the forward's layouts.
  dnnl::pooling_v2_backward::desc backward(
      dnnlPool.algorithm, forward.src_desc(), forward.dst_desc(),
      dnnlPool.strides, dnnlPool.kernel, dnnlPool.dilations,
      dnnlPool.padsBegin, dnnlPool.padsEnd);
  dnnl::pooling_v2_backward::primitive_desc desc(backward, dnnlAttributes(),
                                                 kernel.engine(), forward);
  DnnlKernel::Memory gradInput =
      kernel.output(0, plainDesc(pool.inputShape, type));
  DnnlKernel::Memory diffSrc = kernel.like(gradInput, desc.diff_src_desc());
  std::vector<std::pair<int, DnnlKernel::Memory>> arguments = {
      {DNNL_ARG_DIFF_DST,
       kernel.toLayout(kernel.input(0, plainDesc(pool.outputShape, type)),
                       desc.diff_dst_desc())},
      {DNNL_ARG_DIFF_SRC, diffSrc}};
  if (isMax) {
    // The graph op has no workspace: rerun the forward to get the argmax.
    auto workspace = kernel.temporary(forward.workspace_desc());
    kernel.add(
        dnnl::pooling_v2_forward(forward), forward,
        {{DNNL_ARG_SRC,
          kernel.toLayout(kernel.input(1, plainDesc(pool.inputShape, type)),
                          forward.src_desc())},
         {DNNL_ARG_DST, kernel.temporary(forward.dst_desc())},
         {DNNL_ARG_WORKSPACE, workspace}});
    arguments.push_back({DNNL_ARG_WORKSPACE, workspace});
  }
  kernel.add(dnnl::pooling_v2_backward(desc), desc, arguments);
  kernel.reorder(diffSrc, gradInput);
  return true;
}

//===----------------------------------------------------------------------===//
// Batch norm
//===----------------------------------------------------------------------===//

bool checkNormRank(const Launch &launch, size_t input, std::string &error) {
  size_t rank = launch.inputs[input].shape.size();
  if (rank > 5)
    return fail(launch, error, "the dnnl backend runs batch norm on 2 to 5 dims");
  return checkNotEmpty(launch, error);
}

const dnnl::normalization_flags kScaleShift =
    dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift;

dnnl::batch_normalization_forward::primitive_desc
normForwardDesc(const Shape &shape, double epsilon, dnnl::prop_kind kind,
                dnnl::normalization_flags flags, const dnnl::engine &engine) {
  dnnl::batch_normalization_forward::desc desc(
      kind, plainDesc(shape), static_cast<float>(epsilon), flags);
  return {desc, dnnlAttributes(), engine};
}

bool buildBatchNormTraining(const Launch &launch, DnnlKernel &kernel,
                            std::string &error) {
  BatchNormShape norm;
  if (!checkBatchNormTraining(launch, norm, error) ||
      !checkNormRank(launch, 0, error))
    return false;
  const Shape &shape = launch.inputs[0].shape;
  auto desc = normForwardDesc(shape, norm.epsilon,
                              dnnl::prop_kind::forward_training, kScaleShift,
                              kernel.engine());
  auto mean = kernel.temporary(desc.mean_desc());
  auto variance = kernel.temporary(desc.variance_desc());
  memory::desc channels = plainDesc({norm.channels});
  kernel.add(dnnl::batch_normalization_forward(desc), desc,
             {{DNNL_ARG_SRC, kernel.input(0, plainDesc(shape))},
              {DNNL_ARG_SCALE, kernel.input(1, channels)},
              {DNNL_ARG_SHIFT, kernel.input(2, channels)},
              {DNNL_ARG_MEAN, mean},
              {DNNL_ARG_VARIANCE, variance},
              {DNNL_ARG_DST, kernel.output(0, plainDesc(shape))}});
  // Running statistics (outputs 1, 2 may alias inputs 3, 4), as the
  // reference: ONNX's momentum, the unbiased variance.
  auto runningMean = kernel.input(3, channels);
  auto runningVar = kernel.input(4, channels);
  auto newMean = kernel.output(1, channels);
  auto newVar = kernel.output(2, channels);
  double count = static_cast<double>(norm.batch * norm.inner);
  kernel.addHost([=](const DnnlKernel &k) {
    auto at = [&](DnnlKernel::Memory memory) {
      return static_cast<float *>(k.data(memory));
    };
    double momentum = norm.momentum, correction = count / (count - 1);
    for (int64_t c = 0; c < norm.channels; ++c) {
      at(newMean)[c] = static_cast<float>(momentum * at(runningMean)[c] +
                                          (1.0 - momentum) * at(mean)[c]);
      at(newVar)[c] = static_cast<float>(momentum * at(runningVar)[c] +
                                         (1.0 - momentum) * at(variance)[c] *
                                             correction);
    }
  });
  return true;
}

bool buildBatchNormInference(const Launch &launch, DnnlKernel &kernel,
                             std::string &error) {
  BatchNormShape norm;
  if (!checkBatchNormInference(launch, norm, error) ||
      !checkNormRank(launch, 0, error))
    return false;
  const Shape &shape = launch.inputs[0].shape;
  auto desc = normForwardDesc(
      shape, norm.epsilon, dnnl::prop_kind::forward_inference,
      kScaleShift | dnnl::normalization_flags::use_global_stats,
      kernel.engine());
  memory::desc channels = plainDesc({norm.channels});
  kernel.add(dnnl::batch_normalization_forward(desc), desc,
             {{DNNL_ARG_SRC, kernel.input(0, plainDesc(shape))},
              {DNNL_ARG_SCALE, kernel.input(1, channels)},
              {DNNL_ARG_SHIFT, kernel.input(2, channels)},
              {DNNL_ARG_MEAN, kernel.input(3, channels)},
              {DNNL_ARG_VARIANCE, kernel.input(4, channels)},
              {DNNL_ARG_DST, kernel.output(0, plainDesc(shape))}});
  return true;
}

bool buildBatchNormBackward(const Launch &launch, DnnlKernel &kernel,
                            std::string &error) {
  BatchNormShape norm;
  if (!checkBatchNormBackward(launch, norm, error) ||
      !checkNormRank(launch, 1, error))
    return false;
  const Shape &shape = launch.inputs[1].shape;
  auto forward = normForwardDesc(shape, norm.epsilon,
                                 dnnl::prop_kind::forward_training,
                                 kScaleShift, kernel.engine());
  dnnl::batch_normalization_backward::desc backward(
      dnnl::prop_kind::backward, plainDesc(shape), plainDesc(shape),
      static_cast<float>(norm.epsilon), kScaleShift);
  dnnl::batch_normalization_backward::primitive_desc desc(
      backward, dnnlAttributes(), kernel.engine(), forward);
  memory::desc channels = plainDesc({norm.channels});
  auto x = kernel.input(1, plainDesc(shape));
  auto scale = kernel.input(2, channels);
  // The batch statistics, from a forward pass into scratch (the shift does
  // not change them: the scale's memory serves as both).
  auto mean = kernel.temporary(forward.mean_desc());
  auto variance = kernel.temporary(forward.variance_desc());
  kernel.add(dnnl::batch_normalization_forward(forward), forward,
             {{DNNL_ARG_SRC, x},
              {DNNL_ARG_SCALE, scale},
              {DNNL_ARG_SHIFT, scale},
              {DNNL_ARG_MEAN, mean},
              {DNNL_ARG_VARIANCE, variance},
              {DNNL_ARG_DST, kernel.temporary(forward.dst_desc())}});
  // oneDNN 2.6 insists on a shift argument it does not read.
  kernel.add(dnnl::batch_normalization_backward(desc), desc,
             {{DNNL_ARG_DIFF_DST, kernel.input(0, plainDesc(shape))},
              {DNNL_ARG_SRC, x},
              {DNNL_ARG_SCALE, scale},
              {DNNL_ARG_SHIFT, scale},
              {DNNL_ARG_MEAN, mean},
              {DNNL_ARG_VARIANCE, variance},
              {DNNL_ARG_DIFF_SRC, kernel.output(0, plainDesc(shape))},
              {DNNL_ARG_DIFF_SCALE, kernel.output(1, channels)},
              {DNNL_ARG_DIFF_SHIFT, kernel.output(2, channels)}});
  return true;
}

} // namespace

void registerDnnlKernels() {
  TRAINC_RT_REGISTER_DNNL_BF16("graph.matmul", buildMatmul);
  TRAINC_RT_REGISTER_DNNL_BF16("graph.gemm", buildGemm);
  TRAINC_RT_REGISTER_DNNL_BF16("graph.max_pool", buildPool<true>);
  TRAINC_RT_REGISTER_DNNL_BF16("graph.avg_pool", buildPool<false>);
  TRAINC_RT_REGISTER_DNNL_BF16("graph.max_pool_backward",
                               buildPoolBackward<true>);
  TRAINC_RT_REGISTER_DNNL_BF16("graph.avg_pool_backward",
                               buildPoolBackward<false>);
  TRAINC_RT_REGISTER_DNNL("graph.batch_norm_training", buildBatchNormTraining);
  TRAINC_RT_REGISTER_DNNL("graph.batch_norm_inference",
                          buildBatchNormInference);
  TRAINC_RT_REGISTER_DNNL("graph.batch_norm_training_backward",
                          buildBatchNormBackward);
  registerDnnlConvKernels();
}

} // namespace trainc::rt
