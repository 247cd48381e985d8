//===- GeneratedKernels.cpp - loop nests for kernel launches --------------===//
//
// Each builder describes its kernel as an iteration space (`Space`): the
// domain, and which domain dimensions index each buffer. Dropping unit
// dimensions and merging dimensions that every buffer walks contiguously
// gives the nests few, long dimensions to vectorize; the kernel function
// then sees each buffer in that collapsed shape (KernelBuilder.h). Semantics
// follow the reference kernels (lib/Runtime/kernels); where those compute
// in double (optimizer updates, leaky_relu's scaling) the nests do too.
// This file: elementwise ops, data movement, input checks, and the table
// of every builder; reductions and softmax, normalizations (layer and batch
// norm), the losses, the optimizer updates, pooling and matrix products
// have files of their own.
//
//===----------------------------------------------------------------------===//
#include "lib/Conversion/GeneratedKernels.h"
#include "lib/Conversion/KernelBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Builders.h"

#include <cmath>
#include <cstdint>
#include <limits>

using namespace mlir;

namespace trainc::conversion {
namespace {

//===----------------------------------------------------------------------===//
// Elementwise ops with numpy broadcasting
//===----------------------------------------------------------------------===//

/// The value of one output element from the input elements.
using ScalarFn = Value (*)(KernelBuilder &, OpBuilder &, Location, ValueRange);

Value select(OpBuilder &b, Location loc, arith::CmpFPredicate predicate,
             Value lhs, Value rhs, Value ifTrue, Value ifFalse) {
  Value condition = arith::CmpFOp::create(b, loc, predicate, lhs, rhs);
  return arith::SelectOp::create(b, loc, condition, ifTrue, ifFalse);
}

template <typename OpTy>
Value unaryOp(KernelBuilder &, OpBuilder &b, Location loc, ValueRange x) {
  return OpTy::create(b, loc, x[0]);
}
template <typename OpTy>
Value binaryOp(KernelBuilder &, OpBuilder &b, Location loc, ValueRange x) {
  return OpTy::create(b, loc, x[0], x[1]);
}
/// add, sub and mul: on floats, or wrapping on integers (the step counter).
template <typename FloatOp, typename IntegerOp>
Value arithmeticOp(KernelBuilder &, OpBuilder &b, Location loc, ValueRange x) {
  if (isa<IntegerType>(x[0].getType()))
    return IntegerOp::create(b, loc, x[0], x[1]);
  return FloatOp::create(b, loc, x[0], x[1]);
}
/// Comparisons of floats (ordered: false with a NaN) or of signed integers.
template <arith::CmpFPredicate predicate, arith::CmpIPredicate integer>
Value compareOp(KernelBuilder &, OpBuilder &b, Location loc, ValueRange x) {
  if (isa<IntegerType>(x[0].getType()))
    return arith::CmpIOp::create(b, loc, integer, x[0], x[1]);
  return arith::CmpFOp::create(b, loc, predicate, x[0], x[1]);
}
Value passThrough(KernelBuilder &, OpBuilder &, Location, ValueRange x) {
  return x[0];
}
Value whereOp(KernelBuilder &, OpBuilder &b, Location loc, ValueRange x) {
  return arith::SelectOp::create(b, loc, x[0], x[1], x[2]);
}

/// Float (as f64) to i64 as the reference truncates: toward zero,
/// saturating at the i64 range, NaN to 0 (fptosi alone is poison there).
Value saturatingToInt64(OpBuilder &b, Location loc, Value wide) {
  using P = arith::CmpFPredicate;
  Type f64 = b.getF64Type(), i64 = b.getI64Type();
  auto integer = [&](int64_t value) {
    return arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(value));
  };
  Value limit = constant(b, loc, f64, 9223372036854775807.0); // 2^63
  Value tooBig = arith::CmpFOp::create(b, loc, P::OGE, wide, limit);
  Value tooSmall = arith::CmpFOp::create(
      b, loc, P::OLE, wide, constant(b, loc, f64, -9223372036854775808.0));
  Value isNan = arith::CmpFOp::create(b, loc, P::UNO, wide, wide);
  Value outside = arith::OrIOp::create(
      b, loc, arith::OrIOp::create(b, loc, tooBig, tooSmall), isNan);
  Value inRange = arith::SelectOp::create(b, loc, outside,
                                          constant(b, loc, f64, 0.0), wide);
  Value result = arith::FPToSIOp::create(b, loc, i64, inRange);
  result = arith::SelectOp::create(b, loc, tooBig, integer(INT64_MAX), result);
  return arith::SelectOp::create(b, loc, tooSmall, integer(INT64_MIN), result);
}

/// graph.cast as the reference converts: floats through double, integers
/// through i64 (a bool is 0 or 1; narrower integers wrap), to a bool by
/// `!= 0`, floats to integers by saturating truncation.
Value castOp(KernelBuilder &kb, OpBuilder &b, Location loc, ValueRange x) {
  Type to = kb.outputType(0).getElementType();
  Value value = x[0];
  Type from = value.getType();
  Type f64 = b.getF64Type(), i64 = b.getI64Type();
  // Between floats directly: a widening is exact, a narrowing rounds once
  // either way (--amp's casts stay in f32 vectors, not f64).
  if (from == to)
    return value;
  // A bool as 0 or 1 of any float type (bf16 and f16 included: --amp's
  // masks), with no conversion.
  if (from.isInteger(1) && isa<FloatType>(to))
    return arith::SelectOp::create(b, loc, value, constant(b, loc, to, 1.0),
                                   constant(b, loc, to, 0.0));
  if (isa<FloatType>(from) && isa<FloatType>(to)) {
    unsigned fromBits = from.getIntOrFloatBitWidth();
    unsigned toBits = to.getIntOrFloatBitWidth();
    if (fromBits == toBits) // bf16 <-> f16, through f32 (exact)
      value = arith::ExtFOp::create(b, loc, b.getF32Type(), value);
    return fromBits < toBits
               ? Value(arith::ExtFOp::create(b, loc, to, value))
               : Value(arith::TruncFOp::create(b, loc, to, value));
  }
  if (isa<FloatType>(from)) {
    Value wide =
        from == f64 ? value : arith::ExtFOp::create(b, loc, f64, value);
    if (to.isInteger(1))
      return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, wide,
                                   constant(b, loc, f64, 0.0));
    if (isa<IntegerType>(to)) {
      Value integer = saturatingToInt64(b, loc, wide);
      return to == i64 ? integer : arith::TruncIOp::create(b, loc, to, integer);
    }
    return to == f64 ? wide : arith::TruncFOp::create(b, loc, to, wide);
  }
  Value wide = value;
  if (from.isInteger(1))
    wide = arith::ExtUIOp::create(b, loc, i64, value);
  else if (from != i64)
    wide = arith::ExtSIOp::create(b, loc, i64, value);
  if (to.isInteger(1))
    return arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::ne, wide,
        arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(0)));
  if (isa<FloatType>(to)) {
    Value real = arith::SIToFPOp::create(b, loc, f64, wide);
    return to == f64 ? real : arith::TruncFOp::create(b, loc, to, real);
  }
  return to == i64 ? wide : arith::TruncIOp::create(b, loc, to, wide);
}
/// graph.not on i1.
Value notOp(KernelBuilder &, OpBuilder &b, Location loc, ValueRange x) {
  Value one = arith::ConstantOp::create(b, loc, b.getBoolAttr(true));
  return arith::XOrIOp::create(b, loc, x[0], one);
}
/// graph.and on i1.
Value andOp(KernelBuilder &, OpBuilder &b, Location loc, ValueRange x) {
  return arith::AndIOp::create(b, loc, x[0], x[1]);
}
/// graph.is_nan: unordered with itself.
Value isNaNOp(KernelBuilder &, OpBuilder &b, Location loc, ValueRange x) {
  return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNO, x[0], x[0]);
}
/// graph.pow in double, as the reference (std::pow), then rounded: libm's
/// pow, since no polynomial approximation covers negative bases.
Value powOp(KernelBuilder &, OpBuilder &b, Location loc, ValueRange x) {
  Type f64 = b.getF64Type();
  Value base = arith::ExtFOp::create(b, loc, f64, x[0]);
  Value exponent = arith::ExtFOp::create(b, loc, f64, x[1]);
  Value power = math::PowFOp::create(b, loc, base, exponent);
  return arith::TruncFOp::create(b, loc, x[0].getType(), power);
}
/// sin and cos in double, rounded once, with libm: the f32 polynomials of
/// --trainc-approximate-math reduce the argument with an f32 pi and miss
/// by 1e-7 near the zeros (relative error of 1e-4 there).
template <typename OpTy>
Value inDouble(KernelBuilder &, OpBuilder &b, Location loc, ValueRange x) {
  Value wide = arith::ExtFOp::create(b, loc, b.getF64Type(), x[0]);
  return arith::TruncFOp::create(b, loc, x[0].getType(),
                                 OpTy::create(b, loc, wide));
}
Value reluOp(KernelBuilder &, OpBuilder &b, Location loc, ValueRange x) {
  // x < 0 rather than max, so that NaN stays NaN (as the reference).
  Value zero = constant(b, loc, x[0].getType(), 0.0);
  return select(b, loc, arith::CmpFPredicate::OLT, x[0], zero, zero, x[0]);
}
Value sigmoidOp(KernelBuilder &, OpBuilder &b, Location loc, ValueRange x) {
  Value one = constant(b, loc, x[0].getType(), 1.0);
  Value exp = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, x[0]));
  return arith::DivFOp::create(b, loc, one,
                               arith::AddFOp::create(b, loc, one, exp));
}
/// max(x, 0) + log1p(e^-|x|): no overflow for large x (as the reference);
/// NaN stays NaN through the log1p.
Value softplusOp(KernelBuilder &, OpBuilder &b, Location loc, ValueRange x) {
  Value zero = constant(b, loc, x[0].getType(), 0.0);
  Value positive =
      select(b, loc, arith::CmpFPredicate::OGT, x[0], zero, x[0], zero);
  Value tail = math::Log1pOp::create(
      b, loc,
      math::ExpOp::create(
          b, loc,
          arith::NegFOp::create(b, loc, math::AbsFOp::create(b, loc, x[0]))));
  return arith::AddFOp::create(b, loc, positive, tail);
}
Value reciprocalOp(KernelBuilder &, OpBuilder &b, Location loc, ValueRange x) {
  return arith::DivFOp::create(b, loc, constant(b, loc, x[0].getType(), 1.0),
                               x[0]);
}
Value leakyReluOp(KernelBuilder &kb, OpBuilder &b, Location loc, ValueRange x) {
  // alpha * x in double, rounded once (as the reference).
  Type f64 = b.getF64Type();
  Value wide = arith::ExtFOp::create(b, loc, f64, x[0]);
  Value scaled = arith::TruncFOp::create(
      b, loc, x[0].getType(),
      arith::MulFOp::create(b, loc, wide,
                            constant(b, loc, f64, kb.real("alpha", 0.01))));
  Value zero = constant(b, loc, x[0].getType(), 0.0);
  return select(b, loc, arith::CmpFPredicate::OGE, x[0], zero, x[0], scaled);
}
Value geluOp(KernelBuilder &kb, OpBuilder &b, Location loc, ValueRange x) {
  Type type = x[0].getType();
  auto c = [&](double value) { return constant(b, loc, type, value); };
  if (kb.flag("tanh_approximation")) {
    // 0.5 x (1 + tanh(u)) = x / (1 + exp(-2u)): no cancellation for x < 0.
    Value cube = arith::MulFOp::create(
        b, loc, x[0], arith::MulFOp::create(b, loc, x[0], x[0]));
    Value sum = arith::AddFOp::create(
        b, loc, x[0], arith::MulFOp::create(b, loc, c(0.044715), cube));
    Value minusTwoU =
        arith::MulFOp::create(b, loc, c(-2.0 * std::sqrt(2.0 / M_PI)), sum);
    Value denominator = arith::AddFOp::create(
        b, loc, c(1.0), math::ExpOp::create(b, loc, minusTwoU));
    return arith::DivFOp::create(b, loc, x[0], denominator);
  }
  Value erf = math::ErfOp::create(
      b, loc, arith::MulFOp::create(b, loc, x[0], c(M_SQRT1_2)));
  Value half = arith::MulFOp::create(b, loc, c(0.5), x[0]);
  return arith::MulFOp::create(b, loc, half,
                               arith::AddFOp::create(b, loc, c(1.0), erf));
}
Value clipOp(KernelBuilder &kb, OpBuilder &b, Location loc, ValueRange x) {
  // Comparisons, so that NaN passes through.
  Value value = x[0];
  Type type = value.getType();
  if (std::optional<double> low = kb.optionalReal("min")) {
    Value bound = constant(b, loc, type, *low);
    value =
        select(b, loc, arith::CmpFPredicate::OLT, value, bound, bound, value);
  }
  if (std::optional<double> high = kb.optionalReal("max")) {
    Value bound = constant(b, loc, type, *high);
    value =
        select(b, loc, arith::CmpFPredicate::OGT, value, bound, bound, value);
  }
  return value;
}

