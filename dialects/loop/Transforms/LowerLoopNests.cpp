//===- LowerLoopNests.cpp - --trainc-lower-loop-nests ---------------------===//
//
// The schedule of a loop nest is applied by upstream machinery, not by
// hand-written loops: the nest becomes a linalg.generic over views of one
// block of its parallel dimension, scf::tileUsingSCF tiles it, and
// linalg::vectorize turns each tile into masked vector code.
//
//===----------------------------------------------------------------------===//
#include "dialects/loop/Transforms/Passes.h"

#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"

namespace trainc::loop {
#define GEN_PASS_DEF_LOWERLOOPNESTSPASS
#include "dialects/loop/Transforms/Passes.h.inc"
} // namespace trainc::loop

using namespace mlir;
using namespace trainc::loop;

namespace {

/// How a buffer crosses the function boundary: i1 as one byte.
Type storageElementType(Type element) {
  return element.isInteger(1) ? IntegerType::get(element.getContext(), 8)
                              : element;
}

MemRefType storageType(Type type) {
  auto memref = cast<MemRefType>(type);
  return MemRefType::get(memref.getShape(),
                         storageElementType(memref.getElementType()));
}

/// Views of `buffers` restricted to [begin, begin + size) along every axis
/// that `dim` indexes (the block of the parallel dimension).
SmallVector<Value> blockViews(OpBuilder &b, Location loc, ValueRange buffers,
                              ArrayRef<AffineMap> maps, int64_t dim,
                              Value begin, Value size) {
  SmallVector<Value> views;
  for (auto [buffer, map] : llvm::zip(buffers, maps)) {
    std::optional<unsigned> axis =
        dim < 0 ? std::nullopt : map.getResultPosition(b.getAffineDimExpr(dim));
    if (!axis) {
      views.push_back(buffer);
      continue;
    }
    auto type = cast<MemRefType>(buffer.getType());
    SmallVector<OpFoldResult> offsets(type.getRank(), b.getIndexAttr(0));
    SmallVector<OpFoldResult> sizes =
        getAsIndexOpFoldResult(b.getContext(), type.getShape());
    SmallVector<OpFoldResult> strides(type.getRank(), b.getIndexAttr(1));
    offsets[*axis] = begin;
    sizes[*axis] = size;
    views.push_back(
        memref::SubViewOp::create(b, loc, buffer, offsets, sizes, strides));
  }
  return views;
}

/// The nest's computation as a linalg.generic on `inputs`/`outputs`
/// (storage types): the body is cloned, with i1 values narrowed from and
/// widened to their byte storage. loop.index becomes linalg.index, plus
/// `begin` along the parallel dimension `dim` since the generic only sees
/// one block of it (tiling then offsets linalg.index by each tile's start).
linalg::GenericOp buildGeneric(OpBuilder &b, NestOp nest, ValueRange inputs,
                               ValueRange outputs, int64_t dim, Value begin) {
  SmallVector<utils::IteratorType> iterators;
  for (unsigned dim = 0; dim < nest.getDomain().size(); ++dim)
    iterators.push_back(nest.isReduction(dim) ? utils::IteratorType::reduction
                                              : utils::IteratorType::parallel);
  SmallVector<AffineMap> maps = llvm::to_vector(
      nest.getIndexingMaps().getAsValueRange<AffineMapAttr>());
  Block &body = nest.getBody().front();
  return linalg::GenericOp::create(
      b, nest.getLoc(), TypeRange{}, inputs, outputs, maps, iterators,
      [&](OpBuilder &nested, Location loc, ValueRange arguments) {
        IRMapping mapping;
        for (auto [original, stored] :
             llvm::zip(body.getArguments(), arguments)) {
          Value value = stored;
          if (original.getType() != stored.getType())
            value = arith::TruncIOp::create(nested, loc, original.getType(),
                                            stored);
          mapping.map(original, value);
        }
        for (Operation &op : body.without_terminator()) {
          auto index = dyn_cast<IndexOp>(op);
          if (!index) {
            nested.clone(op, mapping);
            continue;
          }
          Value position = linalg::IndexOp::create(nested, loc, index.getDim());
          if (static_cast<int64_t>(index.getDim()) == dim)
            position = arith::AddIOp::create(nested, loc, position, begin);
          mapping.map(index.getResult(), position);
        }
        SmallVector<Value> results;
        auto yield = cast<YieldOp>(body.getTerminator());
        for (auto [value, output] : llvm::zip(yield.getValues(), outputs)) {
          Value result = mapping.lookupOrDefault(value);
          Type stored = cast<MemRefType>(output.getType()).getElementType();
          if (result.getType() != stored)
            result = arith::ExtUIOp::create(nested, loc, stored, result);
          results.push_back(result);
        }
        linalg::YieldOp::create(nested, loc, results);
      });
}

/// Tiles `generic` by the schedule and vectorizes (or scalarizes) each tile.
LogicalResult applySchedule(RewriterBase &rewriter, linalg::GenericOp generic,
                            ScheduleAttr schedule, NestOp nest) {
  Operation *tile = generic;
  if (generic.getNumLoops() > 0) {
    scf::SCFTilingOptions options;
    options.setTileSizes(
        getAsIndexOpFoldResult(rewriter.getContext(), schedule.getTile()));
    rewriter.setInsertionPoint(generic);
    FailureOr<scf::SCFTilingResult> tiled = scf::tileUsingSCF(
        rewriter, cast<TilingInterface>(generic.getOperation()), options);
    if (failed(tiled))
      return nest.emitError("cannot tile the nest with ")
             << schedule;
    rewriter.eraseOp(generic);
    tile = tiled->tiledOps.back();
  }
  auto linalgTile = cast<linalg::LinalgOp>(tile);
  if (schedule.getVectorize() && linalgTile.getNumLoops() > 0) {
    rewriter.setInsertionPoint(tile);
    // Scalable flags must be given explicitly (one per dimension), or the
    // masks get a vector type unequal to the one transfer ops expect.
    SmallVector<bool> fixedWidth(schedule.getTile().size(), false);
    FailureOr<linalg::VectorizationResult> vectorized =
        linalg::vectorize(rewriter, tile, schedule.getTile(), fixedWidth);
    if (failed(vectorized))
      return nest.emitError("cannot vectorize the nest with ") << schedule;
    rewriter.eraseOp(tile);
    return success();
  }
  rewriter.setInsertionPoint(tile);
  if (failed(linalg::linalgOpToLoops(rewriter, linalgTile)))
    return nest.emitError("cannot lower the nest to loops");
  rewriter.eraseOp(tile);
  return success();
}

/// Builds @KERNEL_nestINDEX for `nest`.
LogicalResult lowerNest(func::FuncOp kernel, NestOp nest, unsigned index) {
  MLIRContext *context = kernel.getContext();
  Location loc = nest.getLoc();
  for (Value operand : nest->getOperands())
    if (!isa<BlockArgument>(operand) ||
        cast<BlockArgument>(operand).getOwner()->getParentOp() != kernel)
      return nest.emitError("operands of a loop.nest must be arguments of "
                            "its kernel function");

  SmallVector<Type> argumentTypes(2, IndexType::get(context));
  for (Type type : kernel.getArgumentTypes())
    argumentTypes.push_back(storageType(type));
  OpBuilder b(kernel);
  auto function = func::FuncOp::create(
      b, loc, nestFunctionName(kernel.getSymName(), index),
      FunctionType::get(context, argumentTypes, {}));
  Block *entry = function.addEntryBlock();
  b.setInsertionPointToStart(entry);
  auto storage = [&](Value operand) -> Value {
    return entry->getArgument(2 + cast<BlockArgument>(operand).getArgNumber());
  };
  SmallVector<Value> inputs = llvm::map_to_vector(nest.getInputs(), storage);
  SmallVector<Value> outputs = llvm::map_to_vector(nest.getOutputs(), storage);

  // The block [begin, end) of the parallel dimension, in elements.
  ScheduleAttr schedule = nest.getSchedule();
  int64_t dim = schedule.getParallel();
  Value begin, size;
  if (dim >= 0) {
    Value tile = arith::ConstantIndexOp::create(b, loc, schedule.getTile()[dim]);
    Value extent =
        arith::ConstantIndexOp::create(b, loc, nest.getDomain()[dim]);
    begin = arith::MulIOp::create(b, loc, entry->getArgument(0), tile);
    Value end = arith::MinSIOp::create(
        b, loc, arith::MulIOp::create(b, loc, entry->getArgument(1), tile),
        extent);
    size = arith::SubIOp::create(b, loc, end, begin);
  }
  SmallVector<AffineMap> maps = llvm::to_vector(
      nest.getIndexingMaps().getAsValueRange<AffineMapAttr>());
  unsigned numInputs = inputs.size();
  SmallVector<Value> inputViews =
      blockViews(b, loc, inputs, ArrayRef(maps).take_front(numInputs), dim,
                 begin, size);
  SmallVector<Value> outputViews =
      blockViews(b, loc, outputs, ArrayRef(maps).drop_front(numInputs), dim,
                 begin, size);
  linalg::GenericOp generic =
      buildGeneric(b, nest, inputViews, outputViews, dim, begin);
  func::ReturnOp::create(b, loc);

  IRRewriter rewriter(context);
  return applySchedule(rewriter, generic, schedule, nest);
}

struct LowerLoopNestsPass
    : trainc::loop::impl::LowerLoopNestsPassBase<LowerLoopNestsPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<func::FuncOp> kernels;
    for (auto function : getOperation().getOps<func::FuncOp>())
      if (function->hasAttr(kKernelAttrName))
        kernels.push_back(function);
    for (func::FuncOp kernel : kernels) {
      unsigned index = 0;
      for (NestOp nest :
           llvm::make_early_inc_range(kernel.getBody().getOps<NestOp>()))
        if (failed(lowerNest(kernel, nest, index++)))
          return signalPassFailure();
      kernel.erase();
    }
  }
};

} // namespace
