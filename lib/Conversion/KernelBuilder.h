//===- KernelBuilder.h - writing a generated kernel ------------*- C++ -*-===//
//
// What the builders of the Generated*Kernels.cpp files share: the
// iteration space (`Space`) of a kernel and the `KernelBuilder` that
// retypes the kernel function's buffers and appends loop nests with their
// default schedule. Internal to lib/Conversion.
//
//===----------------------------------------------------------------------===//
#ifndef TRAINC_LIB_CONVERSION_KERNELBUILDER_H
#define TRAINC_LIB_CONVERSION_KERNELBUILDER_H

#include "dialects/kernel/KernelOps.h"
#include "dialects/loop/Schedule.h"
#include "lib/Conversion/GeneratedKernels.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Builders.h"

namespace trainc::conversion {

using namespace mlir;

//===----------------------------------------------------------------------===//
// Iteration spaces
//===----------------------------------------------------------------------===//

/// A domain, and for each buffer the domain dimensions along its axes.
struct Space {
  SmallVector<int64_t> domain;
  SmallVector<bool> reduction;
  SmallVector<SmallVector<unsigned>> operands;

  explicit Space(ArrayRef<int64_t> extents)
      : domain(extents), reduction(extents.size(), false) {
    for (unsigned dim = 0; dim < extents.size(); ++dim)
      origins.push_back({dim});
  }

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
      llvm::append_range(origins[dim], origins[dim + 1]);
      removeDim(dim + 1);
    }
  }

  /// The dimension that dimension `original` of the extents the space was
  /// made with has become, unless it was dropped. (A merged dimension
  /// stands for several: its index is not the original's.)
  std::optional<unsigned> find(unsigned original) const {
    for (auto [dim, merged] : llvm::enumerate(origins))
      if (llvm::is_contained(merged, original))
        return dim;
    return std::nullopt;
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
  /// The original dimensions each dimension stands for.
  SmallVector<SmallVector<unsigned>> origins;

  void removeDim(unsigned removed) {
    domain.erase(domain.begin() + removed);
    reduction.erase(reduction.begin() + removed);
    origins.erase(origins.begin() + removed);
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

using Body =
    llvm::function_ref<SmallVector<Value>(OpBuilder &, Location, ValueRange)>;

/// A buffer of the kernel function and its operand number in a Space.
struct Operand {
  Value buffer;
  unsigned id;
};

class KernelBuilder {
public:
  KernelBuilder(kernel::LaunchOp launch, func::FuncOp function,
                int64_t vectorLanes)
      : launch(launch), function(function),
        builder(function.getBody().front().getTerminator()),
        loc(launch.getLoc()), vectorLanes(vectorLanes) {}

  kernel::LaunchOp launch;
  func::FuncOp function;
  OpBuilder builder;
  Location loc;
  /// f32 lanes of the target's vectors (loop::defaultSchedule).
  int64_t vectorLanes;

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
  /// An integer-array option, empty when absent.
  ArrayRef<int64_t> integers(StringRef name) {
    auto array = launch.getOptions().getAs<DenseI64ArrayAttr>(name);
    return array ? array.asArrayRef() : ArrayRef<int64_t>();
  }
  std::optional<int64_t> integer(StringRef name) {
    if (auto attr = launch.getOptions().getAs<IntegerAttr>(name))
      return attr.getInt();
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
  /// bf16 or f16: stored low, computed in f32.
  static bool isLowFloat(Type type) { return type.isBF16() || type.isF16(); }
  /// The type a kernel computes elements of type `element` in (its
  /// statistics' scratch type): f32 for low floats.
  Type computeType(Type element) {
    return isLowFloat(element) ? builder.getF32Type() : element;
  }

  /// A new buffer that only this kernel uses.
  Value scratch(ArrayRef<int64_t> shape, Type element) {
    return function.getBody().front().addArgument(
        MemRefType::get(shape, element), loc);
  }
  /// A scratch buffer that the kernel's nests reach through this argument
  /// only (never viewed; kPrivateScratchAttrName): LLVM may then keep its
  /// elements in registers across loops, such as the sums of a reduction
  /// accumulated in it while other buffers are read.
  Value privateScratch(ArrayRef<int64_t> shape, Type element) {
    auto argument = cast<BlockArgument>(scratch(shape, element));
    updateFunctionType();
    function.setArgAttr(argument.getArgNumber(), kPrivateScratchAttrName,
                        builder.getUnitAttr());
    return argument;
  }
  /// `buffer` (from `scratch`) seen in `shape` as well: another argument,
  /// to which the launch passes a view of the same buffer. For nests that
  /// index one buffer in two shapes (written as rows and taps, read flat).
  Value scratchView(Value buffer, ArrayRef<int64_t> shape) {
    auto type = cast<MemRefType>(buffer.getType());
    assert(type.getNumElements() == ShapedType::getNumElements(shape) &&
           "a view keeps the element count");
    BlockArgument view = function.getBody().front().addArgument(
        MemRefType::get(shape, type.getElementType()), loc);
    updateFunctionType();
    function.setArgAttr(
        view.getArgNumber(), kScratchViewAttrName,
        builder.getI64IntegerAttr(cast<BlockArgument>(buffer).getArgNumber()));
    return view;
  }

  /// The function's type gets the new arguments, so that it may hold
  /// their attributes (buildGeneratedKernel sets it again at the end).
  void updateFunctionType() {
    function.setType(
        FunctionType::get(builder.getContext(),
                          function.getBody().front().getArgumentTypes(), {}));
  }

  /// Appends a loop.nest over `space` with the default schedule and
  /// returns it (a builder may adjust the schedule).
  loop::NestOp nest(const Space &space, ArrayRef<Operand> inputs,
                    ArrayRef<Operand> outputs, ArrayRef<bool> reduction,
                    Body body) {
    MLIRContext *context = builder.getContext();
    SmallVector<AffineMap> maps;
    SmallVector<Value> inputBuffers, outputBuffers;
    for (const Operand &operand : inputs) {
      maps.push_back(space.map(operand.id, context));
      inputBuffers.push_back(operand.buffer);
    }
    for (const Operand &operand : outputs) {
      maps.push_back(space.map(operand.id, context));
      outputBuffers.push_back(operand.buffer);
    }
    return nest(space.domain, reduction, inputBuffers, outputBuffers, maps,
                body);
  }

  /// Appends a loop.nest over `domain` whose `inputs` and `outputs` are
  /// indexed by `maps` (inputs first: any linear maps the loop dialect
  /// takes, such as windows and slices), with the default schedule.
  loop::NestOp nest(ArrayRef<int64_t> domain, ArrayRef<bool> reduction,
                    ArrayRef<Value> inputs, ArrayRef<Value> outputs,
                    ArrayRef<AffineMap> maps, Body body) {
    MLIRContext *context = builder.getContext();
    SmallVector<Type> elements;
    for (Value buffer : llvm::concat<const Value>(inputs, outputs))
      elements.push_back(cast<MemRefType>(buffer.getType()).getElementType());
    SmallVector<Attribute> iterators;
    for (bool reduces : reduction)
      iterators.push_back(
          builder.getStringAttr(reduces ? "reduction" : "parallel"));
    loop::ScheduleAttr schedule = loop::defaultSchedule(
        context, domain, reduction, maps, outputs.size(), vectorLanes);
    auto nestOp = loop::NestOp::create(
        builder, loc, inputs, outputs, builder.getDenseI64ArrayAttr(domain),
        builder.getAffineMapArrayAttr(maps), builder.getArrayAttr(iterators),
        schedule,
        /*wrapping_inputs=*/nullptr);
    Block *block = builder.createBlock(&nestOp.getBody());
    for (Type element : elements)
      block->addArgument(element, loc);
    OpBuilder nested = OpBuilder::atBlockBegin(block);
    // A body whose float elements have different types (a batch norm of
    // bf16 activations with f32 statistics, --amp) sees the low floats as
    // f32 and its results are rounded to their outputs' types; a body of
    // one type is left to --trainc-widen-low-floats, after fusion.
    bool mixed = llvm::any_of(elements, isLowFloat) &&
                 llvm::any_of(elements, [](Type t) {
                   return isa<FloatType>(t) && !isLowFloat(t);
                 });
    SmallVector<Value> arguments(block->getArguments());
    if (mixed)
      for (Value &argument : arguments)
        if (isLowFloat(argument.getType()))
          argument =
              arith::ExtFOp::create(nested, loc, nested.getF32Type(), argument);
    SmallVector<Value> results = body(nested, loc, arguments);
    for (auto [result, output] : llvm::zip(results, outputs)) {
      Type stored = cast<MemRefType>(output.getType()).getElementType();
      if (mixed && result.getType() != stored)
        result = arith::TruncFOp::create(nested, loc, stored, result);
    }
    loop::YieldOp::create(nested, loc, results);
    // Widenings the body did not read (an elementwise nest's outputs): a
    // nest must not use its output arguments to count as elementwise
    // (--trainc-fuse-elementwise).
    if (mixed)
      for (Value argument : arguments)
        if (auto widen = argument.getDefiningOp<arith::ExtFOp>();
            widen && widen->use_empty())
          widen->erase();
    builder.setInsertionPointAfter(nestOp);
    return nestOp;
  }

  /// Sets every element of `buffer` (operand `id` of `space`) to `value`.
  void fill(const Space &space, Operand operand, double value) {
    Space own(space.shape(operand.id));
    unsigned id = own.addAllBut([](unsigned) { return false; });
    Type element = cast<MemRefType>(operand.buffer.getType()).getElementType();
    nest(own, {}, {{operand.buffer, id}}, own.reduction,
         [&](OpBuilder &b, Location loc, ValueRange) -> SmallVector<Value> {
           if (isa<IntegerType>(element))
             return {arith::ConstantOp::create(
                 b, loc,
                 b.getIntegerAttr(element, static_cast<int64_t>(value)))};
           return {arith::ConstantOp::create(b, loc,
                                             b.getFloatAttr(element, value))};
         });
  }

  /// A new memref<i64> scratch buffer that is the kernel's loop.check
  /// status (see LoopOps.td): the nests must set it to 0 or to a value
  /// `message` reports in place of "{}". The message is prefixed with the
  /// kernel's name, as the runtime prefixes a kernel's errors.
  Value checkStatus(StringRef message) {
    Value status = scratch({}, builder.getI64Type());
    function->setAttr(
        loop::kCheckAttrName,
        loop::CheckAttr::get(builder.getContext(),
                             cast<BlockArgument>(status).getArgNumber(),
                             (launch.getKernel() + ": " + message).str()));
    return status;
  }
};

inline Value constant(OpBuilder &b, Location loc, Type type, double value) {
  return arith::ConstantOp::create(b, loc, b.getFloatAttr(type, value));
}

/// sum + a * x, rounded once (a fused multiply-add): a convolution's
/// accumulation, as oneDNN and PyTorch do it, so that a generated kernel
/// that adds its taps in their order gives their bits.
inline Value multiplyAccumulate(OpBuilder &b, Location loc, Value a, Value x,
                                Value sum) {
  return math::FmaOp::create(b, loc, a, x, sum);
}

/// Dimension `position` of a loop.nest's domain, for indexing maps.
inline AffineExpr affineDim(MLIRContext *context, unsigned position) {
  return getAffineDimExpr(position, context);
}
/// A map over `numDims` dimensions with `results`.
inline AffineMap mapOf(MLIRContext *context, unsigned numDims,
                       ArrayRef<AffineExpr> results) {
  return AffineMap::get(numDims, 0, results, context);
}
/// The identity map of `offsets.size()` dimensions, with `offsets` added.
AffineMap offsetIdentity(MLIRContext *context, ArrayRef<int64_t> offsets);
/// Sets `buffer` (all of it) to zero.
void zeroFill(KernelBuilder &kb, Value buffer);
/// Copies `source` into a new scratch buffer of shape `shape`, filled with
/// `fill` elsewhere, at `offsets` (and `steps`) along each axis (a padded
/// or dilated copy), and returns the scratch; `source` itself if that is
/// the same.
Value placedCopy(KernelBuilder &kb, Value source, ArrayRef<int64_t> shape,
                 ArrayRef<int64_t> offsets, ArrayRef<int64_t> steps = {},
                 double fill = 0.0);

/// Calls `fn` with every tap of a window of extents `kernel`, in
/// row-major order.
void forEachTap(ArrayRef<int64_t> kernel,
                llvm::function_ref<void(ArrayRef<int64_t>)> fn);

/// The row-major position of the current point of a loop.nest over
/// `domain`, as an i64.
Value flatPosition(OpBuilder &b, Location loc, ArrayRef<int64_t> domain);

/// Makes the kernel check the integer buffer `values` (its elements read as
/// i64): the loop.check status (see KernelBuilder::checkStatus, `message`)
/// is the first element in row-major order for which `invalid` holds, or 0
/// if none does, so 0 must be a valid value. The position is a
/// min-reduction and the value there a sum with one term: neither depends
/// on the order of the reduction.
void checkFirstInvalid(
    KernelBuilder &kb, Value values, StringRef message,
    llvm::function_ref<Value(OpBuilder &, Location, Value)> invalid);

/// Row maxima and sums of exp(x - max) of `input` (operand of `space`)
/// along its reduction dimensions, in two new scratch buffers of operand
/// `rowId`'s shape (softmax's statistics).
std::pair<Operand, Operand> softmaxStatistics(KernelBuilder &kb,
                                              const Space &space, Operand input,
                                              unsigned rowId);

/// graph.reduce_sum/reduce_mean/reduce_max over their axes, graph.argmax,
/// graph.global_avg_pool and (log_)softmax (GeneratedReductionKernels.cpp).
enum class Reduce { Sum, Mean, Max };
LogicalResult buildReduce(KernelBuilder &kb, Reduce kind);
LogicalResult buildArgMax(KernelBuilder &kb);
LogicalResult buildGlobalAvgPool(KernelBuilder &kb);
LogicalResult buildSoftmax(KernelBuilder &kb, bool logarithm);
LogicalResult buildLayerNorm(KernelBuilder &kb);
LogicalResult buildLayerNormBackward(KernelBuilder &kb);
LogicalResult buildBatchNormTraining(KernelBuilder &kb);
LogicalResult buildBatchNormInference(KernelBuilder &kb);
LogicalResult buildBatchNormTrainingBackward(KernelBuilder &kb);
LogicalResult buildSgd(KernelBuilder &kb);
LogicalResult buildAdam(KernelBuilder &kb);
LogicalResult buildAdagrad(KernelBuilder &kb);
/// softmax_cross_entropy (`softmax`) or nll_loss, and their gradients.
LogicalResult buildClassLoss(KernelBuilder &kb, bool softmax);
LogicalResult buildClassLossBackward(KernelBuilder &kb, bool softmax);
enum class PointwiseLoss { Mse, L1, BceWithLogits };
LogicalResult buildPointwiseLoss(KernelBuilder &kb, PointwiseLoss kind);
/// graph.max_pool and its gradient: vectorized where the windows tile the
/// input exactly, else the window builders below.
LogicalResult buildMaxPool(KernelBuilder &kb);
LogicalResult buildMaxPoolBackward(KernelBuilder &kb);
/// Max and average pooling and their gradients for any windows (padding,
/// overlap, dilation, ceil_mode), as scalar window nests
/// (GeneratedWindowPoolKernels.cpp).
LogicalResult buildWindowMaxPool(KernelBuilder &kb);
LogicalResult buildWindowMaxPoolBackward(KernelBuilder &kb);
LogicalResult buildAvgPool(KernelBuilder &kb);
LogicalResult buildAvgPoolBackward(KernelBuilder &kb);
/// graph.slice, graph.slice_backward and graph.concat (copies through
/// strided, offset indexing maps), graph.gather and its gradient.
LogicalResult buildSlice(KernelBuilder &kb);
LogicalResult buildSliceBackward(KernelBuilder &kb);
LogicalResult buildConcat(KernelBuilder &kb);
LogicalResult buildGather(KernelBuilder &kb);
LogicalResult buildGatherBackward(KernelBuilder &kb);
LogicalResult buildGatherElements(KernelBuilder &kb);
LogicalResult buildGatherElementsBackward(KernelBuilder &kb);
/// graph.conv and its gradients, as windows over a zero-padded copy
/// (GeneratedConvKernels.cpp).
LogicalResult buildConv(KernelBuilder &kb);
LogicalResult buildConvBackwardInput(KernelBuilder &kb);
LogicalResult buildConvBackwardWeight(KernelBuilder &kb);
/// graph.conv_matrix and its gradient: copies of the weight's windows
/// (GeneratedConvKernels.cpp).
LogicalResult buildConvMatrix(KernelBuilder &kb);
LogicalResult buildConvMatrixBackward(KernelBuilder &kb);
/// graph.random_mask: dropout's mask, Philox4x32-10 as in trainc/Random.h.
LogicalResult buildRandomMask(KernelBuilder &kb);
/// graph.matmul (numpy semantics) and graph.gemm.
LogicalResult buildMatmul(KernelBuilder &kb);
LogicalResult buildGemm(KernelBuilder &kb);

} // namespace trainc::conversion

#endif