/// One output, inputs broadcast to it (numpy rules, aligned on the right).
LogicalResult buildElementwise(KernelBuilder &kb, ScalarFn fn) {
  ArrayRef<int64_t> shape = kb.outputType(0).getShape();
  int64_t rank = shape.size();
  Space space(shape);
  unsigned numInputs = kb.launch.getInputs().size();
  SmallVector<unsigned> ids;
  for (unsigned i = 0; i < numInputs; ++i) {
    ArrayRef<int64_t> inputShape = kb.inputType(i).getShape();
    int64_t offset = rank - static_cast<int64_t>(inputShape.size());
    if (offset < 0)
      return kb.launch.emitError("input ") << i << " has a higher rank than "
                                           << "the output";
    SmallVector<unsigned> dims;
    for (auto [axis, extent] : llvm::enumerate(inputShape)) {
      if (extent == shape[offset + axis])
        dims.push_back(offset + axis);
      else if (extent != 1)
        return kb.launch.emitError("input ") << i << " does not broadcast "
                                             << "to the output";
    }
    ids.push_back(space.add(dims));
  }
  unsigned outputId = space.addAllBut([](unsigned) { return false; });
  space.dropUnitDims();
  space.collapse();
  SmallVector<Operand> inputs;
  for (unsigned i = 0; i < numInputs; ++i)
    inputs.push_back({kb.input(i, space.shape(ids[i])), ids[i]});
  Operand output{kb.output(0, space.shape(outputId)), outputId};
  kb.nest(space, inputs, output, space.reduction,
          [&](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
            return {fn(kb, b, loc, x.drop_back())};
          });
  return success();
}

