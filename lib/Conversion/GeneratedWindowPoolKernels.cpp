//===- GeneratedWindowPoolKernels.cpp - pooling over any window -----------===//
//
// graph.max_pool, graph.avg_pool and their gradients for any window
// (padding, overlap, dilation, ceil_mode) as window nests, over domains
// (n, c, o..., k...) of window positions and taps whose input map is
// o * stride + k * dilation into a padded copy of the input:
//
//   max forward    y = max over the taps of the copy padded with -inf
//   max gradient   the tap the reference routes each window's gradient to
//                  (the first maximal tap inside the input, a NaN
//                  winning: the last one), then dx[o*s + k*d] += dy[o]
//                  where k is that tap, a scatter in window order into a
//                  zero-padded buffer whose interior is dx
//   avg forward    sums over the zero-padded copy, divided by the
//                  reference's divisor (count_include_pad, ceil_mode),
//                  computed from the position (loop.index)
//   avg gradient   dx[o*s + k] += dy[o] / divisor(o), the same scatter
//
// The windows sum dimensions, so the nests run as scalar loops: the
// fallback (oneDNN and the generated pooling of exactly tiling windows,
// GeneratedPoolKernels.cpp, are the fast paths; oneDNN 2.6 has no bf16
// pooling without AVX-512, so `--amp bf16-storage` runs these there).
// Max pooling over windows of at most kMaxUnrolledTaps taps (3x3: 9)
// runs over the positions alone instead, each tap an operand, a shifted
// view, and its step unrolled in the body, the running maximum (and the
// gradient's argmax) in registers, not in memory at every tap.
//
//===----------------------------------------------------------------------===//
#include "lib/Conversion/KernelBuilder.h"

#include <limits>

namespace trainc::conversion {

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
  SmallVector<AffineExpr> results = {affineDim(context, 0), affineDim(context, 1)};
  for (unsigned i = 0; i < g.rank(); ++i)
    results.push_back(affineDim(context, g.positionDim(i)) * g.strides[i] +
                      affineDim(context, g.tapDim(i)) * g.dilations[i]);
  return mapOf(context, g.windowDomain().size(), results);
}

