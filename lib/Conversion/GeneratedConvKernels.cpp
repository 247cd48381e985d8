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
// convolutions are the exception: one vectorized nest per tap (below),
// which dispatch prefers to the libraries.
//
//===----------------------------------------------------------------------===//
#include "lib/Conversion/KernelBuilder.h"

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

//===----------------------------------------------------------------------===//
// Depthwise convolutions: one input and one output channel per group
// (MobileNet's and EfficientNet's 3x3 and 5x5 layers). They do a few
// multiply-adds per element, so they are bound by memory, and the window
// nests above run as scalar loops. Here each kernel tap is a nest of its
// own whose maps are shifts (a position plus a constant), so every nest
// is vectorized along the last spatial dim and split across threads:
//
//   forward      y[n,c,o]  = bias[c] + sum_t src_t[n,c,o] * w[c,t]
//   input grad   dx[n,c,h] = sum_t dyd[n,c,h + t*d + M] * w[c,K-1-t]
//   weight grad  dw[c,t]   = sum_{n,o} dy[n,c,o] * src_t[n,c,o]
//
// src_t[o] = xp[o*s + t*d]. With strides, xp is first split into phases
// (phase r of a dim holds xp[j*s + r], in one scalar pass), so that src_t
// reads phase (t*d mod s) from position o + (t*d div s): contiguous
// again. The input gradient reads the stride-dilated gradient dyd, as the
// general kernel does. Sums are f32, taps in row-major order.
//===----------------------------------------------------------------------===//

bool isDepthwise(const ConvGeometry &g) {
  return g.groupChannels == 1 && g.groupOutputs == 1;
}

/// [N, C, spatial...] for a depthwise convolution's C = G channels.
SmallVector<int64_t> channelsShape(const ConvGeometry &g,
                                   ArrayRef<int64_t> spatial) {
  SmallVector<int64_t> shape = {g.batch, g.group};
  llvm::append_range(shape, spatial);
  return shape;
}
SmallVector<int64_t> depthwiseWeightShape(const ConvGeometry &g) {
  SmallVector<int64_t> shape = {g.group};
  llvm::append_range(shape, g.kernel);
  return shape;
}

/// Calls `fn` with every kernel tap, in row-major order.
void forEachTap(ArrayRef<int64_t> kernel,
                llvm::function_ref<void(ArrayRef<int64_t>)> fn) {
  int64_t count = 1;
  for (int64_t extent : kernel)
    count *= extent;
  SmallVector<int64_t> tap(kernel.size(), 0);
  for (int64_t flat = 0; flat < count; ++flat) {
    int64_t rest = flat;
    for (int i = static_cast<int>(kernel.size()) - 1; i >= 0; --i) {
      tap[i] = rest % kernel[i];
      rest /= kernel[i];
    }
    fn(tap);
  }
}

/// What the taps of a forward convolution or weight gradient read: the
/// padded input [N, C, Dp...], or with strides its phases [N, C, s1, E1,
/// s2, E2, ...] (E = O + (K-1)*d div s: every position a tap reads).
struct DepthwiseSource {
  Value buffer;
  bool phased = false;

  /// The map of src_t (`tap`) over a domain whose batch, channel and
  /// output position dims are `n`, `c` and `positions`.
  AffineMap tapMap(const ConvGeometry &g, unsigned numDims, AffineExpr n,
                   AffineExpr c, ArrayRef<AffineExpr> positions,
                   ArrayRef<int64_t> tap) const {
    MLIRContext *context = n.getContext();
    SmallVector<AffineExpr> results = {n, c};
    for (unsigned i = 0; i < g.rank(); ++i) {
      int64_t offset = tap[i] * g.dilations[i];
      if (phased) {
        results.push_back(
            getAffineConstantExpr(offset % g.strides[i], context));
        results.push_back(positions[i] + offset / g.strides[i]);
      } else {
        results.push_back(positions[i] + offset);
      }
    }
    return mapOf(context, numDims, results);
  }
};

