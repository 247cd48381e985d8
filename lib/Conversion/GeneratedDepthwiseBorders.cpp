//===- GeneratedDepthwiseBorders.cpp - taps over an unpadded source ------===//
//
// A depthwise convolution of stride 1 (the forward one, or the input
// gradient, which is the convolution of the output gradient with the
// flipped weight) reads its source through every tap as a shifted view.
// GeneratedDepthwiseKernels.cpp gives those views a zero-padded copy of
// the source: a zero fill and a copy, two passes over a buffer larger than
// the source, which cost as much as the taps themselves (Zen 4, 144
// channels of 16x16: fill 4.8 %, copy 2.4 %, taps 7.6 % of the step's
// samples). Here the taps read the source itself, as a loop.nest's
// `wrapping_inputs`: a tap's read that leaves its row or plane lands in
// the neighbouring row or plane, still inside the buffer, and the body
// selects zero there (comparing `loop.index` with the plane's extents):
//
//   out[n, c, o] = bias[c] + sum_t (0 <= o + s_t < D ? src[n, c, o + s_t] : 0)
//                                  * w[c, t]
//
// with the same products in the same order as over the padded copy, so
// the results are the same bits. Only the first plane's reads may fall
// before the buffer and only the last plane's after it; the channels 1 to
// C-2 of every image are one nest over the source, and channels 0 and C-1
// are copied into a scratch [N, 4, D...] between planes of slack (never
// used unselected) and computed there.
//
//===----------------------------------------------------------------------===//
#include "lib/Conversion/DepthwiseNests.h"

#include <numeric>

namespace trainc::conversion::depthwise {
namespace {

/// Row-major strides of `shape`.
SmallVector<int64_t> stridesOf(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t axis = static_cast<int64_t>(shape.size()) - 2; axis >= 0; --axis)
    strides[axis] = strides[axis + 1] * shape[axis + 1];
  return strides;
}

/// Each tap's value of `taps` (read at o + shifts[t] of positions o in
/// domain dims 2...), or zero where that left the source's plane: the
/// body's part of a nest with wrapping inputs.
SmallVector<Value> selectTaps(OpBuilder &b, Location loc, ValueRange taps,
                              ArrayRef<SmallVector<int64_t>> shifts,
                              ArrayRef<int64_t> outputPlane,
                              ArrayRef<int64_t> sourcePlane) {
  unsigned rank = sourcePlane.size();
  SmallVector<Value> index;
  for (unsigned i = 0; i < rank; ++i)
    index.push_back(arith::IndexCastOp::create(
        b, loc, b.getI32Type(), loop::IndexOp::create(b, loc, 2 + i)));
  auto compare = [&](arith::CmpIPredicate predicate, unsigned i,
                     int64_t bound) -> Value {
    return arith::CmpIOp::create(
        b, loc, predicate, index[i],
        arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(bound)));
  };
  SmallVector<Value> selected;
  Value zero = constant(b, loc, taps[0].getType(), 0.0);
  for (auto [t, value] : llvm::enumerate(taps)) {
    Value valid;
    auto both = [&](Value condition) {
      valid = valid
                  ? arith::AndIOp::create(b, loc, valid, condition).getResult()
                  : condition;
    };
    for (unsigned i = 0; i < rank; ++i) {
      int64_t shift = shifts[t][i];
      if (shift < 0)
        both(compare(arith::CmpIPredicate::sge, i, -shift));
      if (outputPlane[i] - 1 + shift >= sourcePlane[i])
        both(compare(arith::CmpIPredicate::slt, i, sourcePlane[i] - shift));
    }
    selected.push_back(
        valid ? arith::SelectOp::create(b, loc, valid, value, zero).getResult()
              : value);
  }
  return selected;
}