/// The map of a [N, C, O...] buffer in the window domain.
AffineMap positionMap(MLIRContext *context, const PoolGeometry &g) {
  SmallVector<AffineExpr> results = {affineDim(context, 0), affineDim(context, 1)};
  for (unsigned i = 0; i < g.rank(); ++i)
    results.push_back(affineDim(context, g.positionDim(i)));
  return mapOf(context, g.windowDomain().size(), results);
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

/// Whether the tap at offset `tapOffset(i)` (an index, in dim i) from the
/// current window's start (dims `positionDim` of the nest) reads the
/// input, not its padding. With `offsets` (the same offsets as constants)
/// the bounds that every window position meets are not tested.
Value insideInput(OpBuilder &b, Location loc, const PoolGeometry &g,
                  llvm::function_ref<Value(unsigned)> tapOffset,
                  ArrayRef<int64_t> offsets = {}) {
  Value inside = arith::ConstantIntOp::create(b, loc, 1, 1);
  for (unsigned i = 0; i < g.rank(); ++i) {
    if (!offsets.empty() && offsets[i] >= g.padsBegin[i] &&
        g.strides[i] * (g.output[i] - 1) + offsets[i] <
            g.padsBegin[i] + g.input[i])
      continue; // inside at every position
    Value position = arith::AddIOp::create(
        b, loc,
        arith::MulIOp::create(b, loc,
                              loop::IndexOp::create(b, loc, g.positionDim(i)),
                              indexConstant(b, loc, g.strides[i])),
        tapOffset(i));
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

/// Whether the current tap (dims `tapDim` of a window nest) reads the
/// input, not its padding.
Value tapInside(OpBuilder &b, Location loc, const PoolGeometry &g) {
  return insideInput(b, loc, g, [&](unsigned i) -> Value {
    return arith::MulIOp::create(b, loc,
                                 loop::IndexOp::create(b, loc, g.tapDim(i)),
                                 indexConstant(b, loc, g.dilations[i]));
  });
}

/// Windows of at most this many taps run as nests over positions only,
/// each tap an operand (a shifted view), its arithmetic unrolled in the
/// body; larger ones as nests over positions and taps.
constexpr int64_t kMaxUnrolledTaps = 27;

int64_t tapCount(const PoolGeometry &g) {
  int64_t count = 1;
  for (int64_t extent : g.kernel)
    count *= extent;
  return count;
}

/// The map of the padded input at tap `tap` in a domain (n, c, o...) of
/// positions: (n, c, o*s + k*d).
AffineMap tapMap(MLIRContext *context, const PoolGeometry &g,
                 ArrayRef<int64_t> tap) {
  SmallVector<AffineExpr> results = {affineDim(context, 0),
                                     affineDim(context, 1)};
  for (unsigned i = 0; i < g.rank(); ++i)
    results.push_back(affineDim(context, g.positionDim(i)) * g.strides[i] +
                      tap[i] * g.dilations[i]);
  return mapOf(context, 2 + g.rank(), results);
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
/// output itself when it is the padded input of f32, else a zeroed f32
/// scratch (overlapping windows add in f32 whatever the output's type)
/// whose interior is copied to the output by `finishPaddedGradient`.
Value paddedGradient(KernelBuilder &kb, const PoolGeometry &g, Value output) {
  SmallVector<int64_t> padded = g.shape(g.padded);
  Value target = output;
  auto type = cast<MemRefType>(output.getType());
  if (type.getShape() != ArrayRef(padded) || !type.getElementType().isF32())
    target = kb.scratch(padded, kb.builder.getF32Type());
  zeroFill(kb, target);
  return target;
}

void finishPaddedGradient(KernelBuilder &kb, const PoolGeometry &g,
                          Value padded, Value output) {
  if (padded == output)
    return;
  MLIRContext *context = kb.builder.getContext();
  SmallVector<int64_t> shape = g.shape(g.input);
  SmallVector<int64_t> zeros(shape.size(), 0);
  Type stored = cast<MemRefType>(output.getType()).getElementType();
  kb.nest(shape, SmallVector<bool>(shape.size(), false), {padded}, {output},
          {offsetIdentity(context, g.paddedOffsets()),
           offsetIdentity(context, zeros)},
          [&](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
            if (x[0].getType() == stored)
              return {x[0]};
            return {arith::TruncFOp::create(b, loc, stored, x[0])};
          });
}

/// A nest over the positions (n, c, o...) that reads `padded` at every tap
/// of the window (row-major), each tap an operand (a shifted view), and
/// writes `output` [N, C, O...]: `body` gets the taps' values and returns
/// the output's.
void tapsNest(
    KernelBuilder &kb, const PoolGeometry &g, Value padded, Value output,
    llvm::function_ref<Value(OpBuilder &, Location, ValueRange)> body) {
  MLIRContext *context = kb.builder.getContext();
  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  forEachTap(g.kernel, [&](ArrayRef<int64_t> tap) {
    inputs.push_back(padded);
    maps.push_back(tapMap(context, g, tap));
  });
  SmallVector<int64_t> positions = g.shape(g.output);
  maps.push_back(
      offsetIdentity(context, SmallVector<int64_t>(positions.size(), 0)));
  kb.nest(positions, SmallVector<bool>(positions.size(), false), inputs,
          {output}, maps,
          [&](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
            return {body(b, loc, x.drop_back())};
          });
}

/// One tap of the reference's argmax (PoolingKernels.cpp): the first
/// maximal tap inside the input, a NaN winning (the last one). `choice`
/// encodes -1 for none yet, t for tap t, -2 - t for a NaN at tap t; `max`
/// is the maximum so far. Returns the new maximum and choice after tap
/// number `tap` (an i64) of value `value`, `inside` the input or not.
std::pair<Value, Value> argmaxStep(OpBuilder &b, Location loc, Value value,
                                   Value max, Value choice, Value tap,
                                   Value inside) {
  // The choice is an i64 or, where the taps are unrolled, an f32 (small
  // integers, exact): float selects become blends, while LLVM turned the
  // chain of i64 selects into branches, mispredicted on real data.
  bool isFloat = isa<FloatType>(choice.getType());
  auto number = [&](int64_t v) -> Value {
    if (isFloat)
      return constant(b, loc, choice.getType(), static_cast<double>(v));
    return arith::ConstantIntOp::create(b, loc, v, 64);
  };
  auto choiceIs = [&](arith::CmpIPredicate integer, arith::CmpFPredicate real,
                      int64_t v) -> Value {
    if (isFloat)
      return arith::CmpFOp::create(b, loc, real, choice, number(v));
    return arith::CmpIOp::create(b, loc, integer, choice, number(v));
  };
  Value isNan =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNO, value, value);
  Value sawNan =
      choiceIs(arith::CmpIPredicate::sle, arith::CmpFPredicate::OLE, -2);
  Value none =
      choiceIs(arith::CmpIPredicate::eq, arith::CmpFPredicate::OEQ, -1);
  Value greater =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, value, max);
  Value notNan = arith::XOrIOp::create(
      b, loc, isNan, arith::ConstantIntOp::create(b, loc, 1, 1));
  Value notSawNan = arith::XOrIOp::create(
      b, loc, sawNan, arith::ConstantIntOp::create(b, loc, 1, 1));
  // A number that beats the maximum so far (or is the first).
  Value takes = arith::AndIOp::create(
      b, loc, arith::AndIOp::create(b, loc, notNan, notSawNan),
      arith::OrIOp::create(b, loc, none, greater));
  Value nanChoice = isFloat
                        ? Value(arith::SubFOp::create(b, loc, number(-2), tap))
                        : Value(arith::SubIOp::create(b, loc, number(-2), tap));
  Value newChoice = arith::SelectOp::create(
      b, loc, isNan, nanChoice,
      arith::SelectOp::create(b, loc, takes, tap, choice));
  Value newMax = arith::SelectOp::create(b, loc, takes, value, max);
  // Taps in the padding change nothing.
  return {arith::SelectOp::create(b, loc, inside, newMax, max),
          arith::SelectOp::create(b, loc, inside, newChoice, choice)};
}

/// The tap a choice (argmaxStep's encoding) routes the gradient to, as an
/// i64 (-1 for none).
Value decodeChoice(OpBuilder &b, Location loc, Value choice) {
  Value zero64 = arith::ConstantIntOp::create(b, loc, 0, 64);
  return arith::SelectOp::create(
      b, loc,
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, choice, zero64),
      choice,
      arith::SubIOp::create(
          b, loc, arith::ConstantIntOp::create(b, loc, -2, 64), choice));
}

/// The argmax of a max pooling's gradient (argmaxStep) for windows of at
/// most kMaxUnrolledTaps taps, into `chosen`: a nest over the positions
/// (n, c, o...), every tap an operand (a shifted view of the padded
/// input), the taps' steps unrolled in the body, the running maximum and
/// choice in registers, each tap's place a constant offset. (As a nest
/// over positions and taps, the maximum and choice went through memory at
/// every tap: for ResNet-18's 3x3 stride-2 pooling, bf16 at batch 32, 2.9
/// ms against 1.5 now, one thread, AVX2 code on a Zen 4.) The same taps in
/// the same order: the same choices.
void unrolledArgmax(KernelBuilder &kb, const PoolGeometry &g, Value padded,
                    Value chosen) {
  SmallVector<SmallVector<int64_t>> offsets; // of each tap, in index units
  forEachTap(g.kernel, [&](ArrayRef<int64_t> tap) {
    offsets.emplace_back();
    for (unsigned i = 0; i < g.rank(); ++i)
      offsets.back().push_back(tap[i] * g.dilations[i]);
  });
  Type element = cast<MemRefType>(padded.getType()).getElementType();
  tapsNest(kb, g, padded, chosen,
           [&](OpBuilder &b, Location loc, ValueRange taps) -> Value {
             Type f32 = b.getF32Type();
             Value max = constant(b, loc, element, 0.0);
             Value choice = constant(b, loc, f32, -1.0);
             for (auto [number, value] : llvm::enumerate(taps)) {
               ArrayRef<int64_t> offset = offsets[number];
               Value inside = insideInput(
                   b, loc, g,
                   [&](unsigned i) -> Value {
                     return indexConstant(b, loc, offset[i]);
                   },
                   offset);
               std::tie(max, choice) = argmaxStep(
                   b, loc, value, max, choice,
                   constant(b, loc, f32, static_cast<double>(number)), inside);
             }
             return arith::FPToSIOp::create(b, loc, b.getI64Type(), choice);
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
  if (tapCount(*g) <= kMaxUnrolledTaps) {
    // Over the positions, every tap an operand (as unrolledArgmax):
    // the maximum stays in registers.
    tapsNest(kb, *g, padded, output,
             [&](OpBuilder &b, Location loc, ValueRange taps) -> Value {
               Value max = constant(b, loc, taps[0].getType(), lowest);
               for (Value value : taps) // a NaN wins
                 max = arith::MaximumFOp::create(b, loc, max, value);
               return max;
             });
    return success();
  }
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
  // The maximum in the input's own type (exact in any precision).
  Type element = kb.inputType(1).getElementType();
  Type i64 = kb.builder.getI64Type();
  Value gradOutput = kb.input(0, g->shape(g->output));
  Value input = kb.input(1, g->shape(g->input));
  Value gradInput = kb.output(0, g->shape(g->input));
  Value padded =
      placedCopy(kb, input, g->shape(g->padded), g->paddedOffsets());

  // The tap each window routes its gradient to, as the reference chooses
  // it (argmaxStep), then dx[n, c, o*s + k*d] += dy[n, c, o] where tap k
  // is the chosen one: a scatter in the forward's window order.
  SmallVector<int64_t> positions = g->shape(g->output);
  Value chosen = kb.scratch(positions, i64);
  const PoolGeometry &geometry = *g;
  if (tapCount(*g) <= kMaxUnrolledTaps) {
    unrolledArgmax(kb, *g, padded, chosen);
  } else {
    Value best = kb.scratch(positions, element);
    Space whole(positions);
    unsigned all = whole.addAllBut([](unsigned) { return false; });
    kb.fill(whole, {best, all}, 0.0);
    kb.fill(whole, {chosen, all}, -1.0);
    kb.nest(
        g->windowDomain(), windowReductions(*g, false), {padded},
        {best, chosen},
        {windowMap(context, *g), positionMap(context, *g),
         positionMap(context, *g)},
        [&](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
          auto [max, choice] =
              argmaxStep(b, loc, x[0], x[1], x[2], tapNumber(b, loc, geometry),
                         tapInside(b, loc, geometry));
          return {max, choice};
        });
  }
  // The scatter stays a nest over positions and taps (their sums index
  // the target, so its tiles are single points): as a nest over the
  // positions with an output view per tap, overlapping windows write the
  // same elements through different views, which tiles of more than one
  // point (--trainc-fuse-elementwise, fusing the gradient's producer in,
  // chose 8) do not keep in order.
  Value target = paddedGradient(kb, *g, gradInput);
  kb.nest(g->windowDomain(), windowReductions(*g, true), {gradOutput, chosen},
          {target},
          {positionMap(context, *g), positionMap(context, *g),
           windowMap(context, *g)},
          [&](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
            Value grad = x[0], out = x[2];
            Value hit = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                              decodeChoice(b, loc, x[1]),
                                              tapNumber(b, loc, geometry));
            if (grad.getType() != out.getType()) // low gradients add in f32
              grad = arith::ExtFOp::create(b, loc, out.getType(), grad);
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
  zeroFill(kb, output);
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