DepthwiseSource depthwiseSource(KernelBuilder &kb, const ConvGeometry &g,
                                Value input) {
  MLIRContext *context = kb.builder.getContext();
  unsigned rank = g.rank();
  bool strided = llvm::any_of(g.strides, [](int64_t s) { return s > 1; });
  SmallVector<int64_t> padded = g.padded, phaseExtents;
  for (unsigned i = 0; i < rank; ++i) {
    int64_t extent =
        g.output[i] + (g.kernel[i] - 1) * g.dilations[i] / g.strides[i];
    phaseExtents.push_back(extent);
    if (strided) // the last phase's last position may lie past the reach
      padded[i] = std::max(padded[i], extent * g.strides[i]);
  }
  SmallVector<int64_t> offsets = {0, 0};
  llvm::append_range(offsets, g.padsBegin);
  Value xp = placedCopy(kb, input, channelsShape(g, padded), offsets);
  if (!strided)
    return {xp, false};

  // phases[n, c, r1, j1, ...] = xp[n, c, j1*s1 + r1, ...].
  SmallVector<int64_t> shape = {g.batch, g.group};
  SmallVector<AffineExpr> read = {affineDim(context, 0), affineDim(context, 1)};
  for (unsigned i = 0; i < rank; ++i) {
    shape.push_back(g.strides[i]);
    shape.push_back(phaseExtents[i]);
    read.push_back(affineDim(context, 3 + 2 * i) * g.strides[i] +
                   affineDim(context, 2 + 2 * i));
  }
  Value phases =
      kb.scratch(shape, cast<MemRefType>(input.getType()).getElementType());
  SmallVector<int64_t> zeros(shape.size(), 0);
  kb.nest(shape, SmallVector<bool>(shape.size(), false), {xp}, {phases},
          {mapOf(context, shape.size(), read), offsetIdentity(context, zeros)},
          [](OpBuilder &, Location, ValueRange x) -> SmallVector<Value> {
            return {x[0]};
          });
  return {phases, true};
}

/// The map of w[c, t] (or of the flipped tap K-1-t), or with
/// `channelsLast` of the transposed weight wt[t, c].
AffineMap depthwiseWeightMap(const ConvGeometry &g, unsigned numDims,
                             AffineExpr c, ArrayRef<int64_t> tap, bool flipped,
                             bool channelsLast = false) {
  MLIRContext *context = c.getContext();
  SmallVector<AffineExpr> results;
  for (unsigned i = 0; i < g.rank(); ++i)
    results.push_back(getAffineConstantExpr(
        flipped ? g.kernel[i] - 1 - tap[i] : tap[i], context));
  results.insert(channelsLast ? results.end() : results.begin(), c);
  return mapOf(context, numDims, results);
}

/// The dims of a domain from `first` on, as expressions.
SmallVector<AffineExpr> dimsFrom(MLIRContext *context, unsigned first,
                                 unsigned count) {
  SmallVector<AffineExpr> dims;
  for (unsigned i = 0; i < count; ++i)
    dims.push_back(affineDim(context, first + i));
  return dims;
}

/// The maps of every tap's operands over a nest, appended to `maps` and
/// `inputs`: `read(tap)` for `source`, then w[c, t] (flipped: K-1-t) for
/// `weight`, tap by tap.
void appendTapOperands(const ConvGeometry &g, unsigned numDims, AffineExpr c,
                       Value source,
                       llvm::function_ref<AffineMap(ArrayRef<int64_t>)> read,
                       Value weight, bool flipped, SmallVector<Value> &inputs,
                       SmallVector<AffineMap> &maps,
                       bool channelsLast = false) {
  SmallVector<AffineMap> weightMaps;
  forEachTap(g.kernel, [&](ArrayRef<int64_t> tap) {
    inputs.push_back(source);
    maps.push_back(read(tap));
    weightMaps.push_back(
        depthwiseWeightMap(g, numDims, c, tap, flipped, channelsLast));
  });
  inputs.append(weightMaps.size(), weight);
  llvm::append_range(maps, weightMaps);
}

/// The body sum_t x[t] * x[taps + t], from x[2 * taps] when `fromLast`
/// (a bias) or from zero.
SmallVector<Value> tapSum(OpBuilder &b, Location loc, ValueRange x,
                          int64_t taps, bool fromLast) {
  Value sum = fromLast ? x[2 * taps] : constant(b, loc, x[0].getType(), 0.0);
  for (int64_t t = 0; t < taps; ++t)
    sum = arith::AddFOp::create(
        b, loc, sum, arith::MulFOp::create(b, loc, x[t], x[taps + t]));
  return {sum};
}

