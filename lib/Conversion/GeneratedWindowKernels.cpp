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
// outrank it). Sums are f32, in the order of the domain.
//
//===----------------------------------------------------------------------===//
#include "lib/Conversion/KernelBuilder.h"

#include <limits>

namespace trainc::conversion {
namespace {

/// The shapes of a convolution, with channels split by group.
struct ConvGeometry {
  int64_t batch = 0, group = 1, groupChannels = 0, groupOutputs = 0;
  /// Per spatial dim.
  SmallVector<int64_t> input, kernel, output, strides, padsBegin, dilations;
  /// The padded input's extents: as far as the windows reach.
  SmallVector<int64_t> padded;

  size_t rank() const { return input.size(); }
  /// [N, G, C/G, D...], [G, M/G, C/G, K...], [N, G, M/G, O...] and the
  /// padded input [N, G, C/G, Dp...].
  SmallVector<int64_t> inputShape() const { return withSpatial(input, true); }
  SmallVector<int64_t> paddedShape() const {
    return withSpatial(padded, true);
  }
  SmallVector<int64_t> outputShape() const {
    return withSpatial(output, false);
  }
  SmallVector<int64_t> weightShape() const {
    SmallVector<int64_t> shape = {group, groupOutputs, groupChannels};
    llvm::append_range(shape, kernel);
    return shape;
  }

private:
  SmallVector<int64_t> withSpatial(ArrayRef<int64_t> spatial,
                                   bool channels) const {
    SmallVector<int64_t> shape = {batch, group,
                                  channels ? groupChannels : groupOutputs};
    llvm::append_range(shape, spatial);
    return shape;
  }
};

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

AffineExpr dim(MLIRContext *context, unsigned position) {
  return getAffineDimExpr(position, context);
}

/// A map over `numDims` dimensions with `results`.
AffineMap map(MLIRContext *context, unsigned numDims,
              ArrayRef<AffineExpr> results) {
  return AffineMap::get(numDims, 0, results, context);
}

/// The identity map of `rank` dimensions, with `offsets` added.
AffineMap offsetIdentity(MLIRContext *context, ArrayRef<int64_t> offsets) {
  SmallVector<AffineExpr> results;
  for (auto [d, offset] : llvm::enumerate(offsets))
    results.push_back(dim(context, d) + offset);
  return map(context, offsets.size(), results);
}

/// Sets `buffer` (all of it) to zero.
void zero(KernelBuilder &kb, Value buffer) {
  Space space(cast<MemRefType>(buffer.getType()).getShape());
  kb.fill(space, {buffer, space.addAllBut([](unsigned) { return false; })},
          0.0);
}

/// Copies `source` into a new scratch buffer of shape `shape`, filled with
/// `fill` elsewhere, at `offsets` (and `steps`) along each axis (a padded
/// copy), and returns the scratch; `source` itself if that is the same.
Value placedCopy(KernelBuilder &kb, Value source, ArrayRef<int64_t> shape,
                 ArrayRef<int64_t> offsets, ArrayRef<int64_t> steps = {},
                 double fill = 0.0) {
  MLIRContext *context = kb.builder.getContext();
  auto type = cast<MemRefType>(source.getType());
  if (type.getShape() == shape && llvm::all_of(offsets, [](int64_t offset) {
        return offset == 0;
      }) && steps.empty())
    return source;
  Value target = kb.scratch(shape, type.getElementType());
  Space whole(shape);
  kb.fill(whole, {target, whole.addAllBut([](unsigned) { return false; })},
          fill);
  ArrayRef<int64_t> extents = type.getShape();
  SmallVector<AffineExpr> placed;
  for (auto [d, offset] : llvm::enumerate(offsets))
    placed.push_back(dim(context, d) * (steps.empty() ? 1 : steps[d]) +
                     offset);
  SmallVector<int64_t> zeros(extents.size(), 0);
  kb.nest(extents, SmallVector<bool>(extents.size(), false), {source},
          {target},
          {offsetIdentity(context, zeros), map(context, extents.size(), placed)},
          [](OpBuilder &, Location, ValueRange x) -> SmallVector<Value> {
            return {x[0]};
          });
  return target;
}

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
  auto tap = [&](unsigned i) { return dim(context, 4 + i); };
  auto position = [&](unsigned i) { return dim(context, 4 + rank + i); };
  SmallVector<AffineExpr> window = {dim(context, 0), dim(context, 1),
                                    dim(context, 3)};
  SmallVector<AffineExpr> filter = {dim(context, 1),
                                    dim(context, transposed ? 3 : 2),
                                    dim(context, transposed ? 2 : 3)};
  SmallVector<AffineExpr> result = {dim(context, 0), dim(context, 1),
                                    dim(context, 2)};
  for (unsigned i = 0; i < rank; ++i) {
    window.push_back(position(i) * strides[i] + tap(i) * g.dilations[i] +
                     shifts[i]);
    filter.push_back(transposed ? -tap(i) + (g.kernel[i] - 1) : tap(i));
    result.push_back(position(i));
  }
  kb.nest(domain, reduction, {in, weight}, {out},
          {map(context, n, window), map(context, n, filter),
           map(context, n, result)},
          multiplyAdd);
}

} // namespace