/// The tap nest over `domain` = (n, c, o...): `source` at (n,
/// sourceChannel(c), o + shift), the weight at (channel(c), t) and the bias
/// at channel(c), written to `output` at (n, channel(c), o...), in tiles of
/// `channelTile` channels.
void maskedTapNest(KernelBuilder &kb, const ConvGeometry &g,
                   ArrayRef<int64_t> domain, int64_t channelTile, Value source,
                   ArrayRef<int64_t> sourcePlane, AffineExpr sourceChannel,
                   Value weight, bool flipped, Value bias, AffineExpr channel,
                   Value output, ArrayRef<SmallVector<int64_t>> shifts) {
  MLIRContext *context = kb.builder.getContext();
  unsigned n = domain.size(), rank = g.rank();
  AffineExpr batch = affineDim(context, 0);
  SmallVector<AffineExpr> positions = dimsFrom(context, 2, rank);
  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  unsigned tap = 0;
  appendTapOperands(
      g, n, channel, source,
      [&](ArrayRef<int64_t>) {
        SmallVector<AffineExpr> read = {batch, sourceChannel};
        for (unsigned i = 0; i < rank; ++i)
          read.push_back(positions[i] + shifts[tap][i]);
        ++tap;
        return mapOf(context, n, read);
      },
      weight, flipped, inputs, maps);
  int64_t taps = tapCount(g);
  if (bias) {
    inputs.push_back(bias);
    maps.push_back(mapOf(context, n, {channel}));
  }
  SmallVector<AffineExpr> write = {batch, channel};
  llvm::append_range(write, positions);
  maps.push_back(mapOf(context, n, write));
  SmallVector<int64_t> outputPlane(domain.drop_front(2));
  loop::NestOp nest = kb.nest(
      domain, SmallVector<bool>(n, false), inputs, {output}, maps,
      [&](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
        SmallVector<Value> selected = selectTaps(
            b, loc, x.take_front(taps), shifts, outputPlane, sourcePlane);
        llvm::append_range(selected, x.drop_front(taps));
        return tapSum(b, loc, selected, taps, bool(bias), flipped);
      });
  SmallVector<int64_t> wrapping(taps);
  std::iota(wrapping.begin(), wrapping.end(), 0);
  nest.setWrappingInputsAttr(kb.builder.getDenseI64ArrayAttr(wrapping));
  // Tiles of a few channels (rather than rowTile's rows): their sums'
  // chains of adds interleave as 4 rows' would, while a row's position, and
  // so which taps it masks, is the same across the tile (over rows, the
  // masks were vectors of row indices, built lane by lane). `channelTile`
  // divides the domain's channels (maskedTapSum splits them so): with a
  // partial tile, every tile's vectors would be masked.
  loop::ScheduleAttr schedule = nest.getSchedule();
  if (schedule.getVectorize() && n >= 3) {
    SmallVector<int64_t> tile(schedule.getTile());
    int64_t width = domain.back();
    if (width < kb.vectorLanes && width >= loop::kMinVectorExtent)
      tile.back() = width;
    tile[1] = channelTile;
    nest.setScheduleAttr(loop::ScheduleAttr::get(
        context, schedule.getParallel(), tile, /*vectorize=*/true));
  }
}

/// Whether the taps `shifts` over `sourcePlane`, from positions over
/// `outputPlane`, may read the source unpadded: at least 3 channels, up to
/// 9 taps (the masks cost more than the copy saves beyond: Zen 4, one
/// thread, 5x5 windows over 8x8 to 32x32 planes ran at 0.84-0.94x the
/// padded kernel's speed; 3x3 at 1.05-2.1x), and every read within a plane
/// of its own (the slack before and after it), so that only the first and
/// the last planes may leave the buffer.
bool unpaddedApplies(const ConvGeometry &g, ArrayRef<int64_t> sourcePlane,
                     ArrayRef<int64_t> outputPlane,
                     ArrayRef<SmallVector<int64_t>> shifts) {
  if (g.group < 3 || sourcePlane.empty() || tapCount(g) > 9)
    return false;
  SmallVector<int64_t> strides = stridesOf(sourcePlane);
  int64_t plane = 1;
  for (int64_t extent : sourcePlane)
    plane *= extent;
  for (ArrayRef<int64_t> shift : shifts) {
    int64_t least = 0, greatest = 0;
    for (auto [i, s] : llvm::enumerate(shift)) {
      least += std::min<int64_t>(s, s + outputPlane[i] - 1) * strides[i];
      greatest += std::max<int64_t>(s, s + outputPlane[i] - 1) * strides[i];
    }
    if (least < -plane || greatest >= 2 * plane)
      return false;
  }
  return true;
}

/// Channels 0 and C-1 of `source` [N, C, plane...] copied to e[n, 1] and
/// e[n, 2] of a scratch [N, 4, plane...], between planes of slack.
Value edgeChannels(KernelBuilder &kb, const ConvGeometry &g, Value source,
                   ArrayRef<int64_t> sourcePlane) {
  MLIRContext *context = kb.builder.getContext();
  AffineExpr c = affineDim(context, 1);
  SmallVector<int64_t> edgeShape = {g.batch, 4};
  llvm::append_range(edgeShape, sourcePlane);
  Value edges = kb.scratch(edgeShape,
                           cast<MemRefType>(source.getType()).getElementType());
  SmallVector<int64_t> copyDomain = {g.batch, 2};
  llvm::append_range(copyDomain, sourcePlane);
  unsigned m = copyDomain.size();
  SmallVector<AffineExpr> read = {affineDim(context, 0), c * (g.group - 1)};
  SmallVector<AffineExpr> written = {affineDim(context, 0), c + 1};
  for (AffineExpr position : dimsFrom(context, 2, sourcePlane.size())) {
    read.push_back(position);
    written.push_back(position);
  }
  kb.nest(copyDomain, SmallVector<bool>(m, false), {source}, {edges},
          {mapOf(context, m, read), mapOf(context, m, written)},
          [](OpBuilder &, Location, ValueRange x) -> SmallVector<Value> {
            return {x[0]};
          });
  return edges;
}

