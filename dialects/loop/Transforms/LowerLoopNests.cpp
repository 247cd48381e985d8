//===- LowerLoopNests.cpp - --trainc-lower-loop-nests ---------------------===//
//
// The schedule of a loop nest is applied by upstream machinery, not by
// hand-written loops: the nest becomes a linalg.generic over views of one
// block of its parallel dimension, scf::tileUsingSCF tiles it, the
// innermost tile loop is peeled into full tiles and a partial one, and
// linalg::vectorize turns each tile into vector code (masked only in the
// partial tile, once canonicalized).
//
//===----------------------------------------------------------------------===//
#include "dialects/loop/Transforms/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/Transforms/LoweringPatterns.h"
#include "mlir/Dialect/Vector/Transforms/VectorRewritePatterns.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/ValueBoundsOpInterface.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/SmallBitVector.h"

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

/// A buffer's type in the nest functions. A buffer without elements
/// (which only nests over empty domains index, and those do nothing) is
/// one element long: the bare-pointer calling convention refuses memrefs
/// with an extent of 0.
MemRefType storageType(Type type) {
  auto memref = cast<MemRefType>(type);
  Type element = storageElementType(memref.getElementType());
  if (memref.getNumElements() == 0)
    return MemRefType::get({1}, element);
  return MemRefType::get(memref.getShape(), element);
}

/// An operand as linalg sees it: a view of its buffer and the map into it.
struct View {
  Value buffer;
  AffineMap map;
};

/// `buffer`, indexed by `map` over `nest`'s domain, as a view in which a
/// result c * d + k (c > 0) is dimension d on its own: the axis becomes a
/// view from k with stride c (from k + c * begin, `size` long, along the
/// parallel dimension `parallel`, whose block [begin, begin + size) the
/// function computes); a constant result k drops its axis (a rank-reducing
/// view at k). Other results (sums of dimensions, negative steps) stay as
/// they are, over the whole axis. Buffers that need no view are returned
/// unchanged.
View viewOf(OpBuilder &b, Location loc, NestOp nest, Value buffer,
            AffineMap map, int64_t parallel, Value begin, Value size) {
  MLIRContext *context = b.getContext();
  ArrayRef<int64_t> domain = nest.getDomain();
  auto type = cast<MemRefType>(buffer.getType());
  SmallVector<OpFoldResult> offsets, sizes, strides;
  SmallVector<AffineExpr> results;
  llvm::SmallBitVector dropped(type.getRank());
  bool whole = true;
  for (auto [axis, expr] : llvm::enumerate(map.getResults())) {
    AffineForm form = *getAffineForm(expr, domain.size());
    int64_t extent = type.getDimSize(axis);
    std::optional<unsigned> dim = form.singleDim();
    int64_t step = dim ? form.coefficients[*dim] : 0;
    if (form.isConstant()) {
      offsets.push_back(b.getIndexAttr(form.constant));
      sizes.push_back(b.getIndexAttr(1));
      strides.push_back(b.getIndexAttr(1));
      dropped.set(axis);
      whole = false;
    } else if (dim && step > 0) {
      results.push_back(b.getAffineDimExpr(*dim));
      if (static_cast<int64_t>(*dim) == parallel) {
        Value start = arith::MulIOp::create(
            b, loc, begin, arith::ConstantIndexOp::create(b, loc, step));
        offsets.push_back(
            arith::AddIOp::create(
                b, loc, start,
                arith::ConstantIndexOp::create(b, loc, form.constant))
                .getResult());
        sizes.push_back(size);
        whole = false;
      } else {
        offsets.push_back(b.getIndexAttr(form.constant));
        sizes.push_back(b.getIndexAttr(domain[*dim]));
        whole &= form.constant == 0 && domain[*dim] == extent;
      }
      strides.push_back(b.getIndexAttr(step));
      whole &= step == 1;
    } else {
      results.push_back(expr);
      offsets.push_back(b.getIndexAttr(0));
      sizes.push_back(b.getIndexAttr(extent));
      strides.push_back(b.getIndexAttr(1));
    }
  }
  AffineMap viewMap = AffineMap::get(domain.size(), 0, results, context);
  if (whole)
    return {buffer, viewMap};
  SmallVector<int64_t> viewShape;
  for (auto [axis, axisSize] : llvm::enumerate(sizes))
    if (!dropped.test(axis))
      viewShape.push_back(getConstantIntValue(axisSize).value_or(
          ShapedType::kDynamic));
  MemRefType viewType = memref::SubViewOp::inferRankReducedResultType(
      viewShape, type, offsets, sizes, strides);
  return {memref::SubViewOp::create(b, loc, viewType, buffer,
                                    offsets, sizes, strides),
          viewMap};
}
/// A wrapping input's view (NestOp's `wrapping_inputs`): the view viewOf
/// makes, as a memref.reinterpret_cast of the whole buffer, since its
/// offsets may lie before the start of an axis (where a subview may not
/// start) as long as every element it reaches lies inside the buffer.
View wrappingViewOf(OpBuilder &b, Location loc, NestOp nest, Value buffer,
                    AffineMap map, int64_t parallel, Value begin, Value size) {
  MLIRContext *context = b.getContext();
  ArrayRef<int64_t> domain = nest.getDomain();
  auto type = cast<MemRefType>(buffer.getType());
  SmallVector<int64_t> bufferStrides(type.getRank(), 1);
  for (int64_t axis = type.getRank() - 2; axis >= 0; --axis)
    bufferStrides[axis] = bufferStrides[axis + 1] * type.getDimSize(axis + 1);
  int64_t offset = 0;
  Value dynamicOffset;
  SmallVector<OpFoldResult> sizes, strides;
  SmallVector<int64_t> shape, viewStrides;
  SmallVector<AffineExpr> results;
  for (auto [axis, expr] : llvm::enumerate(map.getResults())) {
    AffineForm form = *getAffineForm(expr, domain.size());
    offset += form.constant * bufferStrides[axis];
    if (form.isConstant())
      continue;
    unsigned dim = *form.singleDim();
    int64_t stride = form.coefficients[dim] * bufferStrides[axis];
    results.push_back(b.getAffineDimExpr(dim));
    viewStrides.push_back(stride);
    strides.push_back(b.getIndexAttr(stride));
    if (static_cast<int64_t>(dim) == parallel) {
      Value start = arith::MulIOp::create(
          b, loc, begin, arith::ConstantIndexOp::create(b, loc, stride));
      dynamicOffset =
          dynamicOffset
              ? arith::AddIOp::create(b, loc, dynamicOffset, start).getResult()
              : start;
      sizes.push_back(size);
      shape.push_back(ShapedType::kDynamic);
    } else {
      sizes.push_back(b.getIndexAttr(domain[dim]));
      shape.push_back(domain[dim]);
    }
  }
  OpFoldResult viewOffset = b.getIndexAttr(offset);
  if (dynamicOffset)
    viewOffset =
        arith::AddIOp::create(b, loc, dynamicOffset,
                              arith::ConstantIndexOp::create(b, loc, offset))
            .getResult();
  auto viewType = MemRefType::get(
      shape, type.getElementType(),
      StridedLayoutAttr::get(
          context, dynamicOffset ? ShapedType::kDynamic : offset, viewStrides));
  Value view = memref::ReinterpretCastOp::create(b, loc, viewType, buffer,
                                                 viewOffset, sizes, strides);
  return {view, AffineMap::get(domain.size(), 0, results, context)};
}