LogicalResult buildConv(KernelBuilder &kb) {
  FailureOr<ConvGeometry> g =
      convGeometry(kb, kb.inputType(0).getShape(), kb.inputType(1).getShape(),
                   kb.outputType(0).getShape());
  if (failed(g))
    return failure();
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
            {map(context, outputShape.size(), {dim(context, 1), dim(context, 2)}),
             offsetIdentity(context, zeros)},
            [](OpBuilder &, Location, ValueRange x) -> SmallVector<Value> {
              return {x[0]};
            });
  } else {
    zero(kb, output);
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
  unsigned rank = g->rank();
  Value gradOutput = kb.input(0, g->outputShape());
  Value weight = kb.input(1, g->weightShape());
  Value gradInput = kb.output(0, g->inputShape());

  // dyd: dy dilated by the strides, at (K-1)*d - padBegin + M.
  SmallVector<int64_t> dilatedShape = {g->batch, g->group, g->groupOutputs};
  SmallVector<int64_t> offsets = {0, 0, 0}, steps = {1, 1, 1}, shifts;
  for (unsigned i = 0; i < rank; ++i) {
    int64_t flipped = (g->kernel[i] - 1) * g->dilations[i];
    int64_t start = flipped - g->padsBegin[i];
    int64_t shift = std::max<int64_t>(0, -start);
    int64_t last = g->output[i] == 0
                       ? 0
                       : (g->output[i] - 1) * g->strides[i] + start + 1;
    dilatedShape.push_back(std::max(g->input[i] + flipped, last) + shift);
    offsets.push_back(start + shift);
    steps.push_back(g->strides[i]);
    shifts.push_back(shift);
  }
  Value dilated =
      placedCopy(kb, gradOutput, dilatedShape, offsets, steps);
  zero(kb, gradInput);

  SmallVector<int64_t> unitStrides(rank, 1);
  directConvolution(kb, *g, dilated, weight, gradInput, /*transposed=*/true,
                    g->input, unitStrides, shifts);
  return success();
}

LogicalResult buildConvBackwardWeight(KernelBuilder &kb) {
  FailureOr<ConvGeometry> g =
      convGeometry(kb, kb.inputType(1).getShape(), kb.integers("weight_shape"),
                   kb.inputType(0).getShape());
  if (failed(g))
    return failure();
  MLIRContext *context = kb.builder.getContext();
  unsigned rank = g->rank();
  Value gradOutput = kb.input(0, g->outputShape());
  Value input = kb.input(1, g->inputShape());
  Value gradWeight = kb.output(0, g->weightShape());
  Value padded = paddedInput(kb, *g, input);
  zero(kb, gradWeight);

  // Domain (g, m, c, k..., n, o...).
  SmallVector<int64_t> domain = {g->group, g->groupOutputs, g->groupChannels};
  llvm::append_range(domain, g->kernel);
  domain.push_back(g->batch);
  llvm::append_range(domain, g->output);
  SmallVector<bool> reduction(domain.size(), false);
  for (unsigned d = 3 + rank; d < domain.size(); ++d)
    reduction[d] = true;
  unsigned n = domain.size();
  AffineExpr batch = dim(context, 3 + rank);
  auto tap = [&](unsigned i) { return dim(context, 3 + i); };
  auto position = [&](unsigned i) { return dim(context, 4 + rank + i); };
  SmallVector<AffineExpr> gradient = {batch, dim(context, 0), dim(context, 1)};
  SmallVector<AffineExpr> window = {batch, dim(context, 0), dim(context, 2)};
  SmallVector<AffineExpr> result = {dim(context, 0), dim(context, 1),
                                    dim(context, 2)};
  for (unsigned i = 0; i < rank; ++i) {
    gradient.push_back(position(i));
    window.push_back(position(i) * g->strides[i] + tap(i) * g->dilations[i]);
    result.push_back(tap(i));
  }
  kb.nest(domain, reduction, {gradOutput, padded}, {gradWeight},
          {map(context, n, gradient), map(context, n, window),
           map(context, n, result)},
          multiplyAdd);
  return success();
}