/// Whether every stride of `g` is 1.
bool unstrided(const ConvGeometry &g) {
  return llvm::all_of(g.strides, [](int64_t s) { return s == 1; });
}

} // namespace

/// output[n, c, o] = bias[c] + sum_t src[n, c, o + shifts[t]] * w[c, t]
/// (flipped: K-1-t), the reads outside the plane taken as zero, over
/// `source` [N, C, sourcePlane...] unpadded; taps in row-major order.
/// Failure, with nothing built, where unpaddedApplies does not hold.
static LogicalResult
maskedTapSum(KernelBuilder &kb, const ConvGeometry &g, Value source,
             ArrayRef<int64_t> sourcePlane,
             ArrayRef<SmallVector<int64_t>> shifts, Value weight, bool flipped,
             Value bias, ArrayRef<int64_t> outputPlane, Value output) {
  MLIRContext *context = kb.builder.getContext();
  if (!unpaddedApplies(g, sourcePlane, outputPlane, shifts))
    return failure();
  int64_t channels = g.group;

  // Channels 1 to C-2, over the source: tiles of 4 channels, then the
  // last few as one tile.
  AffineExpr c = affineDim(context, 1);
  int64_t inner = channels - 2, whole = inner / 4 * 4;
  auto overSource = [&](int64_t first, int64_t count) {
    if (count == 0)
      return;
    SmallVector<int64_t> domain = {g.batch, count};
    llvm::append_range(domain, outputPlane);
    maskedTapNest(kb, g, domain, std::min<int64_t>(count, 4), source,
                  sourcePlane, c + first, weight, flipped, bias, c + first,
                  output, shifts);
  };
  overSource(1, whole);
  overSource(1 + whole, inner - whole);

  // Channels 0 and C-1 (q = 0, 1: channel q (C - 1)), over their copies
  // e[n, q + 1].
  Value edges = edgeChannels(kb, g, source, sourcePlane);
  SmallVector<int64_t> edgeDomain = {g.batch, 2};
  llvm::append_range(edgeDomain, outputPlane);
  maskedTapNest(kb, g, edgeDomain, 2, edges, sourcePlane, c + 1, weight,
                flipped, bias, c * (channels - 1), output, shifts);
  return success();
}

/// The shifts of a forward convolution's taps (stride 1): t*d - pad.
static SmallVector<SmallVector<int64_t>>
forwardShifts(const ConvGeometry &g) {
  SmallVector<SmallVector<int64_t>> shifts;
  forEachTap(g.kernel, [&](ArrayRef<int64_t> tap) {
    SmallVector<int64_t> shift;
    for (unsigned i = 0; i < g.rank(); ++i)
      shift.push_back(tap[i] * g.dilations[i] - g.padsBegin[i]);
    shifts.push_back(shift);
  });
  return shifts;
}

bool unpaddedWeightGradient(const ConvGeometry &g) {
  return unstrided(g) &&
         unpaddedApplies(g, g.input, g.output, forwardShifts(g));
}

