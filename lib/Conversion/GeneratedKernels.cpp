//===- GeneratedKernels.cpp - loop nests for kernel launches --------------===//
//
// Each builder describes its kernel as an iteration space (`Space`): the
// domain, and which domain dimensions index each buffer. Dropping unit
// dimensions and merging dimensions that every buffer walks contiguously
// gives the nests few, long dimensions to vectorize; the kernel function
// then sees each buffer in that collapsed shape. Semantics follow the
// reference kernels (lib/Runtime/kernels); where those compute in double
// (optimizer updates, leaky_relu's scaling) the nests do too.
//
//===----------------------------------------------------------------------===//
#include "lib/Conversion/GeneratedKernels.h"

#include "dialects/loop/Schedule.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Builders.h"

#include <cmath>
#include <limits>

using namespace mlir;

namespace trainc::conversion {
namespace {

//===----------------------------------------------------------------------===//
// Iteration spaces
//===----------------------------------------------------------------------===//

/// A domain, and for each buffer the domain dimensions along its axes.
struct Space {
  SmallVector<int64_t> domain;
  SmallVector<bool> reduction;
  SmallVector<SmallVector<unsigned>> operands;

  explicit Space(ArrayRef<int64_t> extents)
      : domain(extents), reduction(extents.size(), false) {}

  unsigned add(SmallVector<unsigned> dims) {
    operands.push_back(std::move(dims));
    return operands.size() - 1;
  }
  /// An operand indexed by every dimension but `excluded`.
  unsigned addAllBut(llvm::function_ref<bool(unsigned)> excluded) {
    SmallVector<unsigned> dims;
    for (unsigned dim = 0; dim < domain.size(); ++dim)
      if (!excluded(dim))
        dims.push_back(dim);
    return add(dims);
  }

  /// Dimensions of extent 1 address nothing: drop them.
  void dropUnitDims() {
    for (int dim = static_cast<int>(domain.size()) - 1; dim >= 0; --dim)
      if (domain[dim] == 1)
        removeDim(dim);
  }

  /// Merges dimensions d and d+1 wherever every buffer uses both,
  /// adjacently, or neither, and both are of the same kind.
  void collapse() {
    for (int dim = static_cast<int>(domain.size()) - 2; dim >= 0; --dim) {
      if (reduction[dim] != reduction[dim + 1])
        continue;
      bool mergeable = llvm::all_of(operands, [&](ArrayRef<unsigned> dims) {
        const unsigned *outer = llvm::find(dims, unsigned(dim));
        const unsigned *inner = llvm::find(dims, unsigned(dim + 1));
        bool hasOuter = outer != dims.end(), hasInner = inner != dims.end();
        return hasOuter == hasInner && (!hasOuter || inner == outer + 1);
      });
      if (!mergeable)
        continue;
      domain[dim] *= domain[dim + 1];
      removeDim(dim + 1);
    }
  }

  SmallVector<int64_t> shape(unsigned operand) const {
    return llvm::map_to_vector(operands[operand],
                               [&](unsigned dim) { return domain[dim]; });
  }

  AffineMap map(unsigned operand, MLIRContext *context) const {
    SmallVector<AffineExpr> results;
    for (unsigned dim : operands[operand])
      results.push_back(getAffineDimExpr(dim, context));
    return AffineMap::get(domain.size(), 0, results, context);
  }

private:
  void removeDim(unsigned removed) {
    domain.erase(domain.begin() + removed);
    reduction.erase(reduction.begin() + removed);
    for (SmallVector<unsigned> &dims : operands) {
      llvm::erase(dims, removed);
      for (unsigned &dim : dims)
        if (dim > removed)
          --dim;
    }
  }
};

//===----------------------------------------------------------------------===//
// Writing a kernel
//===----------------------------------------------------------------------===//

using Body = llvm::function_ref<SmallVector<Value>(OpBuilder &, Location,
                                                   ValueRange)>;

/// A buffer of the kernel function and its operand number in a Space.
struct Operand {
  Value buffer;
  unsigned id;
};

class KernelBuilder {
public:
  KernelBuilder(kernel::LaunchOp launch, func::FuncOp function)
      : launch(launch), function(function),
        builder(function.getBody().front().getTerminator()),
        loc(launch.getLoc()) {}