//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

namespace {

/// The shapes of a pooling, input [N, C, D...] and output [N, C, O...].
struct PoolGeometry {
  int64_t batch = 0, channels = 0;
  /// Per spatial dim.
  SmallVector<int64_t> input, kernel, output, strides, padsBegin, padsEnd,
      dilations, padded;
  bool countIncludePad = false;

  size_t rank() const { return input.size(); }
  SmallVector<int64_t> shape(ArrayRef<int64_t> spatial) const {
    SmallVector<int64_t> result = {batch, channels};
    llvm::append_range(result, spatial);
    return result;
  }
  /// The padded input's offsets: [0, 0, padsBegin...].
  SmallVector<int64_t> paddedOffsets() const {
    SmallVector<int64_t> offsets = {0, 0};
    llvm::append_range(offsets, padsBegin);
    return offsets;
  }
  /// Domain (n, c, o..., k...): positions, then taps.
  SmallVector<int64_t> windowDomain() const {
    SmallVector<int64_t> domain = shape(output);
    llvm::append_range(domain, kernel);
    return domain;
  }
  unsigned positionDim(unsigned i) const { return 2 + i; }
  unsigned tapDim(unsigned i) const { return 2 + rank() + i; }
};

FailureOr<PoolGeometry> poolGeometry(KernelBuilder &kb,
                                     ArrayRef<int64_t> input,
                                     ArrayRef<int64_t> output, bool isMax) {
  PoolGeometry g;
  ArrayRef<int64_t> kernel = kb.integers("kernel_shape");
  ArrayRef<int64_t> strides = kb.integers("strides");
  ArrayRef<int64_t> pads = kb.integers("pads");
  ArrayRef<int64_t> dilations = kb.integers("dilations");
  size_t rank = kernel.size();
  if (rank == 0 || input.size() != rank + 2 || output.size() != rank + 2 ||
      strides.size() != rank || pads.size() != 2 * rank ||
      (isMax && dilations.size() != rank) || input[0] != output[0] ||
      input[1] != output[1])
    return kb.launch.emitError("the generated ")
           << kb.launch.getKernel() << " cannot read its geometry";
  g.batch = input[0];
  g.channels = input[1];
  g.countIncludePad = kb.flag("count_include_pad");
  for (size_t d = 0; d < rank; ++d) {
    int64_t dilation = isMax ? dilations[d] : 1;
    g.input.push_back(input[d + 2]);
    g.kernel.push_back(kernel[d]);
    g.output.push_back(output[d + 2]);
    g.strides.push_back(strides[d]);
    g.padsBegin.push_back(pads[d]);
    g.padsEnd.push_back(pads[d + rank]);
    g.dilations.push_back(dilation);
    int64_t reach = output[d + 2] == 0 ? 0
                                       : (output[d + 2] - 1) * strides[d] +
                                             (kernel[d] - 1) * dilation + 1;
    g.padded.push_back(std::max(pads[d] + input[d + 2], reach));
  }
  return g;
}

/// The map of the padded input in the window domain: (n, c, o*s + k*d).
AffineMap windowMap(MLIRContext *context, const PoolGeometry &g) {
  SmallVector<AffineExpr> results = {dim(context, 0), dim(context, 1)};
  for (unsigned i = 0; i < g.rank(); ++i)
    results.push_back(dim(context, g.positionDim(i)) * g.strides[i] +
                      dim(context, g.tapDim(i)) * g.dilations[i]);
  return map(context, g.windowDomain().size(), results);
}

/// The map of a [N, C, O...] buffer in the window domain.
AffineMap positionMap(MLIRContext *context, const PoolGeometry &g) {
  SmallVector<AffineExpr> results = {dim(context, 0), dim(context, 1)};
  for (unsigned i = 0; i < g.rank(); ++i)
    results.push_back(dim(context, g.positionDim(i)));
  return map(context, g.windowDomain().size(), results);
}

/// Reductions over the taps (and, for a scatter, the positions too).
SmallVector<bool> windowReductions(const PoolGeometry &g, bool positions) {
  SmallVector<bool> reduction(g.windowDomain().size(), true);
  reduction[0] = reduction[1] = false;
  if (!positions)
    for (unsigned i = 0; i < g.rank(); ++i)
      reduction[g.positionDim(i)] = false;
  return reduction;
}

Value indexConstant(OpBuilder &b, Location loc, int64_t value) {
  return arith::ConstantIndexOp::create(b, loc, value);
}

/// The row-major number of the current tap in the window, as an i64.
Value tapNumber(OpBuilder &b, Location loc, const PoolGeometry &g) {
  Value number = indexConstant(b, loc, 0);
  for (unsigned i = 0; i < g.rank(); ++i) {
    number = arith::MulIOp::create(b, loc, number,
                                   indexConstant(b, loc, g.kernel[i]));
    number = arith::AddIOp::create(
        b, loc, number, loop::IndexOp::create(b, loc, g.tapDim(i)));
  }
  return arith::IndexCastOp::create(b, loc, b.getI64Type(), number);
}

/// Whether the current tap reads the input, not its padding.
Value tapInside(OpBuilder &b, Location loc, const PoolGeometry &g) {
  Value inside = arith::ConstantIntOp::create(b, loc, 1, 1);
  for (unsigned i = 0; i < g.rank(); ++i) {
    Value position = arith::AddIOp::create(
        b, loc,
        arith::MulIOp::create(
            b, loc, loop::IndexOp::create(b, loc, g.positionDim(i)),
            indexConstant(b, loc, g.strides[i])),
        arith::MulIOp::create(b, loc,
                              loop::IndexOp::create(b, loc, g.tapDim(i)),
                              indexConstant(b, loc, g.dilations[i])));
    // padded position p reads input p - padBegin: inside [pb, pb + D).
    Value low = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge,
                                      position,
                                      indexConstant(b, loc, g.padsBegin[i]));
    Value high = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::slt, position,
        indexConstant(b, loc, g.padsBegin[i] + g.input[i]));
    inside = arith::AndIOp::create(
        b, loc, inside, arith::AndIOp::create(b, loc, low, high));
  }
  return inside;
}