/// A weight gradient's body: x = (dy, src_0.., dw_0..), each dw_t + dy *
/// src_t.
SmallVector<Value> accumulateTaps(OpBuilder &b, Location loc, ValueRange x) {
  int64_t taps = (x.size() - 1) / 2;
  SmallVector<Value> sums;
  for (int64_t t = 0; t < taps; ++t)
    sums.push_back(
        arith::AddFOp::create(b, loc, x[1 + taps + t],
                              arith::MulFOp::create(b, loc, x[0], x[1 + t])));
  return sums;
}

int64_t tapCount(const ConvGeometry &g) {
  int64_t count = 1;
  for (int64_t extent : g.kernel)
    count *= extent;
  return count;
}

//===----------------------------------------------------------------------===//
// Channels-last depthwise kernels, for planes whose rows are shorter than
// half a vector (MobileNet's 2x2 and 4x4 stages at 64 px): along such a
// row most lanes of every vector would be masked off, so these kernels
// copy their operands into [N, D..., C] (and the weight into [K..., C]),
// run every tap along the channels, which are contiguous there, and copy
// the result back. The copies are scalar passes over small planes.
//===----------------------------------------------------------------------===//

/// Whether the nests of a depthwise kernel over `plane` (output or input
/// positions) run channels-last.
bool runsChannelsLast(KernelBuilder &kb, const ConvGeometry &g,
                      ArrayRef<int64_t> plane) {
  return !plane.empty() && plane.back() < kb.vectorLanes / 2 &&
         g.group >= kb.vectorLanes;
}

/// A nest over `source`'s shape that copies each element to `target` at
/// `write` (a permutation, with offsets and steps).
void copyTo(KernelBuilder &kb, Value source, Value target, AffineMap write) {
  MLIRContext *context = kb.builder.getContext();
  ArrayRef<int64_t> shape = cast<MemRefType>(source.getType()).getShape();
  kb.nest(
      shape, SmallVector<bool>(shape.size(), false), {source}, {target},
      {offsetIdentity(context, SmallVector<int64_t>(shape.size(), 0)), write},
      [](OpBuilder &, Location, ValueRange x) -> SmallVector<Value> {
        return {x[0]};
      });
}

/// `source` [N, C, D...] in a new zeroed scratch [N, extents..., C], at
/// position d * step + offset of each spatial dim.
Value channelsLastCopy(KernelBuilder &kb, const ConvGeometry &g, Value source,
                       ArrayRef<int64_t> extents, ArrayRef<int64_t> offsets,
                       ArrayRef<int64_t> steps) {
  MLIRContext *context = kb.builder.getContext();
  unsigned rank = g.rank();
  SmallVector<int64_t> shape = {g.batch};
  llvm::append_range(shape, extents);
  shape.push_back(g.group);
  Value target =
      kb.scratch(shape, cast<MemRefType>(source.getType()).getElementType());
  zeroFill(kb, target);
  SmallVector<AffineExpr> write = {affineDim(context, 0)};
  for (unsigned i = 0; i < rank; ++i)
    write.push_back(affineDim(context, 2 + i) * steps[i] + offsets[i]);
  write.push_back(affineDim(context, 1));
  copyTo(kb, source, target, mapOf(context, rank + 2, write));
  return target;
}

/// The weight [C, K...] transposed into a new scratch [K..., C].
Value channelsLastWeight(KernelBuilder &kb, const ConvGeometry &g,
                         Value weight) {
  MLIRContext *context = kb.builder.getContext();
  unsigned rank = g.rank();
  SmallVector<int64_t> shape(g.kernel);
  shape.push_back(g.group);
  Value target =
      kb.scratch(shape, cast<MemRefType>(weight.getType()).getElementType());
  SmallVector<AffineExpr> write = dimsFrom(context, 1, rank);
  write.push_back(affineDim(context, 0));
  copyTo(kb, weight, target, mapOf(context, rank + 1, write));
  return target;
}

/// A new scratch [N, plane..., C] whose elements a nest writes, and the
/// map that copies the NCHW `output` [N, C, plane...] from it.
Value channelsLastResult(KernelBuilder &kb, const ConvGeometry &g,
                         ArrayRef<int64_t> plane, Type element) {
  SmallVector<int64_t> shape = {g.batch};
  llvm::append_range(shape, plane);
  shape.push_back(g.group);
  return kb.scratch(shape, element);
}