void maskedWeightSums(KernelBuilder &kb, const ConvGeometry &g,
                      Value gradOutput, Value input, Value sums,
                      int64_t rowWidth) {
  MLIRContext *context = kb.builder.getContext();
  SmallVector<SmallVector<int64_t>> shifts = forwardShifts(g);
  unsigned rank = g.rank();
  int64_t taps = tapCount(g), channels = g.group;
  AffineExpr c = affineDim(context, 0), batch = affineDim(context, 1);
  SmallVector<AffineExpr> positions = dimsFrom(context, 2, rank);
  bool alongRows = rowWidth > 0;
  // Rows of sums wider than the output's (whole vectors) read dy past a
  // row's end too: in the next row, or in the slack of a copy of the edge
  // channels.
  bool widened = alongRows && rowWidth > g.output.back();
  // Over (c, n, o...): dy at (n, dyChannel(c), o), the taps of `source` at
  // (n, sourceChannel(c), o + shift), each summed into sums at (channel(c),
  // t...) (and o_last along rows).
  auto sumsNest = [&](int64_t count, Value dy, AffineExpr dyChannel,
                      Value source, AffineExpr sourceChannel,
                      AffineExpr channel) {
    SmallVector<int64_t> domain = {count, g.batch};
    llvm::append_range(domain, g.output);
    if (widened)
      domain.back() = rowWidth;
    unsigned n = domain.size();
    SmallVector<bool> reduction(n, true);
    reduction.front() = false;
    reduction.back() = !alongRows;
    SmallVector<AffineExpr> gradient = {batch, dyChannel};
    llvm::append_range(gradient, positions);
    SmallVector<Value> inputs = {dy}, outputs;
    SmallVector<AffineMap> maps = {mapOf(context, n, gradient)}, outputMaps;
    unsigned t = 0;
    forEachTap(g.kernel, [&](ArrayRef<int64_t> tap) {
      SmallVector<AffineExpr> read = {batch, sourceChannel};
      for (unsigned i = 0; i < rank; ++i)
        read.push_back(positions[i] + shifts[t][i]);
      ++t;
      inputs.push_back(source);
      maps.push_back(mapOf(context, n, read));
      outputs.push_back(sums);
      SmallVector<AffineExpr> sum = {channel};
      for (int64_t k : tap)
        sum.push_back(getAffineConstantExpr(k, context));
      if (alongRows)
        sum.push_back(positions.back());
      outputMaps.push_back(mapOf(context, n, sum));
    });
    llvm::append_range(maps, outputMaps);
    loop::NestOp nest = kb.nest(
        domain, reduction, inputs, outputs, maps,
        [&](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
          SmallVector<Value> selected =
              selectTaps(b, loc, x.slice(1, taps), shifts, g.output, g.input);
          SmallVector<Value> result;
          for (int64_t k = 0; k < taps; ++k)
            result.push_back(arith::AddFOp::create(
                b, loc, x[1 + taps + k],
                arith::MulFOp::create(b, loc, x[0], selected[k])));
          return result;
        });
    // The taps wrap, and dy where the rows of sums are wider than its.
    SmallVector<int64_t> wrapping;
    for (int64_t i = widened ? 0 : 1; i <= taps; ++i)
      wrapping.push_back(i);
    nest.setWrappingInputsAttr(kb.builder.getDenseI64ArrayAttr(wrapping));
    if (alongRows)
      wholeRowTile(nest, rowWidth);
  };
  sumsNest(channels - 2, gradOutput, c + 1, input, c + 1, c + 1);
  Value edges = edgeChannels(kb, g, input, g.input);
  // e[n, q + 1] is channel q (C - 1).
  if (widened)
    sumsNest(2, edgeChannels(kb, g, gradOutput, g.output), c + 1, edges, c + 1,
             c * (channels - 1));
  else
    sumsNest(2, gradOutput, c * (channels - 1), edges, c + 1,
             c * (channels - 1));
}

/// The forward convolution over the unpadded input (maskedTapSum), where
/// it applies: stride 1, tap t reading x at o + t*d - pad.
LogicalResult unpaddedTaps(KernelBuilder &kb, const ConvGeometry &g,
                           Value input, Value weight, Value bias,
                           Value output) {
  if (!unstrided(g))
    return failure();
  return maskedTapSum(kb, g, input, g.input, forwardShifts(g), weight,
                      /*flipped=*/false, bias, g.output, output);
}

/// The input gradient of a stride-1 convolution over the unpadded output
/// gradient (maskedTapSum): tap t of the flipped weight reads dy at
/// h + t*d - (K-1)*d + pad.
LogicalResult unpaddedGradientTaps(KernelBuilder &kb, const ConvGeometry &g,
                                   Value gradOutput, Value weight,
                                   Value gradInput) {
  if (!unstrided(g))
    return failure();
  SmallVector<SmallVector<int64_t>> shifts;
  forEachTap(g.kernel, [&](ArrayRef<int64_t> tap) {
    SmallVector<int64_t> shift;
    for (unsigned i = 0; i < g.rank(); ++i)
      shift.push_back((tap[i] - g.kernel[i] + 1) * g.dilations[i] +
                      g.padsBegin[i]);
    shifts.push_back(shift);
  });
  return maskedTapSum(kb, g, gradOutput, g.output, shifts, weight,
                      /*flipped=*/true, Value(), g.input, gradInput);
}

} // namespace trainc::conversion::depthwise
