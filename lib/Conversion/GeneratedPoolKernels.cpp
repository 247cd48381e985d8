//===- GeneratedPoolKernels.cpp - max pooling and its gradient ------------===//
//
// graph.max_pool and graph.max_pool_backward where the windows tile the
// input exactly: strides equal to the window, no padding, no dilation,
// every spatial extent a multiple of the window's (the 2x2/2 pools of a
// CNN). Each input element then lies in exactly one window, so the input
// [N, C, D1, ..., Dr] is, at no cost, [N, C, O1, K1, ..., Or, Kr]
// (Di = Oi * Ki): window positions O and taps K. Every buffer is a
// projected permutation of that space.
//
// The forward is one reduction over the taps (maximumf: a NaN wins). It
// returns the reference's value, but where a window's maximum is zero it
// returns +0 if any maximal tap is +0, the reference the first one's zero.
//
// The gradient, where the window's last dim has 2 taps (pairs, below) and
// the window at most 16 taps, is one nest over the window positions with
// each pair of taps an operand, everything kept in registers
// (fusedMaxPoolBackward). Otherwise it is three nests, with two
// window-shaped scratch buffers:
//
//   max[n, c, o]   = the largest number in the window (NaNs skipped)
//   first[n, c, o] = the first tap t (row-major in the window) with
//                    x == max, or -1 - t for the last tap that is a NaN
//   dx[.., o, k]   = dy[n, c, o] if t(k) is first (either encoding), else 0
//
// which is the reference's choice (PoolingKernels.cpp, the interpreter's
// maxPoolArgmax): the first maximal tap, a NaN winning, the last one when
// there are several. Ties are common (after a ReLU whole windows are 0);
// -0 equals +0. The gradient moves values without arithmetic, except that
// dy + 0 turns -0 into +0 as the reference's double accumulator does, so
// the result is bit for bit the reference's.
//
// Layout. With the window's last tap dim Kr innermost, vectors would be Kr
// lanes wide (7.5 ms single-threaded for the CNN's 64x32x28x28 pool,
// measured on the loop kernels before this builder). For Kr = 2 the nests
// read and write the input's pairs of taps as one i64 each (i32 for bf16
// and f16, whose taps are compared in f32 and whose maxima are kept in f32
// scratch before one exact rounding), split in the body: then the
// windows' last dim Or is innermost and contiguous in every
// buffer and the nests vectorize (0.40 ms). Other Kr go before Or, read
// strided (scalar loops). The reductions' innermost tiles divide Or
// evenly: a masked partial tile stores the maxima, and the next window
// row's masked load of them does not get the stored data forwarded (the
// max nest took 0.39 ms with 16-lane tiles over Or = 14, 0.10 ms with
// 14-lane ones).
//
//===----------------------------------------------------------------------===//
#include "lib/Conversion/KernelBuilder.h"

#include <limits>

