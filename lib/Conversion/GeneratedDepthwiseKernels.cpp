//===- GeneratedDepthwiseKernels.cpp - depthwise convolutions -----------===//
//
// graph.conv and its gradients where each group has one input and one
// output channel (MobileNet's and EfficientNet's 3x3 and 5x5 layers).
// They do a few multiply-adds per element, so they are bound by memory,
// and the general kernels' window nests (GeneratedConvKernels.cpp) run as
// scalar loops. Here every kernel tap is an operand of one nest, a view
// of the same buffer whose map is a shift (a position plus a constant),
// so the nest is vectorized along the last spatial dim, split across
// threads, and writes each output once:
//
//   forward      y[n,c,o]  = bias[c] + sum_t src_t[n,c,o] * w[c,t]
//   input grad   dx[n,c,h] = sum_t dyd[n,c,h + t*d + M] * w[c,K-1-t]
//   weight grad  dw[c,t]   = sum_{n,o} dy[n,c,o] * src_t[n,c,o]
//                            (one output view per tap)
//
// src_t[o] = xp[o*s + t*d], xp the zero-padded input. With strides, xp is
// first split into phases (phase r of a dim holds xp[j*s + r]: tiles of a
// row read whole and deinterleaved in registers), so that src_t reads
// phase (t*d mod s) from position o + (t*d div s): contiguous again. A strided input gradient sums each
// phase of dx's positions over its own taps (GeneratedDepthwisePhases.cpp);
// where the plane does
// not split into such phases, it reads the stride-dilated gradient dyd,
// as the general kernel does. Planes whose rows are shorter than half a
// vector run channels-last instead (below).
// A weight gradient over rows of up to a few vectors keeps a vector of
// each tap's sums along the row (in registers) and sums across the row
// once per channel. Sums are f32 (bf16 and f16 are widened; the weight
// gradient sums in an f32 scratch), taps in row-major order.
//
//===----------------------------------------------------------------------===//
#include "lib/Conversion/DepthwiseNests.h"

namespace trainc::conversion {
namespace depthwise {

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
  if (!strided) {
    SmallVector<int64_t> offsets = {0, 0};
    llvm::append_range(offsets, g.padsBegin);
    return {placedCopy(kb, input, channelsShape(g, g.padded), offsets), false};
  }

  // Each phase r of dim i holds the E_i positions a tap reads (E = O +
  // (K-1)*d div s), the last dim's rounded up to whole tiles of `lanes`
  // (positions past E are never read). The padded input is seen as
  // [N, C, P0, s0, P1, s1, ...] (P_i * s_i covering its padded extent and
  // every phase position), so that phases[n, c, r0, j0, r1, j1, ...] =
  // xv[n, c, j0, r0, j1, r1, ...]: a tile reads s_last * lanes contiguous
  // elements of a row and deinterleaves them in registers
  // (--trainc-lower-loop-nests), where reading the row with a stride ran
  // one element at a time.
  SmallVector<int64_t> phaseExtents, padded, view = {g.batch, g.group};
  for (unsigned i = 0; i < rank; ++i)
    phaseExtents.push_back(g.output[i] +
                           (g.kernel[i] - 1) * g.dilations[i] / g.strides[i]);
  auto roundUp = [](int64_t n, int64_t step) {
    return (n + step - 1) / step * step;
  };
  int64_t last = phaseExtents.back(), lanes = std::min(kb.vectorLanes, last);
  while (lanes > loop::kMinVectorExtent &&
         2 * (roundUp(last, lanes) - last) > last)
    lanes /= 2;
  phaseExtents.back() = roundUp(last, lanes);
  for (unsigned i = 0; i < rank; ++i) {
    int64_t positions = std::max(
        phaseExtents[i], roundUp(g.padded[i], g.strides[i]) / g.strides[i]);
    padded.push_back(positions * g.strides[i]);
    view.append({positions, g.strides[i]});
  }
  SmallVector<int64_t> offsets = {0, 0};
  llvm::append_range(offsets, g.padsBegin);
  Value xp = placedCopy(kb, input, channelsShape(g, padded), offsets);
  // Without padding to add, the input itself (which the kernel reads only
  // here) is seen in that shape.
  Value source = xp == input
                     ? kb.view(cast<BlockArgument>(input).getArgNumber(), view)
                     : kb.scratchView(xp, view);

