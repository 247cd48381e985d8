//===- GeneratedConvKernels.cpp - convolutions and their gradients --------===//
//
// graph.conv, graph.conv_backward_input and graph.conv_backward_weight as
// loop nests whose input maps are the convolution's windows: position o
// and tap k of a spatial dim read element o * stride + k * dilation of the
// zero-padded input. With groups, channels are [G, C/G] and output
// channels [G, M/G] (views of the same buffers), so every map but the
// window's is a projected permutation.
//
//   forward        y[n,g,m,o]  = bias[g,m] + sum_{c,k} xp[n,g,c,o*s+k*d] *
//                                                       w[g,m,c,k]
//   input grad     dx[n,g,c,h] = sum_{m,k} dyd[n,g,m,h+k*d+M] *
//                                          w[g,m,c,K-1-k]
//   weight grad    dw[g,m,c,k] = sum_{n,o} dy[n,g,m,o] * xp[n,g,c,o*s+k*d]
//
// xp is a zero-padded copy of the input (the padding as zeros, as far as
// the windows reach). The input gradient is the forward convolution of
// the output gradient, dilated by the stride and padded (dyd: dy[o] at
// o*s + (K-1)*d - padBegin + M, zeros elsewhere; M shifts it right when
// the padding is wider than the window), with the kernel flipped: a
// gather, so each gradient element is written once, with no scatter.
//
// Windows sum dimensions, so the main nests run as scalar loops: this is
// the fallback that is always there (every group, stride, dilation and
// padding, 1 to 3 spatial dims), not the fast path (oneDNN and OpenBLAS
// outrank it). Sums are f32, in the order of the domain. Depthwise
// convolutions are the exception: GeneratedDepthwiseKernels.cpp, which
// dispatch prefers to the libraries for some directions and shapes.
//
// graph.conv_matrix and its gradient (a convolution over a small plane as
// a matrix product, --trainc-convs-as-products) are copies: one nest per
// output position o writes row block o of the matrix, [M, o, C, D...],
// from the weight's window of taps that o reads (i - o * stride + pad,
// consecutive along each dim); the gradient zeroes the weight's and adds
// the blocks back into their windows, in the order of o.
//
//===----------------------------------------------------------------------===//
#include "lib/Conversion/ConvGeometry.h"

#include "dialects/graph/ShapeInference.h"