  kernel::LaunchOp launch;
  func::FuncOp function;
  OpBuilder builder;
  Location loc;

  MemRefType inputType(unsigned i) {
    return cast<MemRefType>(launch.getInputs()[i].getType());
  }
  MemRefType outputType(unsigned i) {
    return cast<MemRefType>(launch.getOutputs()[i].getType());
  }
  double real(StringRef name, double defaultValue) {
    auto attr = launch.getOptions().getAs<FloatAttr>(name);
    return attr ? attr.getValueAsDouble() : defaultValue;
  }
  std::optional<double> optionalReal(StringRef name) {
    if (auto attr = launch.getOptions().getAs<FloatAttr>(name))
      return attr.getValueAsDouble();
    return std::nullopt;
  }
  bool flag(StringRef name) {
    auto attr = launch.getOptions().getAs<BoolAttr>(name);
    return attr && attr.getValue();
  }

  /// Launch operand `index` (inputs, then outputs) seen with `shape`.
  Value view(unsigned index, ArrayRef<int64_t> shape, Type element = {}) {
    BlockArgument argument = function.getArgument(index);
    auto type = cast<MemRefType>(argument.getType());
    argument.setType(
        MemRefType::get(shape, element ? element : type.getElementType()));
    return argument;
  }
  Value input(unsigned i, ArrayRef<int64_t> shape) { return view(i, shape); }
  Value output(unsigned i, ArrayRef<int64_t> shape) {
    return view(launch.getInputs().size() + i, shape);
  }
  /// A new buffer that only this kernel uses.
  Value scratch(ArrayRef<int64_t> shape, Type element) {
    return function.getBody().front().addArgument(MemRefType::get(shape, element),
                                                  loc);
  }

  /// Appends a loop.nest over `space` with the default schedule.
  void nest(const Space &space, ArrayRef<Operand> inputs,
            ArrayRef<Operand> outputs, ArrayRef<bool> reduction, Body body) {
    MLIRContext *context = builder.getContext();
    SmallVector<AffineMap> maps;
    SmallVector<Value> inputBuffers, outputBuffers;
    SmallVector<Type> elements;
    for (const Operand &operand : inputs) {
      maps.push_back(space.map(operand.id, context));
      inputBuffers.push_back(operand.buffer);
    }
    for (const Operand &operand : outputs) {
      maps.push_back(space.map(operand.id, context));
      outputBuffers.push_back(operand.buffer);
    }
    for (Value buffer : llvm::concat<Value>(inputBuffers, outputBuffers))
      elements.push_back(cast<MemRefType>(buffer.getType()).getElementType());
    SmallVector<Attribute> iterators;
    for (bool reduces : reduction)
      iterators.push_back(
          builder.getStringAttr(reduces ? "reduction" : "parallel"));
    loop::ScheduleAttr schedule = loop::defaultSchedule(
        context, space.domain, reduction, maps, outputs.size());
    auto nestOp = loop::NestOp::create(
        builder, loc, inputBuffers, outputBuffers,
        builder.getDenseI64ArrayAttr(space.domain),
        builder.getAffineMapArrayAttr(maps), builder.getArrayAttr(iterators),
        schedule);
    Block *block = builder.createBlock(&nestOp.getBody());
    for (Type element : elements)
      block->addArgument(element, loc);
    OpBuilder nested = OpBuilder::atBlockBegin(block);
    SmallVector<Value> results = body(nested, loc, block->getArguments());
    loop::YieldOp::create(nested, loc, results);
    builder.setInsertionPointAfter(nestOp);
  }