  SmallVector<int64_t> shape = {g.batch, g.group};
  SmallVector<AffineExpr> read = {affineDim(context, 0), affineDim(context, 1)};
  for (unsigned i = 0; i < rank; ++i) {
    shape.push_back(g.strides[i]);
    shape.push_back(phaseExtents[i]);
    read.push_back(affineDim(context, 3 + 2 * i));
    read.push_back(affineDim(context, 2 + 2 * i));
  }
  Value phases =
      kb.scratch(shape, cast<MemRefType>(input.getType()).getElementType());
  SmallVector<int64_t> zeros(shape.size(), 0);
  loop::NestOp nest = kb.nest(
      shape, SmallVector<bool>(shape.size(), false), {source}, {phases},
      {mapOf(context, shape.size(), read), offsetIdentity(context, zeros)},
      [](OpBuilder &, Location, ValueRange x) -> SmallVector<Value> {
        return {x[0]};
      });
  SmallVector<int64_t> tile(shape.size(), 1);
  tile[shape.size() - 2] = g.strides.back();
  tile.back() = lanes;
  vectorizePhases(nest, tile);
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

SmallVector<AffineExpr> dimsFrom(MLIRContext *context, unsigned first,
                                 unsigned count) {
  SmallVector<AffineExpr> dims;
  for (unsigned i = 0; i < count; ++i)
    dims.push_back(affineDim(context, first + i));
  return dims;
}

void appendTapOperands(const ConvGeometry &g, unsigned numDims, AffineExpr c,
                       Value source,
                       llvm::function_ref<AffineMap(ArrayRef<int64_t>)> read,
                       Value weight, bool flipped, SmallVector<Value> &inputs,
                       SmallVector<AffineMap> &maps, bool channelsLast) {
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

SmallVector<Value> tapSum(OpBuilder &b, Location loc, ValueRange x,
                          int64_t taps, bool fromLast, bool lastTapFirst) {
  Value sum = fromLast ? x[2 * taps] : constant(b, loc, x[0].getType(), 0.0);
  for (int64_t i = 0; i < taps; ++i) {
    int64_t t = lastTapFirst ? taps - 1 - i : i;
    sum = multiplyAccumulate(b, loc, x[t], x[taps + t], sum);
  }
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

/// The nest over `domain` that writes `output` (at `outputMap`, by default
/// the identity) with the sum of the taps in `inputs` and `maps`
/// (appendTapOperands'), plus bias[channel] when there is a bias; summed
/// from the last tap on when the weight is `flipped` (tapSum).
loop::NestOp tapSumNest(KernelBuilder &kb, const ConvGeometry &g,
                        ArrayRef<int64_t> domain, SmallVector<Value> inputs,
                        SmallVector<AffineMap> maps, Value bias,
                        AffineExpr channel, Value output, bool flipped,
                        AffineMap outputMap = {}) {
  MLIRContext *context = kb.builder.getContext();
  unsigned n = domain.size();
  if (bias) {
    inputs.push_back(bias);
    maps.push_back(mapOf(context, n, {channel}));
  }
  maps.push_back(outputMap
                     ? outputMap
                     : offsetIdentity(context, SmallVector<int64_t>(n, 0)));
  int64_t taps = tapCount(g);
  return kb.nest(domain, SmallVector<bool>(n, false), inputs, {output}, maps,
                 [&](OpBuilder &b, Location loc, ValueRange x) {
                   return tapSum(b, loc, x, taps, bool(bias), flipped);
                 });
}

/// Gives `nest`, over (c, ...) of buffers stored channels-last, one vector
/// of channels per tile, the other dimensions looping inside it (the
/// default schedule vectorizes only the innermost dimension, which these
/// buffers read strided): what a tile reuses at every point (the taps'
/// weights, or the sums of a weight gradient) can stay in registers.
void vectorOfChannels(KernelBuilder &kb, loop::NestOp nest) {
  SmallVector<int64_t> tile(nest.getDomain().size(), 1);
  tile.front() = kb.vectorLanes;
  nest.setScheduleAttr(loop::ScheduleAttr::get(
      nest.getContext(), nest.getSchedule().getParallel() >= 0 ? 0 : -1, tile,
      /*vectorize=*/true));
}

void vectorizePhases(loop::NestOp nest, ArrayRef<int64_t> tile) {
  int64_t parallel = nest.getSchedule().getParallel();
  nest.setScheduleAttr(loop::ScheduleAttr::get(
      nest.getContext(), parallel == 0 || parallel == 1 ? parallel : -1, tile,
      /*vectorize=*/true));
}

/// Gives `nest` (over (n, c, rows..., columns), every position a sum of
/// taps) tiles of 4 rows (or 2) where a row is at most 2 vectors, whose
/// sums' chains of dependent adds interleave, and along rows shorter than
/// a vector (8 columns on AVX-512) one vector of exactly a row: unmasked
/// loads and stores, where the default tile of a whole vector masked half
/// of it.
void rowTile(KernelBuilder &kb, loop::NestOp nest) {
  loop::ScheduleAttr schedule = nest.getSchedule();
  ArrayRef<int64_t> domain = nest.getDomain();
  int64_t width = domain.back();
  if (!schedule.getVectorize() || domain.size() < 4)
    return;
  SmallVector<int64_t> tile(schedule.getTile());
  if (width < kb.vectorLanes && width >= loop::kMinVectorExtent)
    tile.back() = width;
  // Rows of 3 or more vectors already give as many chains per tile (4
  // rows of 56 and 112 columns ran 25-30 % slower).
  int64_t rows = domain[domain.size() - 2];
  if (tile.back() <= 2 * kb.vectorLanes)
    tile[domain.size() - 2] = rows % 4 == 0 ? 4 : rows % 2 == 0 ? 2 : 1;
  nest.setScheduleAttr(loop::ScheduleAttr::get(
      nest.getContext(), schedule.getParallel(), tile, /*vectorize=*/true));
}

//===----------------------------------------------------------------------===//
// Channels-last depthwise kernels, for planes whose rows are shorter than
// half a vector (MobileNet's 2x2 and 4x4 stages at 64 px): along such a
// row most lanes of every vector would be masked off, so these kernels
// copy their operands into [N, D..., C] (and the weight into [K..., C]),
// run every tap along the channels, which are contiguous there, and copy
// the result back. The copies move transposed tiles of vectors (one
// element at a time for rows shorter than kMinVectorExtent). The tap
// nests run a vector of channels at a time with the batch and the plane
// inside it (vectorOfChannels), writing private scratch: the weights of
// a vector (or a weight gradient's sums) stay in registers.
//===----------------------------------------------------------------------===//

/// Whether the nests of a depthwise kernel over `plane` (output or input
/// positions) run channels-last.
bool runsChannelsLast(KernelBuilder &kb, const ConvGeometry &g,
                      ArrayRef<int64_t> plane) {
  return !plane.empty() && plane.back() < kb.vectorLanes / 2 &&
         g.group >= kb.vectorLanes;
}

/// A nest that copies each element of `source` to `target` at `write` (a
/// permutation of `source`'s dims, with offsets and steps). Without steps
/// the nest runs in `target`'s order, so that the default schedule moves
/// it in transposed tiles of vectors (NCHW <-> NHWC); with steps, over
/// `source`'s shape, one element at a time.
void copyTo(KernelBuilder &kb, Value source, Value target, AffineMap write) {
  MLIRContext *context = kb.builder.getContext();
  ArrayRef<int64_t> shape = cast<MemRefType>(source.getType()).getShape();
  unsigned rank = shape.size();
  auto copy = [](OpBuilder &, Location, ValueRange x) -> SmallVector<Value> {
    return {x[0]};
  };
  // Target axis j receives source axis `from[j]`, plus `offsets[j]`.
  SmallVector<unsigned> from;
  SmallVector<int64_t> offsets;
  for (AffineExpr expr : write.getResults()) {
    std::optional<loop::AffineForm> form = loop::getAffineForm(expr, rank);
    std::optional<unsigned> dim = form ? form->singleDim() : std::nullopt;
    if (!dim || form->coefficients[*dim] != 1)
      break;
    from.push_back(*dim);
    offsets.push_back(form->constant);
  }
  if (from.size() != rank) {
    kb.nest(shape, SmallVector<bool>(rank, false), {source}, {target},
            {offsetIdentity(context, SmallVector<int64_t>(rank, 0)), write},
            copy);
    return;
  }
  SmallVector<int64_t> domain;
  SmallVector<AffineExpr> read(rank);
  for (auto [j, axis] : llvm::enumerate(from)) {
    domain.push_back(shape[axis]);
    read[axis] = affineDim(context, j);
  }
  kb.nest(domain, SmallVector<bool>(rank, false), {source}, {target},
          {mapOf(context, rank, read), offsetIdentity(context, offsets)}, copy);
}

/// `source` [N, C, D...] in a new zeroed scratch [N, extents..., C], at
/// position d * step + offset of each spatial dim (not zeroed where the
/// copy writes every element: a weight gradient's dy).
Value channelsLastCopy(KernelBuilder &kb, const ConvGeometry &g, Value source,
                       ArrayRef<int64_t> extents, ArrayRef<int64_t> offsets,
                       ArrayRef<int64_t> steps) {
  MLIRContext *context = kb.builder.getContext();
  unsigned rank = g.rank();
  auto sourceType = cast<MemRefType>(source.getType());
  SmallVector<int64_t> shape = {g.batch};
  llvm::append_range(shape, extents);
  shape.push_back(g.group);
  Value target = kb.scratch(shape, sourceType.getElementType());
  bool covered = true;
  for (unsigned i = 0; i < rank; ++i)
    covered &= steps[i] == 1 && offsets[i] == 0 &&
               extents[i] == sourceType.getDimSize(2 + i);
  if (!covered)
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

/// Every tap channels-last, in one nest over (c, n, p...):
/// result[n, p..., c] = (bias[c] +) sum_t source[n, p*s + t*d + shift...,
/// c] * wt[t..., c] (the tap flipped, K-1-t, for `flipped`), copied back
/// into `output` [N, C, p...].
void channelsLastTaps(KernelBuilder &kb, const ConvGeometry &g, Value source,
                      Value wt, Value bias, ArrayRef<int64_t> plane,
                      ArrayRef<int64_t> strides, ArrayRef<int64_t> shifts,
                      bool flipped, Value output) {
  MLIRContext *context = kb.builder.getContext();
  unsigned rank = g.rank();
  SmallVector<int64_t> shape = {g.batch};
  llvm::append_range(shape, plane);
  shape.push_back(g.group);
  // The result is private scratch, so LLVM may keep the weights of a
  // vector of channels in registers over the positions.
  Value result = kb.privateScratch(
      shape, cast<MemRefType>(output.getType()).getElementType());
  // Domain (c, n, p...).
  SmallVector<int64_t> domain = {g.group, g.batch};
  llvm::append_range(domain, plane);
  unsigned n = rank + 2;
  AffineExpr channel = affineDim(context, 0), batch = affineDim(context, 1);
  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  appendTapOperands(
      g, n, channel, source,
      [&](ArrayRef<int64_t> tap) {
        SmallVector<AffineExpr> read = {batch};
        for (unsigned i = 0; i < rank; ++i)
          read.push_back(affineDim(context, 2 + i) * strides[i] +
                         tap[i] * g.dilations[i] + shifts[i]);
        read.push_back(channel);
        return mapOf(context, n, read);
      },
      wt, flipped, inputs, maps, /*channelsLast=*/true);
  SmallVector<AffineExpr> write = {batch};
  llvm::append_range(write, dimsFrom(context, 2, rank));
  write.push_back(channel);
  vectorOfChannels(kb, tapSumNest(kb, g, domain, inputs, maps, bias, channel,
                                  result, flipped, mapOf(context, n, write)));
  copyFromChannelsLast(kb, g, result, output);
}

/// A weight gradient's sums over the padded input (or its phases) of
/// depthwiseSource: sums[c, t..., (o_last when `alongRows`)] += dy[n, c, o]
/// * src_t[n, c, o] over the batch and the plane.
void paddedWeightSums(KernelBuilder &kb, const ConvGeometry &g,
                      Value gradOutput, const DepthwiseSource &source,
                      Value rows, bool alongRows) {
  MLIRContext *context = kb.builder.getContext();
  unsigned rank = g.rank();
  SmallVector<int64_t> domain = {g.group, g.batch};
  llvm::append_range(domain, g.output);
  unsigned n = domain.size();
  SmallVector<bool> reduction(n, true);
  reduction.front() = false;
  reduction.back() = !alongRows;
  AffineExpr channel = affineDim(context, 0), batch = affineDim(context, 1);
  SmallVector<AffineExpr> positions = dimsFrom(context, 2, rank);
  SmallVector<AffineExpr> gradient = {batch, channel};
  llvm::append_range(gradient, positions);
  SmallVector<Value> inputs = {gradOutput}, outputs;
  SmallVector<AffineMap> maps = {mapOf(context, n, gradient)}, outputMaps;
  forEachTap(g.kernel, [&](ArrayRef<int64_t> tap) {
    inputs.push_back(source.buffer);
    maps.push_back(source.tapMap(g, n, batch, channel, positions, tap));
    outputs.push_back(rows);
    AffineMap weight =
        depthwiseWeightMap(g, n, channel, tap, /*flipped=*/false);
    SmallVector<AffineExpr> row(weight.getResults());
    if (alongRows)
      row.push_back(positions.back());
    outputMaps.push_back(mapOf(context, n, row));
  });
  llvm::append_range(maps, outputMaps);
  loop::NestOp nest =
      kb.nest(domain, reduction, inputs, outputs, maps, accumulateTaps);
  if (alongRows)
    wholeRowTile(nest, g.output.back());
}

void wholeRowTile(loop::NestOp nest, int64_t width) {
  loop::ScheduleAttr schedule = nest.getSchedule();
  if (!schedule.getVectorize())
    return;
  SmallVector<int64_t> tile(schedule.getTile());
  tile.back() = width;
  nest.setScheduleAttr(loop::ScheduleAttr::get(
      nest.getContext(), schedule.getParallel(), tile, /*vectorize=*/true));
}

} // namespace depthwise

using namespace depthwise;

LogicalResult buildDepthwiseConv(KernelBuilder &kb, const ConvGeometry &g) {
  MLIRContext *context = kb.builder.getContext();
  bool hasBias = kb.launch.getInputs().size() == 3;
  Value input = kb.input(0, channelsShape(g, g.input));
  Value weight = kb.input(1, depthwiseWeightShape(g));
  Value bias = hasBias ? kb.input(2, {g.group}) : Value();
  SmallVector<int64_t> domain = channelsShape(g, g.output);
  Value output = kb.output(0, domain);
  if (runsChannelsLast(kb, g, g.output)) {
    unsigned rank = g.rank();
    Value xt = channelsLastCopy(kb, g, input, g.padded, g.padsBegin,
                                SmallVector<int64_t>(rank, 1));
    channelsLastTaps(kb, g, xt, channelsLastWeight(kb, g, weight), bias,
                     g.output, g.strides, SmallVector<int64_t>(rank, 0),
                     /*flipped=*/false, output);
    return success();
  }
  if (succeeded(unpaddedTaps(kb, g, input, weight, bias, output)))
    return success();
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
  rowTile(kb, tapSumNest(kb, g, domain, inputs, maps, bias, channel, output,
                         /*flipped=*/false));
  return success();
}

LogicalResult buildDepthwiseConvBackwardInput(KernelBuilder &kb,
                                              const ConvGeometry &g) {
  MLIRContext *context = kb.builder.getContext();
  unsigned rank = g.rank();
  Value gradOutput = kb.input(0, channelsShape(g, g.output));
  Value weight = kb.input(1, depthwiseWeightShape(g));
  SmallVector<int64_t> domain = channelsShape(g, g.input);
  bool channelsLast = runsChannelsLast(kb, g, g.input);
  if (succeeded(
          buildPhasedInputGradient(kb, g, gradOutput, weight, channelsLast)))
    return success();
  Value gradInput = kb.output(0, domain);
  if (!channelsLast &&
      succeeded(unpaddedGradientTaps(kb, g, gradOutput, weight, gradInput)))
    return success();

  DilatedGradient dyd = dilatedGradient(g);
  ArrayRef<int64_t> shifts = dyd.shifts;
  if (channelsLast) {
    // Over (c, n, h...), every tap of the channels-last gradient.
    Value dydt =
        channelsLastCopy(kb, g, gradOutput, dyd.shape, dyd.offsets, g.strides);
    channelsLastTaps(kb, g, dydt, channelsLastWeight(kb, g, weight), Value(),
                     g.input, SmallVector<int64_t>(rank, 1), shifts,
                     /*flipped=*/true, gradInput);
    return success();
  }
  SmallVector<int64_t> offsets = {0, 0}, steps = {1, 1};
  llvm::append_range(offsets, dyd.offsets);
  llvm::append_range(steps, g.strides);
  Value dilated =
      placedCopy(kb, gradOutput, channelsShape(g, dyd.shape), offsets, steps);

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
  rowTile(kb,
          tapSumNest(kb, g, domain, inputs, maps, Value(), channel, gradInput,
                     /*flipped=*/true));
  return success();
}

/// The most vectors of sums a weight gradient keeps per row of its
/// output (its taps times the vectors of a row): 25 at 5x5 over rows of
/// a vector, on AVX2 too, where 16 registers hold them with some spilled.
constexpr int64_t kRowSumVectors = 32;

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
    // Domain (c, n, o...): a vector of channels at a time (split across
    // threads), the batch and the plane reduced inside it, so that the
    // taps' sums of one vector stay in registers (dwt is private scratch,
    // so LLVM may keep them there across the loops) instead of being loaded
    // and stored at every position.
    SmallVector<int64_t> ones(rank, 1), zeros(rank, 0);
    Value xt = channelsLastCopy(kb, g, input, g.padded, g.padsBegin, ones);
    Value dyt = channelsLastCopy(kb, g, gradOutput, g.output, zeros, ones);
    SmallVector<int64_t> weightShape(g.kernel);
    weightShape.push_back(g.group);
    Value dwt = kb.privateScratch(weightShape, accumulator);
    zeroFill(kb, dwt);
    unsigned n = rank + 2;
    AffineExpr channel = affineDim(context, 0), batch = affineDim(context, 1);
    SmallVector<AffineExpr> gradient = {batch};
    llvm::append_range(gradient, dimsFrom(context, 2, rank));
    gradient.push_back(channel);
    SmallVector<Value> inputs = {dyt}, outputs;
    SmallVector<AffineMap> maps = {mapOf(context, n, gradient)}, outputMaps;
    forEachTap(g.kernel, [&](ArrayRef<int64_t> tap) {
      SmallVector<AffineExpr> read = {batch};
      for (unsigned i = 0; i < rank; ++i)
        read.push_back(affineDim(context, 2 + i) * g.strides[i] +
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
    SmallVector<int64_t> domain = {g.group, g.batch};
    llvm::append_range(domain, g.output);
    SmallVector<bool> reduction(n, true);
    reduction.front() = false;
    vectorOfChannels(
        kb, kb.nest(domain, reduction, inputs, outputs, maps, accumulateTaps));
    // dw[c, t...] = dwt[t..., c].
    SmallVector<AffineExpr> write = {affineDim(context, rank)};
    llvm::append_range(write, dimsFrom(context, 0, rank));
    copyTo(kb, dwt, gradWeight, mapOf(context, rank + 1, write));
    return success();
  }
  bool unpadded = unpaddedWeightGradient(g);
  DepthwiseSource source;
  if (!unpadded)
    source = depthwiseSource(kb, g, input);
  Value sums = accumulator == element
                   ? gradWeight
                   : kb.scratch(depthwiseWeightShape(g), accumulator);
  zeroFill(kb, sums);

  // Domain (c, n, o...): channels split across threads, the batch and the
  // plane reduced. Where every tap's sums over a whole row fit in about
  // the registers there are (kRowSumVectors), they stay a row of sums,
  // rows[c, t..., o_last]: private scratch at the same place over the
  // batch and the rows, which LLVM keeps in registers (a vector of 8 where
  // a row is half a vector: unmasked), summed across the row once per
  // channel at the end. Reducing every row's products across the vector
  // instead cost a horizontal sum per tap and row: 25 per row at 5x5,
  // 1.5-3.7x slower on 8x8 and 16x16 planes (Zen 4, AVX-512 and AVX2
  // code). Wider rows (3x3 over 56 columns: 36 vectors of sums) keep that
  // form: their sums spilled, it was 2.3x slower.
  //
  // A row of sums is a whole number of vectors, a power of two of them
  // (or less than one vector): LLVM keeps a vector of any other length
  // across the loops (3x3 over rows of 20 to 48 columns) in scalars, and
  // the weight gradient ran 4-10x slower than oneDNN's (Zen 4, 32
  // channels, batch 8: 0.40 against 0.055 ms at 28x28, 1.25 against 0.35 at
  // 48x48). Over the unpadded input the rows of sums are widened to such
  // a length, the positions past a row's end summing what is never read;
  // the padded input's nests keep whole sums there.
  int64_t width = g.output.back();
  int64_t rowVectors =
      llvm::PowerOf2Ceil((width + kb.vectorLanes - 1) / kb.vectorLanes);
  int64_t rowWidth =
      width <= kb.vectorLanes ? width : rowVectors * kb.vectorLanes;
  bool alongRows = rowWidth <= loop::innerTile(kb.vectorLanes) &&
                   tapCount(g) * rowVectors <= kRowSumVectors &&
                   (unpadded || rowWidth == width);
  SmallVector<int64_t> rowsShape = depthwiseWeightShape(g);
  rowsShape.push_back(rowWidth);
  Value rows = sums;
  if (alongRows) {
    rows = kb.privateScratch(rowsShape, accumulator);
    zeroFill(kb, rows);
  }
  if (unpadded)
    maskedWeightSums(kb, g, gradOutput, input, rows, alongRows ? rowWidth : 0);
  else
    paddedWeightSums(kb, g, gradOutput, source, rows, alongRows);
  if (alongRows) {
    // dw[c, t...] = sum over o < width of rows[c, t..., o].
    unsigned m = rowsShape.size();
    rowsShape.back() = width;
    SmallVector<bool> acrossRow(m, false);
    acrossRow.back() = true;
    kb.nest(rowsShape, acrossRow, {rows}, {sums},
            {offsetIdentity(context, SmallVector<int64_t>(m, 0)),
             mapOf(context, m, dimsFrom(context, 0, m - 1))},
            [](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
              return {arith::AddFOp::create(b, loc, x[1], x[0])};
            });
  }
  if (sums != gradWeight)
    copyTo(kb, sums, gradWeight,
           offsetIdentity(context, SmallVector<int64_t>(rank + 1, 0)));
  return success();
}

} // namespace trainc::conversion