/// A view that gives linalg the extent of the dimensions no view indexes
/// plainly (a window's taps that only appear summed with an output
/// position), as linalg's pooling ops take a `window` operand: a
/// zero-stride view of `anyBuffer`, never read. Null if every dimension
/// has an extent already.
View extentsView(OpBuilder &b, Location loc, NestOp nest, Value anyBuffer,
                 ArrayRef<View> views) {
  ArrayRef<int64_t> domain = nest.getDomain();
  llvm::SmallBitVector known(domain.size());
  for (const View &view : views)
    for (AffineExpr expr : view.map.getResults())
      if (auto dim = dyn_cast<AffineDimExpr>(expr))
        known.set(dim.getPosition());
  SmallVector<AffineExpr> results;
  SmallVector<int64_t> shape;
  for (unsigned dim = 0; dim < domain.size(); ++dim)
    if (!known.test(dim)) {
      results.push_back(b.getAffineDimExpr(dim));
      shape.push_back(domain[dim]);
    }
  if (results.empty())
    return {};
  auto source = cast<MemRefType>(anyBuffer.getType());
  SmallVector<int64_t> zeros(shape.size(), 0);
  auto type = MemRefType::get(
      shape, source.getElementType(),
      StridedLayoutAttr::get(b.getContext(), 0, zeros));
  Value view = memref::ReinterpretCastOp::create(b, loc, type, anyBuffer, 0,
                                                 shape, zeros);
  return {view, AffineMap::get(domain.size(), 0, results, b.getContext())};
}