/// graph.transpose: output axis a reads input axis perm[a].
/// Elements per side of a strided transpose's tiles: 16 f32 are a cache
/// line.
constexpr int64_t kTransposeTile = 16;

LogicalResult buildTranspose(KernelBuilder &kb) {
  auto perm = kb.launch.getOptions().getAs<DenseI64ArrayAttr>("perm");
  ArrayRef<int64_t> shape = kb.outputType(0).getShape();
  if (!perm || perm.size() != static_cast<int64_t>(shape.size()))
    return kb.launch.emitError("transpose needs a permutation of the rank");
  Space space(shape);
  SmallVector<unsigned> inputDims(shape.size());
  for (auto [axis, source] : llvm::enumerate(perm.asArrayRef()))
    inputDims[source] = axis;
  unsigned inputId = space.add(inputDims);
  unsigned outputId = space.addAllBut([](unsigned) { return false; });
  space.dropUnitDims();
  space.collapse();
  Operand input{kb.input(0, space.shape(inputId)), inputId};
  Operand output{kb.output(0, space.shape(outputId)), outputId};
  loop::NestOp nest =
      kb.nest(space, input, output, space.reduction,
              [](OpBuilder &, Location, ValueRange x) -> SmallVector<Value> {
                return {x[0]};
              });
  // A strided transpose runs in square tiles of the output's innermost
  // dim and the input's, so that both walk whole cache lines.
  loop::ScheduleAttr schedule = nest.getSchedule();
  ArrayRef<unsigned> readDims = space.operands[inputId];
  if (!schedule.getVectorize() && readDims.size() >= 2) {
    SmallVector<int64_t> tile(schedule.getTile());
    unsigned written = space.domain.size() - 1, read = readDims.back();
    tile[written] = std::min<int64_t>(kTransposeTile, space.domain[written]);
    tile[read] = std::min<int64_t>(kTransposeTile, space.domain[read]);
    nest.setScheduleAttr(loop::ScheduleAttr::get(
        kb.builder.getContext(), schedule.getParallel(), tile, false));
  }
  return success();
}