/// The reference's average-pooling divisor at the current position
/// (dims `positionDim` of the nest), as f32: the taps inside the padded
/// input (count_include_pad) or inside the input; 0 for a window entirely
/// in the padding, whose average is then 0/0.
Value poolDivisor(OpBuilder &b, Location loc, const PoolGeometry &g,
                  unsigned (PoolGeometry::*positionDim)(unsigned) const) {
  Value count = indexConstant(b, loc, 1);
  for (unsigned i = 0; i < g.rank(); ++i) {
    Value start = arith::SubIOp::create(
        b, loc,
        arith::MulIOp::create(b, loc,
                              loop::IndexOp::create(b, loc, (g.*positionDim)(i)),
                              indexConstant(b, loc, g.strides[i])),
        indexConstant(b, loc, g.padsBegin[i]));
    Value end = arith::MinSIOp::create(
        b, loc,
        arith::AddIOp::create(b, loc, start, indexConstant(b, loc, g.kernel[i])),
        indexConstant(b, loc, g.input[i] + g.padsEnd[i]));
    Value taps;
    if (g.countIncludePad) {
      taps = arith::SubIOp::create(b, loc, end, start);
    } else {
      Value from =
          arith::MaxSIOp::create(b, loc, start, indexConstant(b, loc, 0));
      Value to = arith::MinSIOp::create(b, loc, end,
                                        indexConstant(b, loc, g.input[i]));
      taps = arith::MaxSIOp::create(b, loc,
                                    arith::SubIOp::create(b, loc, to, from),
                                    indexConstant(b, loc, 0));
    }
    count = arith::MulIOp::create(b, loc, count, taps);
  }
  Value count64 = arith::IndexCastOp::create(b, loc, b.getI64Type(), count);
  return arith::SIToFPOp::create(b, loc, b.getF32Type(), count64);
}

/// Where a window gradient (a scatter over the padded input) lands: the
/// output itself when it is the padded input, else a zeroed scratch whose
/// interior is copied to the output by `finishPaddedGradient`.
Value paddedGradient(KernelBuilder &kb, const PoolGeometry &g, Value output) {
  SmallVector<int64_t> padded = g.shape(g.padded);
  Value target = output;
  if (cast<MemRefType>(output.getType()).getShape() != ArrayRef(padded))
    target = kb.scratch(padded, kb.builder.getF32Type());
  zero(kb, target);
  return target;
}