/// The nest's computation as a linalg.generic on `inputs` and `outputs`
/// (views of the storage buffers; `extents`, if any, an input the body
/// ignores): the body is cloned, with i1 values narrowed from and
/// widened to their byte storage. loop.index becomes linalg.index, plus
/// `begin` along the parallel dimension `dim` since the generic only sees
/// one block of it (tiling then offsets linalg.index by each tile's start).
linalg::GenericOp buildGeneric(OpBuilder &b, NestOp nest,
                               ArrayRef<View> inputs, View extents,
                               ArrayRef<View> outputs, int64_t dim,
                               Value begin) {
  SmallVector<utils::IteratorType> iterators;
  for (unsigned d = 0; d < nest.getDomain().size(); ++d)
    iterators.push_back(nest.isReduction(d) ? utils::IteratorType::reduction
                                            : utils::IteratorType::parallel);
  SmallVector<View> allInputs(inputs);
  if (extents.buffer)
    allInputs.push_back(extents);
  SmallVector<Value> inputBuffers, outputBuffers;
  SmallVector<AffineMap> maps;
  for (const View &view : allInputs) {
    inputBuffers.push_back(view.buffer);
    maps.push_back(view.map);
  }
  for (const View &view : outputs) {
    outputBuffers.push_back(view.buffer);
    maps.push_back(view.map);
  }
  Block &body = nest.getBody().front();
  return linalg::GenericOp::create(
      b, nest.getLoc(), TypeRange{}, inputBuffers, outputBuffers, maps,
      iterators, [&](OpBuilder &nested, Location loc, ValueRange arguments) {
        // The generic's arguments but the extents' one.
        SmallVector<Value> stored(arguments.take_front(inputs.size()));
        llvm::append_range(stored, arguments.take_back(outputs.size()));
        IRMapping mapping;
        for (auto [original, value] : llvm::zip(body.getArguments(), stored)) {
          if (original.getType() != value.getType())
            value = arith::TruncIOp::create(nested, loc, original.getType(),
                                            value);
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
          Type storedType =
              cast<MemRefType>(output.buffer.getType()).getElementType();
          if (result.getType() != storedType)
            result = arith::ExtUIOp::create(nested, loc, storedType, result);
          results.push_back(result);
        }
        linalg::YieldOp::create(nested, loc, results);
      });
}

/// Tiles `generic` by the schedule and vectorizes (or scalarizes) each tile.
LogicalResult applySchedule(RewriterBase &rewriter, linalg::GenericOp generic,
                            ScheduleAttr schedule, NestOp nest) {
  Operation *tile = generic;
  // Scalar tiles of one point are the loops themselves.
  bool pointwise =
      !schedule.getVectorize() &&
      llvm::all_of(schedule.getTile(), [](int64_t size) { return size == 1; });
  SmallVector<LoopLikeOpInterface> loops;
  if (generic.getNumLoops() > 0 && !pointwise) {
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
    loops = tiled->loops;
  }
  auto linalgTile = cast<linalg::LinalgOp>(tile);
  if (schedule.getVectorize() && linalgTile.getNumLoops() > 0) {
    // The full tiles of the vector's innermost dimension (the last one
    // tiled by more than 1; usually the domain's innermost) apart from its
    // last, partial tile: their extent is then the tile's, a constant, and
    // their vectors need no mask. A masked store is one instruction on
    // AVX-512 but microcoded `vmaskmovps` on AVX2 (a column sum on a Zen 3:
    // 4.8 GB/s masked, 22 unmasked).
    SmallVector<Operation *> tiles{tile};
    scf::ForOp partial;
    ArrayRef<int64_t> sizes = schedule.getTile();
    auto minor = llvm::find_if(llvm::reverse(sizes),
                               [](int64_t size) { return size > 1; });
    scf::ForOp peeled;
    if (minor != sizes.rend() && loops.size() == sizes.size())
      peeled = dyn_cast<scf::ForOp>(
          loops[std::distance(minor, sizes.rend()) - 1].getOperation());
    std::optional<int64_t> step =
        peeled ? getConstantIntValue(peeled.getStep()) : std::nullopt;
    if (step && *step == *minor &&
        succeeded(scf::peelForLoopAndSimplifyBounds(rewriter, peeled, partial)))
      partial.walk([&](linalg::LinalgOp op) { tiles.push_back(op); });
    // Scalable flags must be given explicitly (one per dimension), or the
    // masks get a vector type unequal to the one transfer ops expect.
    SmallVector<bool> fixedWidth(schedule.getTile().size(), false);
    for (Operation *each : tiles) {
      rewriter.setInsertionPoint(each);
      FailureOr<linalg::VectorizationResult> vectorized =
          linalg::vectorize(rewriter, each, schedule.getTile(), fixedWidth);
      if (failed(vectorized))
        return nest.emitError("cannot vectorize the nest with ") << schedule;
      rewriter.eraseOp(each);
    }
    return success();
  }
  rewriter.setInsertionPoint(tile);
  if (failed(linalg::linalgOpToLoops(rewriter, linalgTile)))
    return nest.emitError("cannot lower the nest to loops");
  rewriter.eraseOp(tile);
  return success();
}