/// runtime.copy, graph.reshape, graph.identity: the bytes, in order.
LogicalResult buildCopy(KernelBuilder &kb) {
  MemRefType type = kb.outputType(0);
  int64_t bytes = type.getNumElements() *
                  std::max<int64_t>(1, type.getElementTypeBitWidth() / 8);
  Space space(ArrayRef<int64_t>{bytes});
  unsigned inputId = space.add({0}), outputId = space.add({0});
  Type byte = kb.builder.getI8Type();
  Operand input{kb.view(0, {bytes}, byte), inputId};
  Operand output{kb.view(1, {bytes}, byte), outputId};
  kb.nest(space, input, output, space.reduction,
          [](OpBuilder &, Location, ValueRange x) -> SmallVector<Value> {
            return {x[0]};
          });
  return success();
}

} // namespace

//===----------------------------------------------------------------------===//
// Input checks
//===----------------------------------------------------------------------===//

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

Value flatPosition(OpBuilder &b, Location loc, ArrayRef<int64_t> domain) {
  Value position = arith::ConstantIndexOp::create(b, loc, 0);
  for (auto [dim, extent] : llvm::enumerate(domain)) {
    Value scaled = arith::MulIOp::create(
        b, loc, position, arith::ConstantIndexOp::create(b, loc, extent));
    position = arith::AddIOp::create(b, loc, scaled,
                                     loop::IndexOp::create(b, loc, dim));
  }
  return arith::IndexCastOp::create(b, loc, b.getI64Type(), position);
}