/// output[n, c, p...] = result[n, p..., c].
void copyFromChannelsLast(KernelBuilder &kb, const ConvGeometry &g,
                          Value result, Value output) {
  MLIRContext *context = kb.builder.getContext();
  unsigned rank = g.rank();
  // Over the result's domain (n, p..., c), written to (n, c, p...).
  SmallVector<AffineExpr> write = {affineDim(context, 0),
                                   affineDim(context, rank + 1)};
  llvm::append_range(write, dimsFrom(context, 1, rank));
  copyTo(kb, result, output, mapOf(context, rank + 2, write));
}

/// The forward convolution channels-last: one nest over (n, o..., c).
void depthwiseConvChannelsLast(KernelBuilder &kb, const ConvGeometry &g,
                               Value input, Value weight, Value bias,
                               Value output) {
  MLIRContext *context = kb.builder.getContext();
  unsigned rank = g.rank();
  Type element = cast<MemRefType>(input.getType()).getElementType();
  Value xt = channelsLastCopy(kb, g, input, g.padded, g.padsBegin,
                              SmallVector<int64_t>(rank, 1));
  Value wt = channelsLastWeight(kb, g, weight);
  Value yt = channelsLastResult(kb, g, g.output, element);
  unsigned n = rank + 2;
  AffineExpr channel = affineDim(context, rank + 1);
  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  appendTapOperands(
      g, n, channel, xt,
      [&](ArrayRef<int64_t> tap) {
        SmallVector<AffineExpr> read = {affineDim(context, 0)};
        for (unsigned i = 0; i < rank; ++i)
          read.push_back(affineDim(context, 1 + i) * g.strides[i] +
                         tap[i] * g.dilations[i]);
        read.push_back(channel);
        return mapOf(context, n, read);
      },
      wt, /*flipped=*/false, inputs, maps, /*channelsLast=*/true);
  if (bias) {
    inputs.push_back(bias);
    maps.push_back(mapOf(context, n, {channel}));
  }
  maps.push_back(offsetIdentity(context, SmallVector<int64_t>(n, 0)));
  SmallVector<int64_t> domain = {g.batch};
  llvm::append_range(domain, g.output);
  domain.push_back(g.group);
  int64_t taps = tapCount(g);
  kb.nest(domain, SmallVector<bool>(n, false), inputs, {yt}, maps,
          [&](OpBuilder &b, Location loc, ValueRange x) {
            return tapSum(b, loc, x, taps, bool(bias));
          });
  copyFromChannelsLast(kb, g, yt, output);
}

LogicalResult buildDepthwiseConv(KernelBuilder &kb, const ConvGeometry &g) {
  MLIRContext *context = kb.builder.getContext();
  bool hasBias = kb.launch.getInputs().size() == 3;
  Value input = kb.input(0, channelsShape(g, g.input));
  Value weight = kb.input(1, depthwiseWeightShape(g));
  Value bias = hasBias ? kb.input(2, {g.group}) : Value();
  SmallVector<int64_t> domain = channelsShape(g, g.output);
  Value output = kb.output(0, domain);
  if (runsChannelsLast(kb, g, g.output)) {
    depthwiseConvChannelsLast(kb, g, input, weight, bias, output);
    return success();
  }
  DepthwiseSource source = depthwiseSource(kb, g, input);

  // Domain (n, c, o...): y = bias + every tap, in one pass.
  unsigned n = domain.size();
  AffineExpr batch = affineDim(context, 0), channel = affineDim(context, 1);
  SmallVector<AffineExpr> positions = dimsFrom(context, 2, g.rank());
  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  appendTapOperands(
      g, n, channel, source.buffer,
      [&](ArrayRef<int64_t> tap) {
        return source.tapMap(g, n, batch, channel, positions, tap);
      },
      weight, /*flipped=*/false, inputs, maps);
  if (hasBias) {
    inputs.push_back(bias);
    maps.push_back(mapOf(context, n, {channel}));
  }
  maps.push_back(offsetIdentity(context, SmallVector<int64_t>(n, 0)));
  int64_t taps = tapCount(g);
  kb.nest(domain, SmallVector<bool>(n, false), inputs, {output}, maps,
          [&](OpBuilder &b, Location loc, ValueRange x) {
            return tapSum(b, loc, x, taps, hasBias);
          });
  return success();
}