namespace trainc::conversion {
namespace {

/// The window dims of an exactly tiled pooling: `windows` (O) and `taps`
/// (K) per spatial dim.
struct Tiling {
  SmallVector<int64_t> windows, taps;
};

/// The tiling of `input` (f32, bf16 or f16 [N, C, D...]) by the launch's
/// windows into `windows` ([N, C, O...]), or nullopt if they do not tile it
/// exactly (GeneratedWindowPoolKernels.cpp builds those).
std::optional<Tiling> exactTiling(KernelBuilder &kb, MemRefType input,
                                  MemRefType windows) {
  ArrayRef<int64_t> shape = input.getShape();
  ArrayRef<int64_t> windowShape = windows.getShape();
  ArrayRef<int64_t> kernel = kb.integers("kernel_shape");
  ArrayRef<int64_t> strides = kb.integers("strides");
  ArrayRef<int64_t> pads = kb.integers("pads");
  ArrayRef<int64_t> dilations = kb.integers("dilations");
  size_t rank = kernel.size();
  if (shape.size() != rank + 2 || rank == 0 || strides != kernel ||
      pads.size() != 2 * rank || dilations.size() != rank ||
      windowShape.size() != shape.size() ||
      !(input.getElementType().isF32() ||
        KernelBuilder::isLowFloat(input.getElementType())))
    return std::nullopt;
  Tiling tiling;
  for (size_t d = 0; d < rank; ++d) {
    int64_t extent = shape[d + 2];
    if (kernel[d] < 1 || extent % kernel[d] != 0 || pads[d] != 0 ||
        pads[d + rank] != 0 || dilations[d] != 1 ||
        windowShape[d + 2] != extent / kernel[d])
      return std::nullopt;
    tiling.windows.push_back(extent / kernel[d]);
    tiling.taps.push_back(kernel[d]);
  }
  return tiling;
}

/// Innermost tiles that divide the innermost extent as evenly as the
/// default schedule's widest tile allows: no masked partial tile when the
/// extent is at most that tile (see the file comment).
void tileInnermostEvenly(loop::NestOp nest, int64_t vectorLanes) {
  loop::ScheduleAttr schedule = nest.getSchedule();
  ArrayRef<int64_t> domain = nest.getDomain();
  int64_t inner = static_cast<int64_t>(domain.size()) - 1;
  if (inner < 0 || domain[inner] == 0 || schedule.getParallel() == inner)
    return;
  int64_t tiles = llvm::divideCeil(domain[inner], loop::innerTile(vectorLanes));
  SmallVector<int64_t> tile(schedule.getTile());
  tile[inner] = std::max<int64_t>(1, llvm::divideCeil(domain[inner], tiles));
  nest.setScheduleAttr(loop::ScheduleAttr::get(nest.getContext(),
                                               schedule.getParallel(), tile,
                                               schedule.getVectorize()));
}

/// The iteration space of the nests, and what their bodies need to know
/// of it.
struct PoolSpace {
  Space space;
  unsigned inputId = 0, windowId = 0;
  /// The tensors' element type: f32, bf16 or f16 (compared in f32).
  Type element;
  /// Whether the input's elements are pairs of taps along the last window
  /// dim, an integer of twice the element's bits each.
  bool pairs = false;
  int64_t windowSize = 1;
  /// The tap dims (as numbered before simplification) and their strides in
  /// the row-major tap number.
  SmallVector<std::pair<unsigned, int64_t>> tapDims;

  /// The element type the nests see the input as.
  Type inputElement(KernelBuilder &kb) const {
    return pairs ? Type(kb.builder.getIntegerType(2 * bits())) : element;
  }

  unsigned bits() const { return element.getIntOrFloatBitWidth(); }