void checkFirstInvalid(
    KernelBuilder &kb, Value values, StringRef message,
    llvm::function_ref<Value(OpBuilder &, Location, Value)> invalid) {
  auto type = cast<MemRefType>(values.getType());
  Space space(type.getShape());
  space.reduction.assign(space.domain.size(), true);
  Operand all{values, space.addAllBut([](unsigned) { return false; })};
  unsigned scalarId = space.add({});
  Type i64 = kb.builder.getI64Type();
  auto wide = [&](OpBuilder &b, Location loc, Value value) -> Value {
    if (value.getType() == i64)
      return value;
    return arith::ExtSIOp::create(b, loc, i64, value);
  };
  int64_t none = type.getNumElements();
  ArrayRef<int64_t> domain = space.domain;
  Operand first{kb.scratch({}, i64), scalarId};
  Operand status{kb.checkStatus(message), scalarId};
  kb.fill(space, first, double(none));
  kb.nest(space, all, first, space.reduction,
          [&](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
            Value position = arith::SelectOp::create(
                b, loc, invalid(b, loc, wide(b, loc, x[0])),
                flatPosition(b, loc, domain),
                arith::ConstantIntOp::create(b, loc, none, 64));
            return {arith::MinSIOp::create(b, loc, x[1], position)};
          });
  kb.fill(space, status, 0.0);
  kb.nest(space, {all, first}, status, space.reduction,
          [&](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
            Value hit =
                arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                      flatPosition(b, loc, domain), x[1]);
            Value term = arith::SelectOp::create(
                b, loc, hit, wide(b, loc, x[0]),
                arith::ConstantIntOp::create(b, loc, 0, 64));
            return {arith::AddIOp::create(b, loc, x[2], term)};
          });
}

//===----------------------------------------------------------------------===//
// Affine maps and padded copies
//===----------------------------------------------------------------------===//

AffineMap offsetIdentity(MLIRContext *context, ArrayRef<int64_t> offsets) {
  SmallVector<AffineExpr> results;
  for (auto [d, offset] : llvm::enumerate(offsets))
    results.push_back(affineDim(context, d) + offset);
  return mapOf(context, offsets.size(), results);
}

void zeroFill(KernelBuilder &kb, Value buffer) {
  Space space(cast<MemRefType>(buffer.getType()).getShape());
  kb.fill(space, {buffer, space.addAllBut([](unsigned) { return false; })},
          0.0);
}