LogicalResult buildDepthwiseConvBackwardInput(KernelBuilder &kb,
                                              const ConvGeometry &g) {
  MLIRContext *context = kb.builder.getContext();
  unsigned rank = g.rank();
  Value gradOutput = kb.input(0, channelsShape(g, g.output));
  Value weight = kb.input(1, depthwiseWeightShape(g));
  SmallVector<int64_t> domain = channelsShape(g, g.input);
  Value gradInput = kb.output(0, domain);

  // dyd as in buildConvBackwardInput, without the channel-in-group axis.
  SmallVector<int64_t> dilatedShape = {g.batch, g.group};
  SmallVector<int64_t> offsets = {0, 0}, steps = {1, 1}, shifts;
  for (unsigned i = 0; i < rank; ++i) {
    int64_t flipped = (g.kernel[i] - 1) * g.dilations[i];
    int64_t start = flipped - g.padsBegin[i];
    int64_t shift = std::max<int64_t>(0, -start);
    int64_t last =
        g.output[i] == 0 ? 0 : (g.output[i] - 1) * g.strides[i] + start + 1;
    dilatedShape.push_back(std::max(g.input[i] + flipped, last) + shift);
    offsets.push_back(start + shift);
    steps.push_back(g.strides[i]);
    shifts.push_back(shift);
  }
  if (runsChannelsLast(kb, g, g.input)) {
    // Domain (n, h..., c).
    SmallVector<int64_t> spatial(ArrayRef<int64_t>(dilatedShape).drop_front(2));
    Value dydt = channelsLastCopy(kb, g, gradOutput, spatial,
                                  ArrayRef<int64_t>(offsets).drop_front(2),
                                  ArrayRef<int64_t>(steps).drop_front(2));
    Value wt = channelsLastWeight(kb, g, weight);
    Value dxt = channelsLastResult(
        kb, g, g.input, cast<MemRefType>(gradInput.getType()).getElementType());
    unsigned n = rank + 2;
    AffineExpr channel = affineDim(context, rank + 1);
    SmallVector<Value> inputs;
    SmallVector<AffineMap> maps;
    appendTapOperands(
        g, n, channel, dydt,
        [&](ArrayRef<int64_t> tap) {
          SmallVector<AffineExpr> window = {affineDim(context, 0)};
          for (unsigned i = 0; i < rank; ++i)
            window.push_back(affineDim(context, 1 + i) +
                             tap[i] * g.dilations[i] + shifts[i]);
          window.push_back(channel);
          return mapOf(context, n, window);
        },
        wt, /*flipped=*/true, inputs, maps, /*channelsLast=*/true);
    maps.push_back(offsetIdentity(context, SmallVector<int64_t>(n, 0)));
    SmallVector<int64_t> resultDomain = {g.batch};
    llvm::append_range(resultDomain, g.input);
    resultDomain.push_back(g.group);
    int64_t taps = tapCount(g);
    kb.nest(resultDomain, SmallVector<bool>(n, false), inputs, {dxt}, maps,
            [&](OpBuilder &b, Location loc, ValueRange x) {
              return tapSum(b, loc, x, taps, /*fromLast=*/false);
            });
    copyFromChannelsLast(kb, g, dxt, gradInput);
    return success();
  }
  Value dilated = placedCopy(kb, gradOutput, dilatedShape, offsets, steps);

  // Domain (n, c, h...): dx = every tap of dyd, in one pass.
  unsigned n = domain.size();
  AffineExpr channel = affineDim(context, 1);
  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  appendTapOperands(
      g, n, channel, dilated,
      [&](ArrayRef<int64_t> tap) {
        SmallVector<AffineExpr> window = {affineDim(context, 0), channel};
        for (unsigned i = 0; i < rank; ++i)
          window.push_back(affineDim(context, 2 + i) + tap[i] * g.dilations[i] +
                           shifts[i]);
        return mapOf(context, n, window);
      },
      weight, /*flipped=*/true, inputs, maps);
  maps.push_back(offsetIdentity(context, SmallVector<int64_t>(n, 0)));
  int64_t taps = tapCount(g);
  kb.nest(domain, SmallVector<bool>(n, false), inputs, {gradInput}, maps,
          [&](OpBuilder &b, Location loc, ValueRange x) {
            return tapSum(b, loc, x, taps, /*fromLast=*/false);
          });
  return success();
}