  /// The row-major tap number of the current point (of its first tap, for
  /// pairs), as an i32.
  Value tap(OpBuilder &b, Location loc) const {
    Type i32 = b.getI32Type();
    Value tap = arith::ConstantIntOp::create(b, loc, i32, 0);
    for (auto [original, stride] : tapDims) {
      std::optional<unsigned> dim = space.find(original);
      if (!dim)
        continue; // one tap along it
      Value index = arith::IndexCastOp::create(
          b, loc, i32, loop::IndexOp::create(b, loc, *dim));
      Value scaled = arith::MulIOp::create(
          b, loc, index, arith::ConstantIntOp::create(b, loc, i32, stride));
      tap = arith::AddIOp::create(b, loc, tap, scaled);
    }
    return tap;
  }
};

/// N, C, then each spatial dim's window positions O and taps K, the input
/// indexed by all of them in that order and the windows by N, C and the
/// O's. The taps of the last dim come before its positions, so that the
/// positions are innermost; pairs of them are the input's element instead.
PoolSpace poolSpace(ArrayRef<int64_t> batchAndChannels, const Tiling &tiling,
                    Type element) {
  size_t rank = tiling.taps.size();
  bool pairs = tiling.taps.back() == 2;
  // Row-major strides of the taps in the window.
  SmallVector<int64_t> tapStrides(rank, 1);
  for (size_t d = rank - 1; d > 0; --d)
    tapStrides[d - 1] = tapStrides[d] * tiling.taps[d];
  SmallVector<int64_t> extents(batchAndChannels);
  SmallVector<unsigned> input = {0, 1}, window = {0, 1};
  SmallVector<std::pair<unsigned, int64_t>> tapDims;
  for (size_t d = 0; d < rank; ++d) {
    unsigned position = extents.size();
    if (d + 1 == rank && pairs) {
      extents.push_back(tiling.windows[d]);
      input.push_back(position);
      window.push_back(position);
      continue;
    }
    unsigned tap = position + 1;
    if (d + 1 == rank)
      std::swap(position, tap);
    extents.resize(extents.size() + 2);
    extents[position] = tiling.windows[d];
    extents[tap] = tiling.taps[d];
    input.append({position, tap});
    window.push_back(position);
    tapDims.push_back({tap, tapStrides[d]});
  }
  PoolSpace ps{Space(extents)};
  ps.element = element;
  ps.pairs = pairs;
  ps.windowSize = tapStrides[0] * tiling.taps[0];
  ps.tapDims = tapDims;
  for (auto [dim, stride] : tapDims)
    ps.space.reduction[dim] = true;
  ps.inputId = ps.space.add(input);
  ps.windowId = ps.space.add(window);
  ps.space.dropUnitDims();
  ps.space.collapse();
  return ps;
}

/// `value` in f32 (exact: bf16 and f16 widen exactly).
Value toF32(OpBuilder &b, Location loc, Value value) {
  if (value.getType().isF32())
    return value;
  return arith::ExtFOp::create(b, loc, b.getF32Type(), value);
}

/// The taps an input element holds, in f32: itself, or the two of a pair.
SmallVector<Value> unpack(OpBuilder &b, Location loc, const PoolSpace &ps,
                          Value element) {
  if (!ps.pairs)
    return {toF32(b, loc, element)};
  Type half = b.getIntegerType(ps.bits());
  Value high = arith::ShRUIOp::create(
      b, loc, element,
      arith::ConstantIntOp::create(b, loc, element.getType(), ps.bits()));
  SmallVector<Value> taps;
  for (Value bits : {element, high})
    taps.push_back(toF32(
        b, loc,
        arith::BitcastOp::create(b, loc, ps.element,
                                 arith::TruncIOp::create(b, loc, half, bits))));
  return taps;
}

/// The input element holding `taps` (f32 values of the element type: see
/// unpack).
Value pack(OpBuilder &b, Location loc, const PoolSpace &ps,
           ArrayRef<Value> taps) {
  auto narrow = [&](Value tap) -> Value {
    return ps.element.isF32()
               ? tap
               : arith::TruncFOp::create(b, loc, ps.element, tap);
  };
  if (!ps.pairs)
    return narrow(taps[0]);
  Type half = b.getIntegerType(ps.bits()),
       whole = b.getIntegerType(2 * ps.bits());
  auto widen = [&](Value tap) -> Value {
    return arith::ExtUIOp::create(
        b, loc, whole, arith::BitcastOp::create(b, loc, half, narrow(tap)));
  };
  Value high = arith::ShLIOp::create(
      b, loc, widen(taps[1]),
      arith::ConstantIntOp::create(b, loc, whole, ps.bits()));
  return arith::OrIOp::create(b, loc, widen(taps[0]), high);
}

Value i32Constant(OpBuilder &b, Location loc, int64_t value) {
  return arith::ConstantIntOp::create(b, loc, b.getI32Type(), value);
}

/// What the first-maximum nest records for a NaN at `tap`: -1 - tap, below
/// every tap number, and least for the last NaN.
Value nanCode(OpBuilder &b, Location loc, Value tap) {
  return arith::SubIOp::create(b, loc, i32Constant(b, loc, -1), tap);
}

/// Tap number `first + offset` (the second of a pair is offset 1).
Value nextTap(OpBuilder &b, Location loc, Value first, unsigned offset) {
  if (offset == 0)
    return first;
  return arith::AddIOp::create(b, loc, first, i32Constant(b, loc, offset));
}

/// What the first-maximum search records for `value` at tap number `tap`:
/// the tap if it equals the window's `max`, nanCode if it is a NaN, else
/// the window size (above every tap); the least code over a window is
/// the tap the gradient goes to.
Value firstCode(OpBuilder &b, Location loc, const PoolSpace &ps, Value value,
                Value max, Value tap) {
  Value isMax =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, value, max);
  Value isNan =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNO, value, value);
  Value code = arith::SelectOp::create(b, loc, isMax, tap,
                                       i32Constant(b, loc, ps.windowSize));
  return arith::SelectOp::create(b, loc, isNan, nanCode(b, loc, tap), code);
}

/// `gradient` where the window's least code `first` names tap `tap`
/// (either encoding), else `zero`.
Value routed(OpBuilder &b, Location loc, Value first, Value tap, Value gradient,
             Value zero) {
  Value isFirst = arith::OrIOp::create(
      b, loc,
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, first, tap),
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, first,
                            nanCode(b, loc, tap)));
  return arith::SelectOp::create(b, loc, isFirst, gradient, zero);
}