/// Operations a loop may unroll into before LLVM is told not to unroll
/// it (see the pass's description).
constexpr int64_t kMaxUnrolledOps = 512;

/// The most iterations `forOp` runs: its trip count, or for a partial tile
/// (an upper bound `min(16, n - i)`) the bound's constant maximum, which
/// LLVM unrolls to as well; none for a block of the parallel dimension.
std::optional<int64_t> maxTrips(scf::ForOp forOp) {
  if (std::optional<APInt> trips = forOp.getStaticTripCount())
    return trips->getSExtValue();
  std::optional<int64_t> lower = getConstantIntValue(forOp.getLowerBound());
  std::optional<int64_t> step = getConstantIntValue(forOp.getStep());
  if (!lower || !step || *step <= 0)
    return std::nullopt;
  FailureOr<int64_t> upper = ValueBoundsConstraintSet::computeConstantBound(
      presburger::BoundType::UB, forOp.getUpperBound(), nullptr,
      /*closedUB=*/true);
  if (failed(upper))
    return std::nullopt;
  return std::max<int64_t>(0, llvm::divideCeil(*upper + 1 - *lower, *step));
}

/// What `op` costs once, in operations: a vector operation one per
/// 16-lane register it spans, a loop its body times its most iterations
/// (a loop of unknown bound, a block of the parallel dimension, counts
/// once). Marks loops whose unrolled cost exceeds kMaxUnrolledOps.
int64_t unrolledCost(Operation *op, LLVM::LoopAnnotationAttr noUnroll) {
  auto forOp = dyn_cast<scf::ForOp>(op);
  if (!forOp && op->getNumRegions() == 0) {
    int64_t lanes = 1;
    for (Type type :
         llvm::concat<Type>(op->getOperandTypes(), op->getResultTypes()))
      if (auto vector = dyn_cast<VectorType>(type))
        lanes = std::max(lanes, vector.getNumElements());
    return llvm::divideCeil(lanes, 16);
  }
  int64_t body = 0;
  for (Region &region : op->getRegions())
    for (Operation &nested : region.getOps())
      body += unrolledCost(&nested, noUnroll);
  if (!forOp)
    return std::max<int64_t>(body, 1);
  std::optional<int64_t> trips = maxTrips(forOp);
  if (!trips)
    return body;
  int64_t cost = body * *trips;
  if (cost > kMaxUnrolledOps) {
    // Named as llvm.br's own attribute: SCF-to-CF hands LLVM-dialect
    // attributes of an scf.for to its latch branch and CF-to-LLVM keeps
    // them, where the translation makes them !llvm.loop metadata.
    forOp->setAttr("loop_annotation", noUnroll);
    return body;
  }
  return cost;
}