void finishPaddedGradient(KernelBuilder &kb, const PoolGeometry &g,
                          Value padded, Value output) {
  if (padded == output)
    return;
  MLIRContext *context = kb.builder.getContext();
  SmallVector<int64_t> shape = g.shape(g.input);
  SmallVector<int64_t> zeros(shape.size(), 0);
  kb.nest(shape, SmallVector<bool>(shape.size(), false), {padded}, {output},
          {offsetIdentity(context, g.paddedOffsets()),
           offsetIdentity(context, zeros)},
          [](OpBuilder &, Location, ValueRange x) -> SmallVector<Value> {
            return {x[0]};
          });
}

} // namespace

LogicalResult buildWindowMaxPool(KernelBuilder &kb) {
  FailureOr<PoolGeometry> g = poolGeometry(
      kb, kb.inputType(0).getShape(), kb.outputType(0).getShape(), true);
  if (failed(g))
    return failure();
  MLIRContext *context = kb.builder.getContext();
  double lowest = -std::numeric_limits<double>::infinity();
  Value input = kb.input(0, g->shape(g->input));
  Value output = kb.output(0, g->shape(g->output));
  // Padding as -inf: a maximum over every tap is one over the input's
  // (-inf for a window entirely in the padding, as the reference).
  Value padded = placedCopy(kb, input, g->shape(g->padded),
                            g->paddedOffsets(), {}, lowest);
  Space whole(g->shape(g->output));
  kb.fill(whole, {output, whole.addAllBut([](unsigned) { return false; })},
          lowest);
  kb.nest(g->windowDomain(), windowReductions(*g, false), {padded}, {output},
          {windowMap(context, *g), positionMap(context, *g)},
          [](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
            // A NaN wins.
            return {arith::MaximumFOp::create(b, loc, x[1], x[0])};
          });
  return success();
}

LogicalResult buildWindowMaxPoolBackward(KernelBuilder &kb) {
  FailureOr<PoolGeometry> g = poolGeometry(
      kb, kb.inputType(1).getShape(), kb.inputType(0).getShape(), true);
  if (failed(g))
    return failure();
  MLIRContext *context = kb.builder.getContext();
  Type f32 = kb.builder.getF32Type(), i64 = kb.builder.getI64Type();
  Value gradOutput = kb.input(0, g->shape(g->output));
  Value input = kb.input(1, g->shape(g->input));
  Value gradInput = kb.output(0, g->shape(g->input));
  Value padded =
      placedCopy(kb, input, g->shape(g->padded), g->paddedOffsets());

  // The tap each window routes its gradient to, as the reference chooses
  // it (PoolingKernels.cpp's argmax): the first maximal tap inside the
  // input, a NaN winning (the last one). `chosen` encodes -1 for none
  // yet, t for tap t, -2 - t for a NaN at tap t; `best` is the maximum.
  SmallVector<int64_t> positions = g->shape(g->output);
  Value best = kb.scratch(positions, f32);
  Value chosen = kb.scratch(positions, i64);
  Space whole(positions);
  unsigned all = whole.addAllBut([](unsigned) { return false; });
  kb.fill(whole, {best, all}, 0.0);
  kb.fill(whole, {chosen, all}, -1.0);
  const PoolGeometry &geometry = *g;
  kb.nest(g->windowDomain(), windowReductions(*g, false), {padded},
          {best, chosen},
          {windowMap(context, *g), positionMap(context, *g),
           positionMap(context, *g)},
          [&](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
            Value value = x[0], max = x[1], choice = x[2];
            Value tap = tapNumber(b, loc, geometry);
            auto i64Constant = [&](int64_t v) {
              return arith::ConstantIntOp::create(b, loc, v, 64);
            };
            Value isNan = arith::CmpFOp::create(
                b, loc, arith::CmpFPredicate::UNO, value, value);
            Value sawNan = arith::CmpIOp::create(
                b, loc, arith::CmpIPredicate::sle, choice, i64Constant(-2));
            Value none = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                               choice, i64Constant(-1));
            Value greater = arith::CmpFOp::create(
                b, loc, arith::CmpFPredicate::OGT, value, max);
            Value notNan = arith::XOrIOp::create(
                b, loc, isNan, arith::ConstantIntOp::create(b, loc, 1, 1));
            Value notSawNan = arith::XOrIOp::create(
                b, loc, sawNan, arith::ConstantIntOp::create(b, loc, 1, 1));
            // A number that beats the maximum so far (or is the first).
            Value takes = arith::AndIOp::create(
                b, loc, arith::AndIOp::create(b, loc, notNan, notSawNan),
                arith::OrIOp::create(b, loc, none, greater));
            Value nanChoice =
                arith::SubIOp::create(b, loc, i64Constant(-2), tap);
            Value newChoice = arith::SelectOp::create(
                b, loc, isNan, nanChoice,
                arith::SelectOp::create(b, loc, takes, tap, choice));
            Value newMax = arith::SelectOp::create(b, loc, takes, value, max);
            // Taps in the padding change nothing.
            Value inside = tapInside(b, loc, geometry);
            return {arith::SelectOp::create(b, loc, inside, newMax, max),
                    arith::SelectOp::create(b, loc, inside, newChoice, choice)};
          });

  // dx[n, c, o*s + k*d] += dy[n, c, o] where tap k is the chosen one: a
  // scatter in the forward's window order.
  Value target = paddedGradient(kb, *g, gradInput);
  kb.nest(g->windowDomain(), windowReductions(*g, true), {gradOutput, chosen},
          {target},
          {positionMap(context, *g), positionMap(context, *g),
           windowMap(context, *g)},
          [&](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
            Value grad = x[0], choice = x[1], out = x[2];
            Value zero64 = arith::ConstantIntOp::create(b, loc, 0, 64);
            Value decoded = arith::SelectOp::create(
                b, loc,
                arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge,
                                      choice, zero64),
                choice,
                arith::SubIOp::create(
                    b, loc, arith::ConstantIntOp::create(b, loc, -2, 64),
                    choice));
            Value hit = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                              decoded,
                                              tapNumber(b, loc, geometry));
            return {arith::SelectOp::create(
                b, loc, hit, arith::AddFOp::create(b, loc, out, grad), out)};
          });
  finishPaddedGradient(kb, *g, target, gradInput);
  return success();
}