Value placedCopy(KernelBuilder &kb, Value source, ArrayRef<int64_t> shape,
                 ArrayRef<int64_t> offsets, ArrayRef<int64_t> steps,
                 double fill) {
  MLIRContext *context = kb.builder.getContext();
  auto type = cast<MemRefType>(source.getType());
  if (type.getShape() == shape &&
      llvm::all_of(offsets, [](int64_t offset) { return offset == 0; }) &&
      steps.empty())
    return source;
  Value target = kb.scratch(shape, type.getElementType());
  Space whole(shape);
  kb.fill(whole, {target, whole.addAllBut([](unsigned) { return false; })},
          fill);
  ArrayRef<int64_t> extents = type.getShape();
  SmallVector<AffineExpr> placed;
  for (auto [d, offset] : llvm::enumerate(offsets))
    placed.push_back(affineDim(context, d) * (steps.empty() ? 1 : steps[d]) +
                     offset);
  SmallVector<int64_t> zeros(extents.size(), 0);
  kb.nest(
      extents, SmallVector<bool>(extents.size(), false), {source}, {target},
      {offsetIdentity(context, zeros), mapOf(context, extents.size(), placed)},
      [](OpBuilder &, Location, ValueRange x) -> SmallVector<Value> {
        return {x[0]};
      });
  return target;
}