LogicalResult buildDepthwiseConvBackwardWeight(KernelBuilder &kb,
                                               const ConvGeometry &g) {
  MLIRContext *context = kb.builder.getContext();
  unsigned rank = g.rank();
  Value gradOutput = kb.input(0, channelsShape(g, g.output));
  Value input = kb.input(1, channelsShape(g, g.input));
  Value gradWeight = kb.output(0, depthwiseWeightShape(g));
  // The sums accumulate in f32 (an f32 scratch for bf16 and f16 weights,
  // rounded once at the end).
  Type element = cast<MemRefType>(gradWeight.getType()).getElementType();
  Type accumulator = kb.computeType(element);
  if (runsChannelsLast(kb, g, g.output)) {
    // Domain (n, o..., c): the batch and the plane reduced into vectors of
    // channels, which are split across threads.
    SmallVector<int64_t> ones(rank, 1), zeros(rank, 0);
    Value xt = channelsLastCopy(kb, g, input, g.padded, g.padsBegin, ones);
    Value dyt = channelsLastCopy(kb, g, gradOutput, g.output, zeros, ones);
    SmallVector<int64_t> weightShape(g.kernel);
    weightShape.push_back(g.group);
    Value dwt = kb.scratch(weightShape, accumulator);
    zeroFill(kb, dwt);
    unsigned n = rank + 2;
    AffineExpr channel = affineDim(context, rank + 1);
    SmallVector<Value> inputs = {dyt}, outputs;
    SmallVector<AffineMap> maps = {offsetIdentity(context,
                                                  SmallVector<int64_t>(n, 0))},
                           outputMaps;
    forEachTap(g.kernel, [&](ArrayRef<int64_t> tap) {
      SmallVector<AffineExpr> read = {affineDim(context, 0)};
      for (unsigned i = 0; i < rank; ++i)
        read.push_back(affineDim(context, 1 + i) * g.strides[i] +
                       tap[i] * g.dilations[i]);
      read.push_back(channel);
      inputs.push_back(xt);
      maps.push_back(mapOf(context, n, read));
      outputs.push_back(dwt);
      outputMaps.push_back(depthwiseWeightMap(g, n, channel, tap,
                                              /*flipped=*/false,
                                              /*channelsLast=*/true));
    });
    llvm::append_range(maps, outputMaps);
    SmallVector<int64_t> domain = {g.batch};
    llvm::append_range(domain, g.output);
    domain.push_back(g.group);
    SmallVector<bool> reduction(n, true);
    reduction.back() = false;
    kb.nest(domain, reduction, inputs, outputs, maps, accumulateTaps);
    // dw[c, t...] = dwt[t..., c].
    SmallVector<AffineExpr> write = {affineDim(context, rank)};
    llvm::append_range(write, dimsFrom(context, 0, rank));
    copyTo(kb, dwt, gradWeight, mapOf(context, rank + 1, write));
    return success();
  }
  DepthwiseSource source = depthwiseSource(kb, g, input);
  Value sums = accumulator == element
                   ? gradWeight
                   : kb.scratch(depthwiseWeightShape(g), accumulator);
  zeroFill(kb, sums);

  // Domain (c, n, o...): channels split across threads; every tap's sum
  // over the batch and the plane is an output of the one nest (a view of
  // dw at that tap), reduced along the vectors.
  SmallVector<int64_t> domain = {g.group, g.batch};
  llvm::append_range(domain, g.output);
  unsigned n = domain.size();
  SmallVector<bool> reduction(n, true);
  reduction[0] = false;
  AffineExpr channel = affineDim(context, 0), batch = affineDim(context, 1);
  SmallVector<AffineExpr> positions = dimsFrom(context, 2, rank);
  SmallVector<AffineExpr> gradient = {batch, channel};
  llvm::append_range(gradient, positions);
  SmallVector<Value> inputs = {gradOutput}, outputs;
  SmallVector<AffineMap> maps = {mapOf(context, n, gradient)}, outputMaps;
  forEachTap(g.kernel, [&](ArrayRef<int64_t> tap) {
    inputs.push_back(source.buffer);
    maps.push_back(source.tapMap(g, n, batch, channel, positions, tap));
    outputs.push_back(sums);
    outputMaps.push_back(
        depthwiseWeightMap(g, n, channel, tap, /*flipped=*/false));
  });
  llvm::append_range(maps, outputMaps);
  kb.nest(domain, reduction, inputs, outputs, maps, accumulateTaps);
  if (sums != gradWeight)
    copyTo(kb, sums, gradWeight,
           offsetIdentity(context, SmallVector<int64_t>(rank + 1, 0)));
  return success();
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
  zeroFill(kb, gradInput);

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

} // namespace trainc::conversion