LogicalResult buildAvgPool(KernelBuilder &kb) {
  FailureOr<PoolGeometry> g = poolGeometry(
      kb, kb.inputType(0).getShape(), kb.outputType(0).getShape(), false);
  if (failed(g))
    return failure();
  MLIRContext *context = kb.builder.getContext();
  Value input = kb.input(0, g->shape(g->input));
  Value output = kb.output(0, g->shape(g->output));
  Value padded =
      placedCopy(kb, input, g->shape(g->padded), g->paddedOffsets());
  zero(kb, output);
  kb.nest(g->windowDomain(), windowReductions(*g, false), {padded}, {output},
          {windowMap(context, *g), positionMap(context, *g)},
          [](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
            return {arith::AddFOp::create(b, loc, x[1], x[0])};
          });
  // y /= divisor, over (n, c, o...). The sums are read as an input, in
  // place: linalg's vectorizer takes a parallel nest that reads its output
  // for a reduction.
  SmallVector<int64_t> positions = g->shape(g->output);
  SmallVector<int64_t> zeros(positions.size(), 0);
  const PoolGeometry &geometry = *g;
  kb.nest(positions, SmallVector<bool>(positions.size(), false), {output},
          {output},
          {offsetIdentity(context, zeros), offsetIdentity(context, zeros)},
          [&](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
            return {arith::DivFOp::create(
                b, loc, x[0],
                poolDivisor(b, loc, geometry, &PoolGeometry::positionDim))};
          });
  return success();
}

LogicalResult buildAvgPoolBackward(KernelBuilder &kb) {
  FailureOr<PoolGeometry> g = poolGeometry(kb, kb.integers("input_shape"),
                                           kb.inputType(0).getShape(), false);
  if (failed(g))
    return failure();
  MLIRContext *context = kb.builder.getContext();
  Value gradOutput = kb.input(0, g->shape(g->output));
  Value gradInput = kb.output(0, g->shape(g->input));
  // dx[n, c, o*s + k] += dy[n, c, o] / divisor(o) for every tap; those in
  // the padding land outside the copied interior.
  Value target = paddedGradient(kb, *g, gradInput);
  const PoolGeometry &geometry = *g;
  kb.nest(g->windowDomain(), windowReductions(*g, true), {gradOutput},
          {target}, {positionMap(context, *g), windowMap(context, *g)},
          [&](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
            Value share = arith::DivFOp::create(
                b, loc, x[0],
                poolDivisor(b, loc, geometry, &PoolGeometry::positionDim));
            return {arith::AddFOp::create(b, loc, x[1], share)};
          });
  finishPaddedGradient(kb, *g, target, gradInput);
  return success();
}

} // namespace trainc::conversion