namespace {

//===----------------------------------------------------------------------===//
// The table
//===----------------------------------------------------------------------===//

using Builder = std::function<LogicalResult(KernelBuilder &)>;

const llvm::StringMap<Builder> &builders() {
  static const llvm::StringMap<Builder> table = [] {
    llvm::StringMap<Builder> t;
    auto elementwise = [&](StringRef name, ScalarFn fn) {
      t[name] = [fn](KernelBuilder &kb) { return buildElementwise(kb, fn); };
    };
    using P = arith::CmpFPredicate;
    using I = arith::CmpIPredicate;
    elementwise("graph.add", arithmeticOp<arith::AddFOp, arith::AddIOp>);
    elementwise("graph.sub", arithmeticOp<arith::SubFOp, arith::SubIOp>);
    elementwise("graph.mul", arithmeticOp<arith::MulFOp, arith::MulIOp>);
    elementwise("graph.div", binaryOp<arith::DivFOp>);
    elementwise("graph.equal", compareOp<P::OEQ, I::eq>);
    elementwise("graph.less", compareOp<P::OLT, I::slt>);
    elementwise("graph.greater", compareOp<P::OGT, I::sgt>);
    elementwise("graph.less_equal", compareOp<P::OLE, I::sle>);
    elementwise("graph.greater_equal", compareOp<P::OGE, I::sge>);
    elementwise("graph.where", whereOp);
    elementwise("graph.cast", castOp);
    elementwise("graph.expand", passThrough);
    elementwise("graph.neg", unaryOp<arith::NegFOp>);
    elementwise("graph.abs", unaryOp<math::AbsFOp>);
    elementwise("graph.sqrt", unaryOp<math::SqrtOp>);
    elementwise("graph.exp", unaryOp<math::ExpOp>);
    elementwise("graph.log", unaryOp<math::LogOp>);
    elementwise("graph.tanh", unaryOp<math::TanhOp>);
    elementwise("graph.erf", unaryOp<math::ErfOp>);
    elementwise("graph.sin", inDouble<math::SinOp>);
    elementwise("graph.cos", inDouble<math::CosOp>);
    elementwise("graph.softplus", softplusOp);
    elementwise("graph.sigmoid", sigmoidOp);
    elementwise("graph.relu", reluOp);
    elementwise("graph.reciprocal", reciprocalOp);
    elementwise("graph.leaky_relu", leakyReluOp);
    elementwise("graph.gelu", geluOp);
    elementwise("graph.clip", clipOp);
    elementwise("graph.not", notOp);
    elementwise("graph.and", andOp);
    elementwise("graph.is_nan", isNaNOp);
    elementwise("graph.pow", powOp);
    t["graph.transpose"] = buildTranspose;
    for (StringRef name : {"runtime.copy", "graph.reshape", "graph.identity"})
      t[name] = buildCopy;
    for (auto [name, kind] : {std::pair("graph.reduce_sum", Reduce::Sum),
                              std::pair("graph.reduce_mean", Reduce::Mean),
                              std::pair("graph.reduce_max", Reduce::Max)})
      t[name] = [kind = kind](KernelBuilder &kb) {
        return buildReduce(kb, kind);
      };
    for (auto [name, logarithm] : {std::pair("graph.softmax", false),
                                   std::pair("graph.log_softmax", true)})
      t[name] = [logarithm = logarithm](KernelBuilder &kb) {
        return buildSoftmax(kb, logarithm);
      };
    t["graph.argmax"] = buildArgMax;
    t["graph.layer_norm"] = buildLayerNorm;
    t["graph.layer_norm_backward"] = buildLayerNormBackward;
    t["graph.batch_norm_training"] = buildBatchNormTraining;
    t["graph.batch_norm_inference"] = buildBatchNormInference;
    t["graph.batch_norm_training_backward"] = buildBatchNormTrainingBackward;
    t["graph.sgd_update"] = buildSgd;
    t["graph.adam_update"] = buildAdam;
    t["graph.adagrad_update"] = buildAdagrad;
    for (auto [name, isSoftmax] :
         {std::pair("graph.softmax_cross_entropy", true),
          std::pair("graph.nll_loss", false)}) {
      bool softmax = isSoftmax; // a structured binding cannot be captured
      t[name] = [=](KernelBuilder &kb) { return buildClassLoss(kb, softmax); };
      t[(Twine(name) + "_backward").str()] = [=](KernelBuilder &kb) {
        return buildClassLossBackward(kb, softmax);
      };
    }
    for (auto [name, kind] : {std::pair("graph.mse_loss", PointwiseLoss::Mse),
                              std::pair("graph.l1_loss", PointwiseLoss::L1),
                              std::pair("graph.bce_with_logits_loss",
                                        PointwiseLoss::BceWithLogits)})
      t[name] = [kind = kind](KernelBuilder &kb) {
        return buildPointwiseLoss(kb, kind);
      };
    t["graph.max_pool"] = buildMaxPool;
    t["graph.max_pool_backward"] = buildMaxPoolBackward;
    t["graph.global_avg_pool"] = buildGlobalAvgPool;
    t["graph.matmul"] = buildMatmul;
    t["graph.gemm"] = buildGemm;
    t["graph.slice"] = buildSlice;
    t["graph.slice_backward"] = buildSliceBackward;
    t["graph.concat"] = buildConcat;
    t["graph.gather"] = buildGather;
    t["graph.random_mask"] = buildRandomMask;
    t["graph.gather_backward"] = buildGatherBackward;
    t["graph.gather_elements"] = buildGatherElements;
    t["graph.gather_elements_backward"] = buildGatherElementsBackward;
    t["graph.avg_pool"] = buildAvgPool;
    t["graph.avg_pool_backward"] = buildAvgPoolBackward;
    t["graph.conv"] = buildConv;
    t["graph.conv_matrix"] = buildConvMatrix;
    t["graph.conv_matrix_backward"] = buildConvMatrixBackward;
    t["graph.conv_backward_input"] = buildConvBackwardInput;
    t["graph.conv_backward_weight"] = buildConvBackwardWeight;
    return t;
  }();
  return table;
}

} // namespace

bool hasGeneratedKernel(StringRef kernel) { return builders().count(kernel); }

SmallVector<StringRef> generatedKernels() {
  SmallVector<StringRef> names;
  for (const auto &entry : builders())
    names.push_back(entry.first());
  llvm::sort(names);
  return names;
}

LogicalResult buildGeneratedKernel(kernel::LaunchOp launch,
                                   func::FuncOp function, int64_t vectorLanes) {
  auto it = builders().find(launch.getKernel());
  if (it == builders().end())
    return launch.emitError("the generated backend has no kernel for ")
           << launch.getKernel();
  KernelBuilder kb(launch, function, vectorLanes);
  if (failed(it->second(kb)))
    return failure();
  function.setType(
      FunctionType::get(function.getContext(),
                        function.getBody().front().getArgumentTypes(), {}));
  return success();
}

} // namespace trainc::conversion