namespace trainc::conversion {

/// Reads the launch's window attributes for input [N, C, D...], weight
/// [M, C/group, K...] and output [N, M, O...].
FailureOr<ConvGeometry> convGeometry(KernelBuilder &kb,
                                     ArrayRef<int64_t> input,
                                     ArrayRef<int64_t> weight,
                                     ArrayRef<int64_t> output) {
  ConvGeometry g;
  size_t rank = input.size() >= 2 ? input.size() - 2 : 0;
  ArrayRef<int64_t> strides = kb.integers("strides");
  ArrayRef<int64_t> pads = kb.integers("pads");
  ArrayRef<int64_t> dilations = kb.integers("dilations");
  g.group = kb.integer("group").value_or(1);
  auto refuse = [&] {
    return kb.launch.emitError("the generated ")
           << kb.launch.getKernel() << " cannot read its geometry";
  };
  if (rank == 0 || weight.size() != rank + 2 || output.size() != rank + 2 ||
      strides.size() != rank || pads.size() != 2 * rank ||
      dilations.size() != rank || g.group < 1 || weight[0] % g.group != 0 ||
      weight[1] * g.group != input[1] || output[1] != weight[0])
    return refuse();
  g.batch = input[0];
  g.groupChannels = weight[1];
  g.groupOutputs = weight[0] / g.group;
  for (size_t d = 0; d < rank; ++d) {
    g.input.push_back(input[d + 2]);
    g.kernel.push_back(weight[d + 2]);
    g.output.push_back(output[d + 2]);
    g.strides.push_back(strides[d]);
    g.padsBegin.push_back(pads[d]);
    g.dilations.push_back(dilations[d]);
    int64_t reach = output[d + 2] == 0
                        ? 0
                        : (output[d + 2] - 1) * strides[d] +
                              (weight[d + 2] - 1) * dilations[d] + 1;
    g.padded.push_back(std::max(pads[d] + input[d + 2], reach));
    if (strides[d] < 1 || dilations[d] < 1 || pads[d] < 0)
      return refuse();
  }
  return g;
}

DilatedGradient dilatedGradient(const ConvGeometry &g) {
  DilatedGradient dyd;
  for (unsigned i = 0; i < g.rank(); ++i) {
    int64_t flipped = (g.kernel[i] - 1) * g.dilations[i];
    int64_t start = flipped - g.padsBegin[i];
    int64_t shift = std::max<int64_t>(0, -start);
    int64_t last =
        g.output[i] == 0 ? 0 : (g.output[i] - 1) * g.strides[i] + start + 1;
    dyd.shape.push_back(std::max(g.input[i] + flipped, last) + shift);
    dyd.offsets.push_back(start + shift);
    dyd.shifts.push_back(shift);
  }
  return dyd;
}

namespace {

/// The zero-padded input [N, G, C/G, Dp...] of `input` ([N, G, C/G, D...]).
Value paddedInput(KernelBuilder &kb, const ConvGeometry &g, Value input) {
  SmallVector<int64_t> offsets = {0, 0, 0};
  llvm::append_range(offsets, g.padsBegin);
  return placedCopy(kb, input, g.paddedShape(), offsets);
}

/// out + a * b.
SmallVector<Value> multiplyAdd(OpBuilder &b, Location loc, ValueRange x) {
  Value product = arith::MulFOp::create(b, loc, x[0], x[1]);
  return {arith::AddFOp::create(b, loc, x[2], product)};
}

/// out[n, g, a, p...] += sum_{b, k...} in[n, g, b, p*s + k*d + shift] *
/// weight: the forward convolution (a = output channel, b = input channel,
/// weight [g, a, b, k...]) or, `transposed`, the input gradient's
/// convolution of the dilated gradient (a = input channel, b = output
/// channel, weight [g, b, a, K-1-k...], the taps flipped). Domain
/// (n, g, a, b, k..., p...): taps outside, positions inside.
void directConvolution(KernelBuilder &kb, const ConvGeometry &g, Value in,
                       Value weight, Value out, bool transposed,
                       ArrayRef<int64_t> positions, ArrayRef<int64_t> strides,
                       ArrayRef<int64_t> shifts) {
  MLIRContext *context = kb.builder.getContext();
  unsigned rank = g.rank();
  int64_t outer = transposed ? g.groupChannels : g.groupOutputs;
  int64_t inner = transposed ? g.groupOutputs : g.groupChannels;
  SmallVector<int64_t> domain = {g.batch, g.group, outer, inner};
  llvm::append_range(domain, g.kernel);
  llvm::append_range(domain, positions);
  SmallVector<bool> reduction(domain.size(), false);
  for (unsigned d = 3; d < 4 + rank; ++d)
    reduction[d] = true;
  unsigned n = domain.size();
  auto tap = [&](unsigned i) { return affineDim(context, 4 + i); };
  auto position = [&](unsigned i) { return affineDim(context, 4 + rank + i); };
  SmallVector<AffineExpr> window = {affineDim(context, 0), affineDim(context, 1),
                                    affineDim(context, 3)};
  SmallVector<AffineExpr> filter = {affineDim(context, 1),
                                    affineDim(context, transposed ? 3 : 2),
                                    affineDim(context, transposed ? 2 : 3)};
  SmallVector<AffineExpr> result = {affineDim(context, 0), affineDim(context, 1),
                                    affineDim(context, 2)};
  for (unsigned i = 0; i < rank; ++i) {
    window.push_back(position(i) * strides[i] + tap(i) * g.dilations[i] +
                     shifts[i]);
    filter.push_back(transposed ? -tap(i) + (g.kernel[i] - 1) : tap(i));
    result.push_back(position(i));
  }
  kb.nest(domain, reduction, {in, weight}, {out},
          {mapOf(context, n, window), mapOf(context, n, filter),
           mapOf(context, n, result)},
          multiplyAdd);
}

} // namespace

LogicalResult buildConv(KernelBuilder &kb) {
  FailureOr<ConvGeometry> g =
      convGeometry(kb, kb.inputType(0).getShape(), kb.inputType(1).getShape(),
                   kb.outputType(0).getShape());
  if (failed(g))
    return failure();
  if (isDepthwise(*g))
    return buildDepthwiseConv(kb, *g);
  MLIRContext *context = kb.builder.getContext();
  unsigned rank = g->rank();
  bool hasBias = kb.launch.getInputs().size() == 3;
  Value input = kb.input(0, g->inputShape());
  Value weight = kb.input(1, g->weightShape());
  Value output = kb.output(0, g->outputShape());
  Value padded = paddedInput(kb, *g, input);

  // y = bias (or 0), over [N, G, M/G, O...].
  SmallVector<int64_t> outputShape = g->outputShape();
  if (hasBias) {
    Value bias = kb.input(2, {g->group, g->groupOutputs});
    SmallVector<int64_t> zeros(outputShape.size(), 0);
    kb.nest(outputShape, SmallVector<bool>(outputShape.size(), false), {bias},
            {output},
            {mapOf(context, outputShape.size(), {affineDim(context, 1), affineDim(context, 2)}),
             offsetIdentity(context, zeros)},
            [](OpBuilder &, Location, ValueRange x) -> SmallVector<Value> {
              return {x[0]};
            });
  } else {
    zeroFill(kb, output);
  }

  SmallVector<int64_t> noShift(rank, 0);
  directConvolution(kb, *g, padded, weight, output, /*transposed=*/false,
                    g->output, g->strides, noShift);
  return success();
}

LogicalResult buildConvBackwardInput(KernelBuilder &kb) {
  FailureOr<ConvGeometry> g =
      convGeometry(kb, kb.integers("input_shape"), kb.inputType(1).getShape(),
                   kb.inputType(0).getShape());
  if (failed(g))
    return failure();
  if (isDepthwise(*g))
    return buildDepthwiseConvBackwardInput(kb, *g);
  unsigned rank = g->rank();
  Value gradOutput = kb.input(0, g->outputShape());
  Value weight = kb.input(1, g->weightShape());
  Value gradInput = kb.output(0, g->inputShape());

  DilatedGradient dyd = dilatedGradient(*g);
  SmallVector<int64_t> shape = {g->batch, g->group, g->groupOutputs},
                       offsets = {0, 0, 0}, steps = {1, 1, 1};
  llvm::append_range(shape, dyd.shape);
  llvm::append_range(offsets, dyd.offsets);
  llvm::append_range(steps, g->strides);
  Value dilated = placedCopy(kb, gradOutput, shape, offsets, steps);
  zeroFill(kb, gradInput);

  SmallVector<int64_t> unitStrides(rank, 1);
  directConvolution(kb, *g, dilated, weight, gradInput, /*transposed=*/true,
                    g->input, unitStrides, dyd.shifts);
  return success();
}

LogicalResult buildConvBackwardWeight(KernelBuilder &kb) {
  FailureOr<ConvGeometry> g =
      convGeometry(kb, kb.inputType(1).getShape(), kb.integers("weight_shape"),
                   kb.inputType(0).getShape());
  if (failed(g))
    return failure();
  if (isDepthwise(*g))
    return buildDepthwiseConvBackwardWeight(kb, *g);
  MLIRContext *context = kb.builder.getContext();
  unsigned rank = g->rank();
  Value gradOutput = kb.input(0, g->outputShape());
  Value input = kb.input(1, g->inputShape());
  Value gradWeight = kb.output(0, g->weightShape());
  Value padded = paddedInput(kb, *g, input);
  zeroFill(kb, gradWeight);

  // Domain (g, m, c, k..., n, o...).
  SmallVector<int64_t> domain = {g->group, g->groupOutputs, g->groupChannels};
  llvm::append_range(domain, g->kernel);
  domain.push_back(g->batch);
  llvm::append_range(domain, g->output);
  SmallVector<bool> reduction(domain.size(), false);
  for (unsigned d = 3 + rank; d < domain.size(); ++d)
    reduction[d] = true;
  unsigned n = domain.size();
  AffineExpr batch = affineDim(context, 3 + rank);
  auto tap = [&](unsigned i) { return affineDim(context, 3 + i); };
  auto position = [&](unsigned i) { return affineDim(context, 4 + rank + i); };
  SmallVector<AffineExpr> gradient = {batch, affineDim(context, 0), affineDim(context, 1)};
  SmallVector<AffineExpr> window = {batch, affineDim(context, 0), affineDim(context, 2)};
  SmallVector<AffineExpr> result = {affineDim(context, 0), affineDim(context, 1),
                                    affineDim(context, 2)};
  for (unsigned i = 0; i < rank; ++i) {
    gradient.push_back(position(i));
    window.push_back(position(i) * g->strides[i] + tap(i) * g->dilations[i]);
    result.push_back(tap(i));
  }
  kb.nest(domain, reduction, {gradOutput, padded}, {gradWeight},
          {mapOf(context, n, gradient), mapOf(context, n, window),
           mapOf(context, n, result)},
          multiplyAdd);
  return success();
}

namespace {

/// graph.conv_matrix's window attributes, checked: every output position
/// reads every input position through a tap inside the kernel.
struct ConvMatrixGeometry {
  SmallVector<int64_t> weight, input, output, strides, pads;
  unsigned rank() const { return input.size(); }
  /// The matrix as [M, O..., C, D...].
  SmallVector<int64_t> blocks() const {
    SmallVector<int64_t> shape = {weight[0]};
    llvm::append_range(shape, output);
    shape.push_back(weight[1]);
    llvm::append_range(shape, input);
    return shape;
  }
};

FailureOr<ConvMatrixGeometry> convMatrixGeometry(KernelBuilder &kb,
                                                 ArrayRef<int64_t> weight) {
  ConvMatrixGeometry g;
  g.weight.assign(weight.begin(), weight.end());
  g.input.assign(kb.integers("input_spatial").begin(),
                 kb.integers("input_spatial").end());
  g.output.assign(kb.integers("output_spatial").begin(),
                  kb.integers("output_spatial").end());
  g.strides.assign(kb.integers("strides").begin(),
                   kb.integers("strides").end());
  g.pads.assign(kb.integers("pads").begin(), kb.integers("pads").end());
  size_t rank = g.input.size();
  bool fits = rank > 0 && weight.size() == rank + 2 &&
              g.output.size() == rank && g.strides.size() == rank &&
              g.pads.size() == rank;
  for (size_t d = 0; fits && d < rank; ++d)
    fits = graph::readsWholePlane(g.input[d], g.output[d], weight[d + 2],
                                  g.strides[d], g.pads[d]);
  if (!fits)
    return kb.launch.emitError("the generated ")
           << kb.launch.getKernel()
           << " needs a weight [M, C, K...] whose window reads every input "
              "position from every output position";
  return g;
}

/// One nest per output position o over [M, C, D...]: `body` gets the
/// maps of the weight's window that o reads and of row block o of the
/// matrix seen as [M, O..., C, D...].
void forEachBlock(MLIRContext *context, const ConvMatrixGeometry &g,
                  llvm::function_ref<void(ArrayRef<int64_t> domain,
                                          AffineMap window, AffineMap block)>
                      body) {
  unsigned rank = g.rank(), n = 2 + rank;
  SmallVector<int64_t> domain = {g.weight[0], g.weight[1]};
  llvm::append_range(domain, g.input);
  forEachTap(g.output, [&](ArrayRef<int64_t> o) {
    SmallVector<AffineExpr> window = {affineDim(context, 0),
                                      affineDim(context, 1)};
    SmallVector<AffineExpr> block = {affineDim(context, 0)};
    for (unsigned d = 0; d < rank; ++d) {
      window.push_back(affineDim(context, 2 + d) + g.pads[d] -
                       o[d] * g.strides[d]);
      block.push_back(getAffineConstantExpr(o[d], context));
    }
    block.push_back(affineDim(context, 1));
    for (unsigned d = 0; d < rank; ++d)
      block.push_back(affineDim(context, 2 + d));
    body(domain, mapOf(context, n, window), mapOf(context, n, block));
  });
}

} // namespace

LogicalResult buildConvMatrix(KernelBuilder &kb) {
  auto g = convMatrixGeometry(kb, kb.inputType(0).getShape());
  if (failed(g))
    return failure();
  Value weight = kb.input(0, g->weight);
  Value matrix = kb.output(0, g->blocks());
  forEachBlock(
      kb.builder.getContext(), *g,
      [&](ArrayRef<int64_t> domain, AffineMap window, AffineMap block) {
        kb.nest(domain, SmallVector<bool>(domain.size(), false), {weight},
                {matrix}, {window, block},
                [](OpBuilder &, Location, ValueRange x) {
                  return SmallVector<Value>{x[0]};
                });
      });
  return success();
}

LogicalResult buildConvMatrixBackward(KernelBuilder &kb) {
  auto g = convMatrixGeometry(kb, kb.integers("weight_shape"));
  if (failed(g))
    return failure();
  Value gradMatrix = kb.input(0, g->blocks());
  Value gradWeight = kb.output(0, g->weight);
  zeroFill(kb, gradWeight);
  forEachBlock(
      kb.builder.getContext(), *g,
      [&](ArrayRef<int64_t> domain, AffineMap window, AffineMap block) {
        kb.nest(domain, SmallVector<bool>(domain.size(), false),
                {gradMatrix, gradWeight}, {gradWeight}, {block, window, window},
                [](OpBuilder &b, Location loc, ValueRange x) {
                  return SmallVector<Value>{
                      arith::AddFOp::create(b, loc, x[1], x[0])};
                });
      });
  return success();
}

} // namespace trainc::conversion