/// Marks the loops of `function` that must not be fully unrolled.
void limitUnrolling(func::FuncOp function) {
  MLIRContext *context = function.getContext();
  auto noUnroll = LLVM::LoopAnnotationAttr::get(
      context, {}, {}, {},
      LLVM::LoopUnrollAttr::get(context, BoolAttr::get(context, true), {}, {},
                                {}, {}, {}, {}),
      {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {});
  for (Operation &op : function.getBody().getOps())
    unrolledCost(&op, noUnroll);
}

/// Upstream's patterns that lower a transfer with a permutation map to a
/// minor-identity transfer and a transpose in registers, then flatten the
/// contiguous transfer: one load or store of a transposed tile's rows.
RewritePatternSet transposedTilePatterns(MLIRContext *context) {
  RewritePatternSet patterns(context);
  vector::populateVectorTransferPermutationMapLoweringPatterns(patterns);
  vector::populateDropUnitDimWithShapeCastPatterns(patterns);
  vector::populateFlattenVectorTransferPatterns(patterns);
  vector::ShapeCastOp::getCanonicalizationPatterns(patterns, context);
  return patterns;
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
  // Buffers the kernel marks as reached by nothing else (its private
  // scratch) keep the mark, which LLVM reads as `noalias`.
  StringRef noAlias = LLVM::LLVMDialect::getNoAliasAttrName();
  for (unsigned i = 0; i < kernel.getNumArguments(); ++i)
    if (kernel.getArgAttr(i, noAlias))
      function.setArgAttr(2 + i, noAlias, UnitAttr::get(context));
  Block *entry = function.addEntryBlock();
  b.setInsertionPointToStart(entry);
  // An empty domain has no point to compute (and its offsets may lie at
  // the end of an axis, where no view can start).
  if (llvm::is_contained(nest.getDomain(), 0)) {
    func::ReturnOp::create(b, loc);
    return success();
  }
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
  auto views = [&](ArrayRef<Value> buffers, ArrayRef<AffineMap> bufferMaps) {
    SmallVector<View> result;
    for (auto [buffer, map] : llvm::zip(buffers, bufferMaps))
      result.push_back(viewOf(b, loc, nest, buffer, map, dim, begin, size));
    return result;
  };
  unsigned numInputs = inputs.size();
  SmallVector<View> inputViews;
  for (auto [i, input] : llvm::enumerate(inputs))
    inputViews.push_back(
        nest.isWrapping(i)
            ? wrappingViewOf(b, loc, nest, input, maps[i], dim, begin, size)
            : viewOf(b, loc, nest, input, maps[i], dim, begin, size));
  SmallVector<View> outputViews =
      views(outputs, ArrayRef(maps).drop_front(numInputs));
  SmallVector<View> allViews(inputViews);
  llvm::append_range(allViews, outputViews);
  View extents = extentsView(b, loc, nest, outputs.front(), allViews);
  linalg::GenericOp generic = buildGeneric(b, nest, inputViews, extents,
                                           outputViews, dim, begin);
  func::ReturnOp::create(b, loc);

  IRRewriter rewriter(context);
  if (failed(applySchedule(rewriter, generic, schedule, nest)))
    return failure();
  // A vector along another dimension than the innermost (tile [16, 1, 1])
  // is computed in the tile's shape, vector<16x1x1xf32>, which LLVM
  // lowers lane by lane: its arithmetic is recast on vector<16xf32>.
  ArrayRef<int64_t> tile = schedule.getTile();
  if (schedule.getVectorize() && !tile.empty() && tile.back() == 1 &&
      llvm::any_of(tile, [](int64_t size) { return size > 1; })) {
    RewritePatternSet patterns(context);
    vector::populateDropUnitDimWithShapeCastPatterns(patterns);
    vector::ShapeCastOp::getCanonicalizationPatterns(patterns, context);
    if (failed(applyPatternsGreedily(function, std::move(patterns))))
      return nest.emitError("cannot drop the unit dimensions of its vectors");
  }
  // A tile written transposed (the phases of a strided input gradient,
  // interleaved along its rows): the transpose in registers, then one
  // contiguous store of the tile's rows, which ConvertVectorToSCF would
  // otherwise write row by row (rows of 2 elements).
  bool permutedWrite = false;
  function.walk([&](vector::TransferWriteOp write) {
    permutedWrite |= !write.getPermutationMap().isMinorIdentity();
  });
  if (permutedWrite) {
    RewritePatternSet patterns = transposedTilePatterns(context);
    if (failed(applyPatternsGreedily(function, std::move(patterns))))
      return nest.emitError("cannot store its transposed tiles");
  }
  // A tile read transposed whose last two dims are the buffer's, its rows
  // read whole (the phases of a strided input, split from its rows): one
  // contiguous load, then the transpose in registers, instead of a load per
  // element. Only those reads and what they become are rewritten.
  SmallVector<Operation *> transposedReads;
  function.walk([&](vector::TransferReadOp read) {
    auto type = dyn_cast<MemRefType>(read.getBase().getType());
    AffineMap map = read.getPermutationMap();
    unsigned rank = map.getNumResults();
    if (!type || !type.hasStaticShape() || rank < 2 || read.getMask() ||
        isa<vector::MaskOp>(read->getParentOp()))
      return;
    unsigned dims = map.getNumDims();
    if (map.getResult(rank - 1) != getAffineDimExpr(dims - 2, context) ||
        map.getResult(rank - 2) != getAffineDimExpr(dims - 1, context) ||
        read.getVectorType().getDimSize(rank - 2) != type.getShape().back())
      return;
    transposedReads.push_back(read);
  });
  if (!transposedReads.empty()) {
    RewritePatternSet patterns = transposedTilePatterns(context);
    GreedyRewriteConfig config;
    config.setStrictness(GreedyRewriteStrictness::ExistingAndNewOps);
    if (failed(applyOpPatternsGreedily(transposedReads, std::move(patterns),
                                       config)))
      return nest.emitError("cannot load its transposed tiles");
  }
  limitUnrolling(function);
  return success();
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