/// Sets `max` (window-shaped, f32) to the maximum of each window of `input`:
/// MaxOp is arith::MaximumFOp (a NaN wins) or arith::MaxNumFOp (NaNs are
/// skipped).
template <typename MaxOp>
void windowMaxima(KernelBuilder &kb, const PoolSpace &ps, Operand input,
                  Operand max) {
  kb.fill(ps.space, max, -std::numeric_limits<double>::infinity());
  tileInnermostEvenly(kb.nest(
      ps.space, input, max, ps.space.reduction,
      [&](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
        // The taps first: the vectorizer recognizes a reduction by one
        // combining op applied to the accumulator.
        SmallVector<Value> taps = unpack(b, loc, ps, x[0]);
        Value tapsMax = taps[0];
        for (Value tap : ArrayRef(taps).drop_front())
          tapsMax = MaxOp::create(b, loc, tapsMax, tap);
        return {MaxOp::create(b, loc, x[1], tapsMax)};
      }), kb.vectorLanes);
}

/// The gradient in one pass where the window's last dim has 2 taps (pairs)
/// and the window at most kMaxFusedPairs pairs: over the window positions
/// alone, each pair of taps an operand (the input seen as [N*C*O1, K1, O2,
/// ..., Or], a constant along the K's) and an output (dx, seen the same
/// way), the maximum and the first maximal tap kept in registers. The
/// same choice, and the same bits, as the three nests below, which read
/// the input twice and write two window-shaped scratch buffers (the CNN's
/// 64x32x28x28 pool: 1.19 ms a step on one thread of a Zen 4).
constexpr int64_t kMaxFusedPairs = 8;

void fusedMaxPoolBackward(KernelBuilder &kb, const PoolSpace &ps,
                          const Tiling &tiling) {
  MLIRContext *context = kb.builder.getContext();
  size_t rank = tiling.taps.size();
  ArrayRef<int64_t> shape = kb.inputType(1).getShape();
  // Domain [N*C*O1, O2, ..., Or]; the input [N*C*O1, K1, O2, ..., Or].
  SmallVector<int64_t> domain = {shape[0] * shape[1] * tiling.windows[0]};
  SmallVector<int64_t> inputShape = domain;
  for (size_t d = 1; d < rank; ++d) {
    inputShape.append({tiling.taps[d - 1], tiling.windows[d]});
    domain.push_back(tiling.windows[d]);
  }
  unsigned n = domain.size();
  Value grad = kb.view(0, domain);
  Value input = kb.view(1, inputShape, ps.inputElement(kb));
  Value gradInput = kb.view(2, inputShape, ps.inputElement(kb));
  SmallVector<AffineMap> pairMaps;
  forEachTap(ArrayRef(tiling.taps).drop_back(), [&](ArrayRef<int64_t> tap) {
    SmallVector<AffineExpr> read = {affineDim(context, 0)};
    for (size_t d = 1; d < rank; ++d)
      read.append(
          {getAffineConstantExpr(tap[d - 1], context), affineDim(context, d)});
    pairMaps.push_back(mapOf(context, n, read));
  });
  int64_t pairs = pairMaps.size();
  SmallVector<Value> inputs = {grad};
  inputs.append(pairs, input);
  SmallVector<AffineMap> maps = {AffineMap::getMultiDimIdentityMap(n, context)};
  llvm::append_range(maps, pairMaps);
  llvm::append_range(maps, pairMaps);
  // Innermost tiles that divide the row evenly (no masked partial tile):
  // the CNN's two pool gradients took 0.91 against 1.00 ms a step with
  // the default schedule (one thread, Zen 4).
  tileInnermostEvenly(
      kb.nest(
          domain, SmallVector<bool>(n, false), inputs,
          SmallVector<Value>(pairs, gradInput), maps,
          [&](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
            Type f32 = b.getF32Type();
            SmallVector<Value> taps;
            for (Value pair : x.slice(1, pairs))
              llvm::append_range(taps, unpack(b, loc, ps, pair));
            // The maximum with NaNs skipped, then the first tap equal to
            // it, or a NaN's code (windowMaxima and the first-maximum nest
            // below).
            Value max =
                constant(b, loc, f32, -std::numeric_limits<double>::infinity());
            for (Value tap : taps)
              max = arith::MaxNumFOp::create(b, loc, max, tap);
            Value first;
            for (auto [t, value] : llvm::enumerate(taps)) {
              Value code =
                  firstCode(b, loc, ps, value, max, i32Constant(b, loc, t));
              first =
                  first ? arith::MinSIOp::create(b, loc, first, code) : code;
            }
            Value zero = constant(b, loc, f32, 0.0);
            Value gradient =
                arith::AddFOp::create(b, loc, toF32(b, loc, x[0]), zero);
            SmallVector<Value> results;
            for (int64_t p = 0; p < pairs; ++p) {
              SmallVector<Value> pair;
              for (int64_t i = 0; i < 2; ++i)
                pair.push_back(routed(b, loc, first,
                                      i32Constant(b, loc, 2 * p + i), gradient,
                                      zero));
              results.push_back(pack(b, loc, ps, pair));
            }
            return results;
          }),
      kb.vectorLanes);
}

} // namespace