  /// Sets every element of `buffer` (operand `id` of `space`) to `value`.
  void fill(const Space &space, Operand operand, double value) {
    Space own(space.shape(operand.id));
    unsigned id = own.addAllBut([](unsigned) { return false; });
    Type element = cast<MemRefType>(operand.buffer.getType()).getElementType();
    nest(own, {}, {{operand.buffer, id}}, own.reduction,
         [&](OpBuilder &b, Location loc, ValueRange) -> SmallVector<Value> {
           return {arith::ConstantOp::create(
               b, loc, b.getFloatAttr(element, value))};
         });
  }
};

Value constant(OpBuilder &b, Location loc, Type type, double value) {
  return arith::ConstantOp::create(b, loc, b.getFloatAttr(type, value));
}

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
template <arith::CmpFPredicate predicate>
Value compareOp(KernelBuilder &, OpBuilder &b, Location loc, ValueRange x) {
  return arith::CmpFOp::create(b, loc, predicate, x[0], x[1]);
}
Value passThrough(KernelBuilder &, OpBuilder &, Location, ValueRange x) {
  return x[0];
}
Value whereOp(KernelBuilder &, OpBuilder &b, Location loc, ValueRange x) {
  return arith::SelectOp::create(b, loc, x[0], x[1], x[2]);
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
    value = select(b, loc, arith::CmpFPredicate::OLT, value, bound, bound, value);
  }
  if (std::optional<double> high = kb.optionalReal("max")) {
    Value bound = constant(b, loc, type, *high);
    value = select(b, loc, arith::CmpFPredicate::OGT, value, bound, bound, value);
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
  kb.nest(space, input, output, space.reduction,
          [](OpBuilder &, Location, ValueRange x) -> SmallVector<Value> {
            return {x[0]};
          });
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

//===----------------------------------------------------------------------===//
// Reductions and softmax
//===----------------------------------------------------------------------===//

enum class Reduce { Sum, Mean, Max };

Value combine(Reduce kind, OpBuilder &b, Location loc, Value accumulator,
              Value x) {
  if (kind == Reduce::Max)
    return arith::MaximumFOp::create(b, loc, accumulator, x);
  return arith::AddFOp::create(b, loc, accumulator, x);
}

LogicalResult buildReduce(KernelBuilder &kb, Reduce kind) {
  auto axes = kb.launch.getOptions().getAs<DenseI64ArrayAttr>("axes");
  if (!axes)
    return kb.launch.emitError("a reduction needs its axes");
  ArrayRef<int64_t> shape = kb.inputType(0).getShape();
  Space space(shape);
  int64_t count = 1;
  for (int64_t axis : axes.asArrayRef()) {
    space.reduction[axis] = true;
    count *= shape[axis];
  }
  unsigned inputId = space.addAllBut([](unsigned) { return false; });
  unsigned outputId =
      space.addAllBut([&](unsigned dim) { return space.reduction[dim]; });
  space.dropUnitDims();
  space.collapse();
  Operand input{kb.input(0, space.shape(inputId)), inputId};
  Operand output{kb.output(0, space.shape(outputId)), outputId};
  kb.fill(space, output, kind == Reduce::Max
                             ? -std::numeric_limits<double>::infinity()
                             : 0.0);
  kb.nest(space, input, output, space.reduction,
          [&](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
            return {combine(kind, b, loc, x[1], x[0])};
          });
  if (kind == Reduce::Mean) {
    Space own(space.shape(outputId));
    unsigned id = own.addAllBut([](unsigned) { return false; });
    kb.nest(own, {}, {{output.buffer, id}}, own.reduction,
            [&](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
              Value n = constant(b, loc, x[0].getType(), double(count));
              return {arith::DivFOp::create(b, loc, x[0], n)};
            });
  }
  return success();
}

/// softmax / log_softmax along `axis`, with the row maxima and sums of
/// exponentials in scratch buffers.
LogicalResult buildSoftmax(KernelBuilder &kb, bool logarithm) {
  auto axisAttr = kb.launch.getOptions().getAs<IntegerAttr>("axis");
  ArrayRef<int64_t> shape = kb.inputType(0).getShape();
  if (!axisAttr || axisAttr.getInt() < 0 ||
      axisAttr.getInt() >= static_cast<int64_t>(shape.size()))
    return kb.launch.emitError("softmax needs an axis of its input");
  Space space(shape);
  space.reduction[axisAttr.getInt()] = true;
  unsigned inputId = space.addAllBut([](unsigned) { return false; });
  unsigned outputId = space.addAllBut([](unsigned) { return false; });
  unsigned rowId =
      space.addAllBut([&](unsigned dim) { return space.reduction[dim]; });
  space.dropUnitDims();
  space.collapse();
  Type element = kb.inputType(0).getElementType();
  Operand input{kb.input(0, space.shape(inputId)), inputId};
  Operand output{kb.output(0, space.shape(outputId)), outputId};
  Operand max{kb.scratch(space.shape(rowId), element), rowId};
  Operand sum{kb.scratch(space.shape(rowId), element), rowId};
  SmallVector<bool> parallel(space.domain.size(), false);

  kb.fill(space, max, -std::numeric_limits<double>::infinity());
  kb.nest(space, input, max, space.reduction,
          [](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
            return {arith::MaximumFOp::create(b, loc, x[1], x[0])};
          });
  kb.fill(space, sum, 0.0);
  kb.nest(space, {input, max}, sum, space.reduction,
          [](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
            Value shifted = arith::SubFOp::create(b, loc, x[0], x[1]);
            Value exp = math::ExpOp::create(b, loc, shifted);
            return {arith::AddFOp::create(b, loc, x[2], exp)};
          });
  kb.nest(space, {input, max, sum}, output, parallel,
          [&](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
            Value shifted = arith::SubFOp::create(b, loc, x[0], x[1]);
            if (logarithm)
              return {arith::SubFOp::create(b, loc, shifted,
                                            math::LogOp::create(b, loc, x[2]))};
            return {arith::DivFOp::create(
                b, loc, math::ExpOp::create(b, loc, shifted), x[2])};
          });
  return success();
}

/// The iteration space of a layer norm over dims [axis, rank) of `shape`:
/// reductions over the normalized dims; per-row statistics index the rest.
struct LayerNormSpace {
  Space space;
  unsigned tensorId, normalizedId, rowId;
  int64_t count = 1; ///< elements per row
  SmallVector<bool> noReduction, overRows;

  LayerNormSpace(ArrayRef<int64_t> shape, int64_t axis) : space(shape) {
    for (int64_t dim = axis; dim < static_cast<int64_t>(shape.size()); ++dim) {
      space.reduction[dim] = true;
      count *= shape[dim];
    }
    tensorId = space.addAllBut([](unsigned) { return false; });
    normalizedId =
        space.addAllBut([&](unsigned dim) { return !space.reduction[dim]; });
    rowId = space.addAllBut([&](unsigned dim) { return space.reduction[dim]; });
    space.dropUnitDims();
    space.collapse();
    noReduction.assign(space.domain.size(), false);
    for (bool normalized : space.reduction)
      overRows.push_back(!normalized);
  }
};

/// The space of a layer norm launch whose data is input operand `input`;
/// nullopt (after an error) if its axis or epsilon is missing.
std::optional<LayerNormSpace> layerNormSpace(KernelBuilder &kb,
                                             unsigned input, double &epsilon) {
  auto axis = kb.launch.getOptions().getAs<IntegerAttr>("axis");
  auto epsilonAttr = kb.launch.getOptions().getAs<FloatAttr>("epsilon");
  MemRefType type = kb.inputType(input);
  if (!axis || !epsilonAttr || axis.getInt() < 0 ||
      axis.getInt() >= type.getRank()) {
    kb.launch.emitError("a layer norm needs an axis of its input and an "
                        "epsilon");
    return std::nullopt;
  }
  epsilon = epsilonAttr.getValueAsDouble();
  return LayerNormSpace(type.getShape(), axis.getInt());
}

/// Row means and inverse standard deviations of `input` into two new
/// scratch buffers.
std::pair<Operand, Operand> layerNormStatistics(KernelBuilder &kb,
                                                const LayerNormSpace &ln,
                                                Operand input, double epsilon) {
  const Space &space = ln.space;
  Type element = cast<MemRefType>(input.buffer.getType()).getElementType();
  Operand mean{kb.scratch(space.shape(ln.rowId), element), ln.rowId};
  Operand inverseStd{kb.scratch(space.shape(ln.rowId), element), ln.rowId};
  auto c = [&](OpBuilder &b, Location loc, double value) {
    return constant(b, loc, element, value);
  };
  auto perRow = [&](Operand stat, auto body) {
    Space own(space.shape(ln.rowId));
    unsigned id = own.addAllBut([](unsigned) { return false; });
    kb.nest(own, {}, {{stat.buffer, id}}, own.reduction, body);
  };
  kb.fill(space, mean, 0.0);
  kb.nest(space, input, mean, space.reduction,
          [](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
            return {arith::AddFOp::create(b, loc, x[1], x[0])};
          });
  perRow(mean, [&](OpBuilder &b, Location loc,
                   ValueRange x) -> SmallVector<Value> {
    return {arith::DivFOp::create(b, loc, x[0], c(b, loc, double(ln.count)))};
  });
  kb.fill(space, inverseStd, 0.0);
  kb.nest(space, {input, mean}, inverseStd, space.reduction,
          [](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
            Value centered = arith::SubFOp::create(b, loc, x[0], x[1]);
            Value square = arith::MulFOp::create(b, loc, centered, centered);
            return {arith::AddFOp::create(b, loc, x[2], square)};
          });
  perRow(inverseStd, [&](OpBuilder &b, Location loc,
                         ValueRange x) -> SmallVector<Value> {
    Value variance =
        arith::DivFOp::create(b, loc, x[0], c(b, loc, double(ln.count)));
    Value shifted =
        arith::AddFOp::create(b, loc, variance, c(b, loc, epsilon));
    return {arith::DivFOp::create(b, loc, c(b, loc, 1.0),
                                  math::SqrtOp::create(b, loc, shifted))};
  });
  return {mean, inverseStd};
}

/// (x - mean) * inverseStd from the elements of x, mean, inverseStd.
Value normalize(OpBuilder &b, Location loc, Value x, Value mean,
                Value inverseStd) {
  return arith::MulFOp::create(b, loc, arith::SubFOp::create(b, loc, x, mean),
                               inverseStd);
}

/// graph.layer_norm: the statistics, then one normalizing pass.
LogicalResult buildLayerNorm(KernelBuilder &kb) {
  double epsilon;
  std::optional<LayerNormSpace> ln = layerNormSpace(kb, 0, epsilon);
  if (!ln)
    return failure();
  const Space &space = ln->space;
  Operand input{kb.input(0, space.shape(ln->tensorId)), ln->tensorId};
  Operand scale{kb.input(1, space.shape(ln->normalizedId)), ln->normalizedId};
  bool hasBias = kb.launch.getInputs().size() == 3;
  SmallVector<Operand> inputs = {input};
  auto [mean, inverseStd] =
      layerNormStatistics(kb, *ln, input, epsilon);
  inputs.append({mean, inverseStd, scale});
  if (hasBias)
    inputs.push_back({kb.input(2, space.shape(ln->normalizedId)), ln->normalizedId});
  Operand output{kb.output(0, space.shape(ln->tensorId)), ln->tensorId};
  kb.nest(space, inputs, output, ln->noReduction,
          [&](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
            Value y = arith::MulFOp::create(
                b, loc, normalize(b, loc, x[0], x[1], x[2]), x[3]);
            if (hasBias)
              y = arith::AddFOp::create(b, loc, y, x[4]);
            return {y};
          });
  return success();
}

/// graph.layer_norm_backward(dy, x, scale) -> (dx, dscale, dbias): the
/// statistics again, the row sums of dy*scale and of dy*scale*normalized,
/// the input gradient, then the column sums over rows for scale and bias.
LogicalResult buildLayerNormBackward(KernelBuilder &kb) {
  double epsilon;
  std::optional<LayerNormSpace> ln = layerNormSpace(kb, 1, epsilon);
  if (!ln)
    return failure();
  const Space &space = ln->space;
  Type element = kb.inputType(1).getElementType();
  Operand dy{kb.input(0, space.shape(ln->tensorId)), ln->tensorId};
  Operand input{kb.input(1, space.shape(ln->tensorId)), ln->tensorId};
  Operand scale{kb.input(2, space.shape(ln->normalizedId)), ln->normalizedId};
  Operand dx{kb.output(0, space.shape(ln->tensorId)), ln->tensorId};
  Operand dscale{kb.output(1, space.shape(ln->normalizedId)), ln->normalizedId};
  Operand dbias{kb.output(2, space.shape(ln->normalizedId)), ln->normalizedId};
  auto [mean, inverseStd] =
      layerNormStatistics(kb, *ln, input, epsilon);
  Operand sumGrad{kb.scratch(space.shape(ln->rowId), element), ln->rowId};
  Operand sumGradNormalized{kb.scratch(space.shape(ln->rowId), element),
                            ln->rowId};
  double count = double(ln->count);

  kb.fill(space, sumGrad, 0.0);
  kb.fill(space, sumGradNormalized, 0.0);
  kb.nest(space, {dy, input, scale, mean, inverseStd},
          {sumGrad, sumGradNormalized}, space.reduction,
          [](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
            Value g = arith::MulFOp::create(b, loc, x[0], x[2]);
            Value n = normalize(b, loc, x[1], x[3], x[4]);
            return {arith::AddFOp::create(b, loc, x[5], g),
                    arith::AddFOp::create(
                        b, loc, x[6], arith::MulFOp::create(b, loc, g, n))};
          });
  kb.nest(space, {dy, input, scale, mean, inverseStd, sumGrad, sumGradNormalized},
          dx, ln->noReduction,
          [&](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
            Value g = arith::MulFOp::create(b, loc, x[0], x[2]);
            Value n = normalize(b, loc, x[1], x[3], x[4]);
            Value size = constant(b, loc, g.getType(), count);
            Value inner = arith::SubFOp::create(
                b, loc,
                arith::SubFOp::create(b, loc,
                                      arith::MulFOp::create(b, loc, size, g),
                                      x[5]),
                arith::MulFOp::create(b, loc, n, x[6]));
            Value factor = arith::DivFOp::create(b, loc, x[4], size);
            return {arith::MulFOp::create(b, loc, factor, inner)};
          });
  kb.fill(space, dscale, 0.0);
  kb.fill(space, dbias, 0.0);
  kb.nest(space, {dy, input, mean, inverseStd}, {dscale, dbias}, ln->overRows,
          [](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
            Value n = normalize(b, loc, x[1], x[2], x[3]);
            return {arith::AddFOp::create(b, loc, x[4],
                                          arith::MulFOp::create(b, loc, x[0], n)),
                    arith::AddFOp::create(b, loc, x[5], x[0])};
          });
  return success();
}

//===----------------------------------------------------------------------===//
// Optimizer updates
//===----------------------------------------------------------------------===//

/// graph.sgd_update(param, grad, lr, step[, buffer]) -> (param'[, buffer']),
/// computed in double like the reference: bit-identical results.
LogicalResult buildSgd(KernelBuilder &kb) {
  bool hasBuffer = kb.launch.getInputs().size() == 5;
  int64_t count = kb.inputType(0).getNumElements();
  Space space(ArrayRef<int64_t>{count});
  unsigned tensor = space.add({0}), scalar = space.add({});
  SmallVector<Operand> inputs = {{kb.input(0, {count}), tensor},
                                 {kb.input(1, {count}), tensor},
                                 {kb.input(2, {}), scalar},
                                 {kb.input(3, {}), scalar}};
  SmallVector<Operand> outputs = {{kb.output(0, {count}), tensor}};
  if (hasBuffer) {
    inputs.push_back({kb.input(4, {count}), tensor});
    outputs.push_back({kb.output(1, {count}), tensor});
  }
  double momentum = kb.real("momentum", 0.0);
  double dampening = kb.real("dampening", 0.0);
  double weightDecay = kb.real("weight_decay", 0.0);
  bool nesterov = kb.flag("nesterov");
  kb.nest(space, inputs, outputs, space.reduction,
          [&](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
            Type f64 = b.getF64Type();
            Type element = x[0].getType();
            auto c = [&](double value) { return constant(b, loc, f64, value); };
            auto wide = [&](Value v) -> Value {
              return arith::ExtFOp::create(b, loc, f64, v);
            };
            Value param = wide(x[0]);
            Value grad = arith::AddFOp::create(
                b, loc, wide(x[1]),
                arith::MulFOp::create(b, loc, c(weightDecay), param));
            Value rate = wide(x[2]);
            Value direction = grad;
            SmallVector<Value> results;
            if (hasBuffer) {
              // The first step takes the whole gradient (torch's buffer
              // initialization).
              Value first = arith::CmpIOp::create(
                  b, loc, arith::CmpIPredicate::eq, x[3],
                  arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(0)));
              Value share = arith::SelectOp::create(b, loc, first, c(1.0),
                                                    c(1.0 - dampening));
              Value buffer = arith::AddFOp::create(
                  b, loc, arith::MulFOp::create(b, loc, c(momentum), wide(x[4])),
                  arith::MulFOp::create(b, loc, share, grad));
              direction =
                  nesterov ? arith::AddFOp::create(
                                 b, loc, grad,
                                 arith::MulFOp::create(b, loc, c(momentum), buffer))
                                 .getResult()
                           : buffer;
              results.push_back(arith::TruncFOp::create(b, loc, element, buffer));
            }
            Value updated = arith::SubFOp::create(
                b, loc, param, arith::MulFOp::create(b, loc, rate, direction));
            results.insert(results.begin(),
                           arith::TruncFOp::create(b, loc, element, updated));
            return results;
          });
  return success();
}

/// graph.adam_update(param, grad, m, v, lr, step) -> (param', m', v'), in
/// double with the reference's operation order: bit-identical results.
/// The bias corrections depend only on the step; LLVM hoists them.
LogicalResult buildAdam(KernelBuilder &kb) {
  int64_t count = kb.inputType(0).getNumElements();
  Space space(ArrayRef<int64_t>{count});
  unsigned tensor = space.add({0}), scalar = space.add({});
  SmallVector<Operand> inputs;
  for (unsigned i = 0; i < 4; ++i)
    inputs.push_back({kb.input(i, {count}), tensor});
  inputs.push_back({kb.input(4, {}), scalar});
  inputs.push_back({kb.input(5, {}), scalar});
  SmallVector<Operand> outputs;
  for (unsigned i = 0; i < 3; ++i)
    outputs.push_back({kb.output(i, {count}), tensor});
  double beta1 = kb.real("beta1", 0.9), beta2 = kb.real("beta2", 0.999);
  double epsilon = kb.real("epsilon", 1e-8);
  double weightDecay = kb.real("weight_decay", 0.0);
  bool decoupled = kb.flag("decoupled"), onnx = kb.flag("onnx_convention");
  kb.nest(space, inputs, outputs, space.reduction,
          [&](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
            Type f64 = b.getF64Type();
            Type element = x[0].getType();
            auto c = [&](double value) { return constant(b, loc, f64, value); };
            auto wide = [&](Value v) -> Value {
              return arith::ExtFOp::create(b, loc, f64, v);
            };
            auto mul = [&](Value l, Value r) -> Value {
              return arith::MulFOp::create(b, loc, l, r);
            };
            auto add = [&](Value l, Value r) -> Value {
              return arith::AddFOp::create(b, loc, l, r);
            };
            auto sub = [&](Value l, Value r) -> Value {
              return arith::SubFOp::create(b, loc, l, r);
            };
            auto div = [&](Value l, Value r) -> Value {
              return arith::DivFOp::create(b, loc, l, r);
            };
            auto pow = [&](double base, Value exponent) -> Value {
              return math::PowFOp::create(b, loc, c(base), exponent);
            };
            Value lr = wide(x[4]);
            Value t = arith::SIToFPOp::create(b, loc, f64, x[5]);
            Value p = wide(x[0]);
            Value g = decoupled ? wide(x[1])
                                : add(wide(x[1]), mul(c(weightDecay), p));
            if (decoupled)
              p = mul(p, sub(c(1.0), mul(lr, c(weightDecay))));
            Value m = add(mul(c(beta1), wide(x[2])), mul(c(1.0 - beta1), g));
            Value v = add(mul(c(beta2), wide(x[3])),
                          mul(mul(c(1.0 - beta2), g), g));
            Value root = math::SqrtOp::create(b, loc, v);
            if (onnx) {
              Value corrected =
                  div(mul(lr, math::SqrtOp::create(b, loc,
                                                   sub(c(1.0), pow(beta2, t)))),
                      sub(c(1.0), pow(beta1, t)));
              Value positive = arith::CmpIOp::create(
                  b, loc, arith::CmpIPredicate::sgt, x[5],
                  arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(0)));
              Value rate =
                  arith::SelectOp::create(b, loc, positive, corrected, lr);
              p = sub(p, div(mul(rate, m), add(root, c(epsilon))));
            } else {
              Value k = add(t, c(1.0));
              Value rate = div(lr, sub(c(1.0), pow(beta1, k)));
              Value correction =
                  math::SqrtOp::create(b, loc, sub(c(1.0), pow(beta2, k)));
              p = sub(p, div(mul(rate, m), add(div(root, correction),
                                              c(epsilon))));
            }
            return {arith::TruncFOp::create(b, loc, element, p),
                    arith::TruncFOp::create(b, loc, element, m),
                    arith::TruncFOp::create(b, loc, element, v)};
          });
  return success();
}

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
    elementwise("graph.add", binaryOp<arith::AddFOp>);
    elementwise("graph.sub", binaryOp<arith::SubFOp>);
    elementwise("graph.mul", binaryOp<arith::MulFOp>);
    elementwise("graph.div", binaryOp<arith::DivFOp>);
    elementwise("graph.equal", compareOp<P::OEQ>);
    elementwise("graph.less", compareOp<P::OLT>);
    elementwise("graph.greater", compareOp<P::OGT>);
    elementwise("graph.less_equal", compareOp<P::OLE>);
    elementwise("graph.greater_equal", compareOp<P::OGE>);
    elementwise("graph.where", whereOp);
    elementwise("graph.expand", passThrough);
    elementwise("graph.neg", unaryOp<arith::NegFOp>);
    elementwise("graph.abs", unaryOp<math::AbsFOp>);
    elementwise("graph.sqrt", unaryOp<math::SqrtOp>);
    elementwise("graph.exp", unaryOp<math::ExpOp>);
    elementwise("graph.log", unaryOp<math::LogOp>);
    elementwise("graph.tanh", unaryOp<math::TanhOp>);
    elementwise("graph.erf", unaryOp<math::ErfOp>);
    elementwise("graph.sigmoid", sigmoidOp);
    elementwise("graph.relu", reluOp);
    elementwise("graph.reciprocal", reciprocalOp);
    elementwise("graph.leaky_relu", leakyReluOp);
    elementwise("graph.gelu", geluOp);
    elementwise("graph.clip", clipOp);
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
    t["graph.layer_norm"] = buildLayerNorm;
    t["graph.layer_norm_backward"] = buildLayerNormBackward;
    t["graph.sgd_update"] = buildSgd;
    t["graph.adam_update"] = buildAdam;
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
                                   func::FuncOp function) {
  auto it = builders().find(launch.getKernel());
  if (it == builders().end())
    return launch.emitError("the generated backend has no kernel for ")
           << launch.getKernel();
  KernelBuilder kb(launch, function);
  if (failed(it->second(kb)))
    return failure();
  function.setType(FunctionType::get(
      function.getContext(), function.getBody().front().getArgumentTypes(),
      {}));
  return success();
}

} // namespace trainc::conversion