LogicalResult buildMaxPool(KernelBuilder &kb) {
  std::optional<Tiling> tiling =
      exactTiling(kb, kb.inputType(0), kb.outputType(0));
  if (!tiling)
    return buildWindowMaxPool(kb);
  PoolSpace ps = poolSpace(kb.inputType(0).getShape().take_front(2), *tiling,
                           kb.inputType(0).getElementType());
  Operand input{kb.view(0, ps.space.shape(ps.inputId), ps.inputElement(kb)),
                ps.inputId};
  Operand output{kb.output(0, ps.space.shape(ps.windowId)), ps.windowId};
  if (ps.element.isF32()) {
    windowMaxima<arith::MaximumFOp>(kb, ps, input, output);
    return success();
  }
  // bf16, f16: the maxima in f32 (a reduction the vectorizer recognizes
  // has one op on its accumulator, no rounding around it), then stored
  // rounded, which is exact.
  Operand max{kb.scratch(ps.space.shape(ps.windowId), kb.builder.getF32Type()),
              ps.windowId};
  windowMaxima<arith::MaximumFOp>(kb, ps, input, max);
  Space windows(ps.space.shape(ps.windowId));
  unsigned all = windows.addAllBut([](unsigned) { return false; });
  kb.nest(windows, {{max.buffer, all}}, {{output.buffer, all}},
          windows.reduction,
          [](OpBuilder &, Location, ValueRange x) -> SmallVector<Value> {
            return {x[0]};
          });
  return success();
}

LogicalResult buildMaxPoolBackward(KernelBuilder &kb) {
  std::optional<Tiling> tiling =
      exactTiling(kb, kb.inputType(1), kb.inputType(0));
  if (!tiling)
    return buildWindowMaxPoolBackward(kb);
  PoolSpace ps = poolSpace(kb.inputType(1).getShape().take_front(2), *tiling,
                           kb.inputType(1).getElementType());
  if (ps.pairs && ps.windowSize <= 2 * kMaxFusedPairs) {
    fusedMaxPoolBackward(kb, ps, *tiling);
    return success();
  }
  const Space &space = ps.space;
  Type f32 = kb.builder.getF32Type(), i32 = kb.builder.getI32Type();
  Operand grad{kb.view(0, space.shape(ps.windowId)), ps.windowId};
  Operand input{kb.view(1, space.shape(ps.inputId), ps.inputElement(kb)),
                ps.inputId};
  Operand gradInput{kb.view(2, space.shape(ps.inputId), ps.inputElement(kb)),
                    ps.inputId};
  Operand max{kb.scratch(space.shape(ps.windowId), f32), ps.windowId};
  Operand first{kb.scratch(space.shape(ps.windowId), i32), ps.windowId};

  windowMaxima<arith::MaxNumFOp>(kb, ps, input, max);

  // Not found: the window size, above every tap number.
  kb.fill(space, first, double(ps.windowSize));
  tileInnermostEvenly(kb.nest(
      space, {input, max}, first, space.reduction,
      [&](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
        Value first = ps.tap(b, loc);
        Value result;
        for (auto [i, value] : llvm::enumerate(unpack(b, loc, ps, x[0]))) {
          Value code =
              firstCode(b, loc, ps, value, x[1], nextTap(b, loc, first, i));
          result = result ? arith::MinSIOp::create(b, loc, result, code) : code;
        }
        return {arith::MinSIOp::create(b, loc, x[2], result)};
      }), kb.vectorLanes);

  // The default schedule here: nothing reads dx back, so masked tiles
  // cost nothing (and LLVM 22 fails to select the packing of 16k+4-lane
  // vectors).
  SmallVector<bool> parallel(space.domain.size(), false);
  kb.nest(space, {grad, first}, gradInput, parallel,
          [&](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
            Value zero = constant(b, loc, f32, 0.0);
            Value gradient =
                arith::AddFOp::create(b, loc, toF32(b, loc, x[0]), zero);
            Value first = ps.tap(b, loc);
            SmallVector<Value> taps;
            for (unsigned i = 0; i < (ps.pairs ? 2 : 1); ++i) {
              taps.push_back(routed(b, loc, x[1], nextTap(b, loc, first, i),
                                    gradient, zero));
            }
            return {pack(b, loc, ps, taps)};
          });
  return success();
}

} // namespace trainc::conversion
