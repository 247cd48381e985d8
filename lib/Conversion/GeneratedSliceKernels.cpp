//===- GeneratedSliceKernels.cpp - slices, concatenation, gathers ---------===//
//
// graph.slice, graph.slice_backward and graph.concat as copies whose
// indexing maps do the work: a slice reads element start + step * i of
// each axis, its gradient writes there (into zeros), and the k-th part of
// a concatenation is written at its offset along the axis. The lowering
// turns each such result into a strided view, so forward steps along the
// innermost axis still vectorize; backward steps run as scalar loops.
// Every element is moved as it is (no arithmetic): the results are bit
// for bit the reference's.
//
// graph.gather reads data [A..., S, B...] at positions given by indices
// [I...] along the axis: data-dependent positions, which indexing maps do
// not express. The gather is a reduction over the S positions instead:
//
//   y[a, i, b]  = -0 + sum_v (idx(i) == v ? x[a, v, b] : -0)
//   dx[a, v, b] =  0 + sum_i (idx(i) == v ? dy[a, i, b] : 0)
//
// (idx(i) the index, negative ones counted from the end). Exactly one term
// of the forward is not -0, and x + -0 is x for every x, so the gather is
// exact, signed zeros included; the gradient adds the same terms in the
// reference's order. Both cost S times a copy's work, vectorized along B.
// Indices outside [-S, S) fail the kernel's loop.check, with the
// reference's message.
//
//===----------------------------------------------------------------------===//
#include "lib/Conversion/KernelBuilder.h"

namespace trainc::conversion {
namespace {

/// The identity map of `rank` dimensions, with result `axis` replaced by
/// `step * d + offset`.
AffineMap shifted(MLIRContext *context, unsigned rank, ArrayRef<int64_t> steps,
                  ArrayRef<int64_t> offsets) {
  SmallVector<AffineExpr> results;
  for (unsigned d = 0; d < rank; ++d)
    results.push_back(getAffineDimExpr(d, context) * steps[d] + offsets[d]);
  return AffineMap::get(rank, 0, results, context);
}

SmallVector<Value> copyBody(OpBuilder &, Location, ValueRange x) {
  return {x[0]};
}

/// The slice's starts and steps, checked against the sliced (`full`) and
/// selected (`part`) shapes.
LogicalResult sliceGeometry(KernelBuilder &kb, ArrayRef<int64_t> full,
                            ArrayRef<int64_t> part,
                            SmallVector<int64_t> &starts,
                            SmallVector<int64_t> &steps) {
  starts.assign(kb.integers("starts").begin(), kb.integers("starts").end());
  steps.assign(kb.integers("steps").begin(), kb.integers("steps").end());
  if (starts.size() != full.size() || steps.size() != full.size() ||
      part.size() != full.size())
    return kb.launch.emitError("the generated ")
           << kb.launch.getKernel() << " needs one start and step per dim";
  return success();
}

} // namespace

/// graph.slice; with `perm` (--trainc-fold-slice-transposes), the
/// transpose of the slice: output axis a is the window's axis perm[a], the
/// input seen as `source_shape` and the window given by `starts` and
/// `ends` on those dims.
LogicalResult buildSlice(KernelBuilder &kb) {
  ArrayRef<int64_t> perm = kb.integers("perm");
  SmallVector<int64_t> full(perm.empty() ? kb.inputType(0).getShape()
                                         : kb.integers("source_shape"));
  SmallVector<int64_t> part(kb.outputType(0).getShape());
  if (!perm.empty()) {
    ArrayRef<int64_t> starts = kb.integers("starts"),
                      ends = kb.integers("ends");
    SmallVector<int64_t> sorted(perm);
    llvm::sort(sorted);
    if (starts.size() != full.size() || ends.size() != full.size() ||
        perm.size() != full.size() ||
        !llvm::equal(sorted, llvm::seq<int64_t>(0, full.size())))
      return kb.launch.emitError("a permuted slice needs its source shape, "
                                 "window and permutation on one rank");
    part.clear();
    for (auto [start, end] : llvm::zip(starts, ends))
      part.push_back(end - start);
  }
  SmallVector<int64_t> starts, steps;
  if (failed(sliceGeometry(kb, full, part, starts, steps)))
    return failure();
  MLIRContext *context = kb.builder.getContext();
  unsigned rank = part.size();
  SmallVector<int64_t> ones(rank, 1), zeros(rank, 0);
  if (perm.empty()) {
    kb.nest(part, SmallVector<bool>(rank, false), {kb.input(0, full)},
            {kb.output(0, part)},
            {shifted(context, rank, steps, starts),
             shifted(context, rank, ones, zeros)},
            copyBody);
    return success();
  }
  // Over the output's dims: input dim k is read at output dim inverse[k].
  SmallVector<int64_t> output, inverse(rank);
  SmallVector<AffineExpr> reads(rank);
  for (auto [axis, source] : llvm::enumerate(perm)) {
    output.push_back(part[source]);
    inverse[source] = axis;
  }
  for (unsigned k = 0; k < rank; ++k)
    reads[k] = getAffineDimExpr(inverse[k], context) * steps[k] + starts[k];
  kb.nest(output, SmallVector<bool>(rank, false), {kb.input(0, full)},
          {kb.output(0, output)},
          {AffineMap::get(rank, 0, reads, context),
           shifted(context, rank, ones, zeros)},
          copyBody);
  return success();
}

namespace {
/// The gradient of a slice that keeps its leading dims whole and one
/// position of each trailing dim (a convolution weight's live centre tap)
/// in one pass: the output as [rows, taps], each row's one live tap taken
/// from the gradient and the others zero. Fills and then scatters
/// otherwise, where a strided scatter runs as scalar loops; this writes
/// every element once, contiguously. Whether it applied.
bool buildTapGradient(KernelBuilder &kb, ArrayRef<int64_t> part,
                      ArrayRef<int64_t> full, ArrayRef<int64_t> starts,
                      ArrayRef<int64_t> steps) {
  size_t rank = full.size(), split = 0;
  while (split < rank && part[split] == full[split] && starts[split] == 0 &&
         steps[split] == 1)
    ++split;
  int64_t rows = 1, taps = 1, live = 0;
  for (size_t d = 0; d < rank; ++d) {
    if (d < split) {
      rows *= full[d];
      continue;
    }
    if (part[d] != 1)
      return false;
    taps *= full[d];
    live = live * full[d] + starts[d];
  }
  if (taps == 1)
    return false;
  MLIRContext *context = kb.builder.getContext();
  kb.nest({rows, taps}, {false, false}, {kb.input(0, {rows})},
          {kb.output(0, {rows, taps})},
          {mapOf(context, 2, {affineDim(context, 0)}),
           mapOf(context, 2, {affineDim(context, 0), affineDim(context, 1)})},
          [&](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
            Value isLive = arith::CmpIOp::create(
                b, loc, arith::CmpIPredicate::eq,
                loop::IndexOp::create(b, loc, 1),
                arith::ConstantIndexOp::create(b, loc, live));
            return {arith::SelectOp::create(
                b, loc, isLive, x[0], constant(b, loc, x[0].getType(), 0.0))};
          });
  return true;
}
} // namespace

LogicalResult buildSliceBackward(KernelBuilder &kb) {
  ArrayRef<int64_t> part = kb.inputType(0).getShape();
  ArrayRef<int64_t> full = kb.outputType(0).getShape();
  SmallVector<int64_t> starts, steps;
  if (failed(sliceGeometry(kb, full, part, starts, steps)))
    return failure();
  if (buildTapGradient(kb, part, full, starts, steps))
    return success();
  MLIRContext *context = kb.builder.getContext();
  unsigned rank = part.size();
  Space whole(full);
  Operand gradInput{kb.output(0, full),
                    whole.addAllBut([](unsigned) { return false; })};
  kb.fill(whole, gradInput, 0.0);
  SmallVector<int64_t> ones(rank, 1), zeros(rank, 0);
  kb.nest(part, SmallVector<bool>(rank, false), {kb.input(0, part)},
          {gradInput.buffer},
          {shifted(context, rank, ones, zeros),
           shifted(context, rank, steps, starts)},
          copyBody);
  return success();
}

namespace {
/// graph.concat with `perms` (--trainc-fold-concat-transposes): input i,
/// seen as its slice of `source_shapes`, permuted by its slice of `perms`
/// (window axis j reads the input's axis perm[j]), into its window of the
/// output seen as `output_shape`, along `axis`.
LogicalResult buildPermutedConcat(KernelBuilder &kb, int64_t axis) {
  ArrayRef<int64_t> shape = kb.integers("output_shape");
  ArrayRef<int64_t> shapes = kb.integers("source_shapes");
  ArrayRef<int64_t> perms = kb.integers("perms");
  size_t rank = shape.size(), numInputs = kb.launch.getInputs().size();
  if (rank == 0 || axis >= int64_t(rank) || shapes.size() != rank * numInputs ||
      perms.size() != rank * numInputs)
    return kb.launch.emitError("a permuted concat needs its output shape, "
                               "and a source shape and permutation of that "
                               "rank per input");
  MLIRContext *context = kb.builder.getContext();
  Value output = kb.output(0, shape);
  SmallVector<int64_t> offsets(rank, 0), ones(rank, 1);
  for (size_t i = 0; i < numInputs; ++i) {
    ArrayRef<int64_t> source = shapes.slice(i * rank, rank);
    ArrayRef<int64_t> perm = perms.slice(i * rank, rank);
    SmallVector<int64_t> window;
    SmallVector<AffineExpr> reads(rank);
    for (auto [j, k] : llvm::enumerate(perm)) {
      if (k < 0 || k >= int64_t(rank) || reads[k])
        return kb.launch.emitError("a permuted concat's perms must permute "
                                   "each input's dims");
      window.push_back(source[k]);
      reads[k] = getAffineDimExpr(j, context);
    }
    kb.nest(window, SmallVector<bool>(rank, false), {kb.input(i, source)},
            {output},
            {AffineMap::get(rank, 0, reads, context),
             shifted(context, rank, ones, offsets)},
            copyBody);
    offsets[axis] += window[axis];
  }
  return success();
}
} // namespace

LogicalResult buildConcat(KernelBuilder &kb) {
  std::optional<int64_t> axis = kb.integer("axis");
  if (axis && *axis >= 0 && !kb.integers("perms").empty())
    return buildPermutedConcat(kb, *axis);
  ArrayRef<int64_t> shape = kb.outputType(0).getShape();
  unsigned rank = shape.size();
  if (!axis || *axis < 0 || *axis >= static_cast<int64_t>(rank))
    return kb.launch.emitError("the generated graph.concat needs an axis of "
                               "its rank-")
           << rank << " output";
  MLIRContext *context = kb.builder.getContext();
  unsigned numInputs = kb.launch.getInputs().size();
  Value output = kb.output(0, shape);
  SmallVector<int64_t> ones(rank, 1), zeros(rank, 0), offsets(rank, 0);
  for (unsigned i = 0; i < numInputs; ++i) {
    ArrayRef<int64_t> part = kb.inputType(i).getShape();
    kb.nest(part, SmallVector<bool>(rank, false), {kb.input(i, part)}, {output},
            {shifted(context, rank, ones, zeros),
             shifted(context, rank, ones, offsets)},
            copyBody);
    offsets[*axis] += part[*axis];
  }
  return success();
}

namespace {

/// The shapes of a gather along `axis` of data `dataShape` by `indices`.
struct Gather {
  unsigned axis = 0;
  int64_t size = 0;
  SmallVector<int64_t> outer, indices, inner;
};

FailureOr<Gather> gatherGeometry(KernelBuilder &kb, ArrayRef<int64_t> data,
                                 MemRefType indices) {
  std::optional<int64_t> axis = kb.integer("axis");
  if (!axis || *axis < 0 || *axis >= static_cast<int64_t>(data.size()) ||
      data[*axis] < 1 ||
      !(indices.getElementType().isInteger(64) ||
        indices.getElementType().isInteger(32)))
    return kb.launch.emitError("the generated ")
           << kb.launch.getKernel()
           << " needs an axis of the data, of size at least 1, and i64 or "
              "i32 indices";
  Gather g;
  g.axis = *axis;
  g.size = data[*axis];
  g.outer.assign(data.begin(), data.begin() + *axis);
  g.indices.assign(indices.getShape().begin(), indices.getShape().end());
  g.inner.assign(data.begin() + *axis + 1, data.end());
  return g;
}

/// The kernel's check of `indices`: in [-size, size).
void checkIndices(KernelBuilder &kb, Value indices, int64_t size) {
  checkFirstInvalid(
      kb, indices,
      "index {} is out of range for a dim of size " + std::to_string(size),
      [&](OpBuilder &b, Location loc, Value index) -> Value {
        Value shifted = arith::AddIOp::create(
            b, loc, index, arith::ConstantIntOp::create(b, loc, size, 64));
        // Unsigned: negative sums are out of range too.
        return arith::CmpIOp::create(
            b, loc, arith::CmpIPredicate::uge, shifted,
            arith::ConstantIntOp::create(b, loc, 2 * size, 64));
      });
}

/// Whether the index `index` (i64 or i32) names position `position` (an
/// index) of a dim of `size`.
Value namesPosition(OpBuilder &b, Location loc, Value index, Value position,
                    int64_t size) {
  Type i64 = b.getI64Type();
  if (index.getType() != i64)
    index = arith::ExtSIOp::create(b, loc, i64, index);
  Value negative =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, index,
                            arith::ConstantIntOp::create(b, loc, 0, 64));
  Value wrapped = arith::SelectOp::create(
      b, loc, negative,
      arith::AddIOp::create(b, loc, index,
                            arith::ConstantIntOp::create(b, loc, size, 64)),
      index);
  return arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::eq, wrapped,
      arith::IndexCastOp::create(b, loc, i64, position));
}

/// A map over `numDims` dimensions taking `dims`.
AffineMap dimsMap(MLIRContext *context, unsigned numDims,
                  ArrayRef<unsigned> dims) {
  SmallVector<AffineExpr> results;
  for (unsigned d : dims)
    results.push_back(getAffineDimExpr(d, context));
  return AffineMap::get(numDims, 0, results, context);
}

} // namespace

LogicalResult buildGather(KernelBuilder &kb) {
  FailureOr<Gather> g =
      gatherGeometry(kb, kb.inputType(0).getShape(), kb.inputType(1));
  if (failed(g))
    return failure();
  MLIRContext *context = kb.builder.getContext();
  Value data = kb.input(0, kb.inputType(0).getShape());
  Value indices = kb.input(1, g->indices);
  Value output = kb.output(0, kb.outputType(0).getShape());
  checkIndices(kb, indices, g->size);
  Space whole(kb.outputType(0).getShape());
  kb.fill(whole, {output, whole.addAllBut([](unsigned) { return false; })},
          -0.0);

  // Domain (a..., i..., v, b...): v, the data's position, is the reduction.
  unsigned numOuter = g->outer.size(), numIndices = g->indices.size(),
           numInner = g->inner.size();
  SmallVector<int64_t> domain(g->outer);
  llvm::append_range(domain, g->indices);
  domain.push_back(g->size);
  llvm::append_range(domain, g->inner);
  unsigned position = numOuter + numIndices, n = domain.size();
  SmallVector<bool> reduction(n, false);
  reduction[position] = true;
  SmallVector<unsigned> dataDims, indexDims, outputDims;
  for (unsigned d = 0; d < n; ++d) {
    bool isIndex = d >= numOuter && d < position;
    if (!isIndex)
      dataDims.push_back(d);
    if (isIndex)
      indexDims.push_back(d);
    if (d != position)
      outputDims.push_back(d);
  }
  int64_t size = g->size;
  loop::NestOp nest = kb.nest(
      domain, reduction, {data, indices}, {output},
      {dimsMap(context, n, dataDims), dimsMap(context, n, indexDims),
       dimsMap(context, n, outputDims)},
      [&](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
        Value hit = namesPosition(
            b, loc, x[1], loop::IndexOp::create(b, loc, position), size);
        Value term = arith::SelectOp::create(
            b, loc, hit, x[0], constant(b, loc, x[0].getType(), -0.0));
        return {arith::AddFOp::create(b, loc, x[2], term)};
      });
  // Along the axis itself (no B), vectors would sum the positions as a
  // tree whose masked lanes add +0: -0 could come out +0. Scalar loops
  // add in order.
  if (numInner == 0) {
    loop::ScheduleAttr schedule = nest.getSchedule();
    nest.setScheduleAttr(loop::ScheduleAttr::get(
        context, schedule.getParallel(), schedule.getTile(), false));
  }
  return success();
}

LogicalResult buildGatherBackward(KernelBuilder &kb) {
  ArrayRef<int64_t> dataShape = kb.integers("data_shape");
  FailureOr<Gather> g = gatherGeometry(kb, dataShape, kb.inputType(1));
  if (failed(g))
    return failure();
  MLIRContext *context = kb.builder.getContext();
  Value gradOutput = kb.input(0, kb.inputType(0).getShape());
  Value indices = kb.input(1, g->indices);
  Value gradData = kb.output(0, dataShape);
  checkIndices(kb, indices, g->size);
  Space whole(dataShape);
  kb.fill(whole, {gradData, whole.addAllBut([](unsigned) { return false; })},
          0.0);

  // Domain (a..., v, i..., b...): the gathered positions i are the
  // reductions, in the reference's order.
  unsigned numOuter = g->outer.size(), numIndices = g->indices.size();
  SmallVector<int64_t> domain(g->outer);
  domain.push_back(g->size);
  llvm::append_range(domain, g->indices);
  llvm::append_range(domain, g->inner);
  unsigned position = numOuter, n = domain.size();
  SmallVector<bool> reduction(n, false);
  SmallVector<unsigned> gradDims, indexDims, dataDims;
  for (unsigned d = 0; d < n; ++d) {
    bool isIndex = d > position && d <= position + numIndices;
    reduction[d] = isIndex;
    if (d != position)
      gradDims.push_back(d);
    if (isIndex)
      indexDims.push_back(d);
    else
      dataDims.push_back(d);
  }
  int64_t size = g->size;
  kb.nest(domain, reduction, {gradOutput, indices}, {gradData},
          {dimsMap(context, n, gradDims), dimsMap(context, n, indexDims),
           dimsMap(context, n, dataDims)},
          [&](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
            Value hit = namesPosition(
                b, loc, x[1], loop::IndexOp::create(b, loc, position), size);
            Value term = arith::SelectOp::create(
                b, loc, hit, x[0], constant(b, loc, x[0].getType(), 0.0));
            return {arith::AddFOp::create(b, loc, x[2], term)};
          });
  return success();
}

namespace {

/// The axis of a gather_elements over data `data` by `indices` (of the
/// data's rank, at most its extents off the axis, i64 or i32).
FailureOr<unsigned> gatherElementsAxis(KernelBuilder &kb,
                                       ArrayRef<int64_t> data,
                                       MemRefType indices) {
  std::optional<int64_t> axis = kb.integer("axis");
  bool valid = axis && *axis >= 0 &&
               *axis < static_cast<int64_t>(data.size()) && data[*axis] >= 1 &&
               indices.getRank() == int64_t(data.size()) &&
               (indices.getElementType().isInteger(64) ||
                indices.getElementType().isInteger(32));
  for (unsigned d = 0; valid && d < data.size(); ++d)
    valid = int64_t(d) == *axis || indices.getDimSize(d) <= data[d];
  if (!valid)
    return kb.launch.emitError("the generated ")
           << kb.launch.getKernel()
           << " needs i64 or i32 indices of the data's rank, within its "
              "extents off an axis of size at least 1";
  return static_cast<unsigned>(*axis);
}

} // namespace

// gather_elements picks, like gather, by a sum over the axis's positions of
// the one that the index names (no data-dependent addressing in the loop
// dialect); sums run in order (scalar loops), so a picked -0 stays -0.
LogicalResult buildGatherElements(KernelBuilder &kb) {
  ArrayRef<int64_t> dataShape = kb.inputType(0).getShape();
  FailureOr<unsigned> axis = gatherElementsAxis(kb, dataShape, kb.inputType(1));
  if (failed(axis))
    return failure();
  ArrayRef<int64_t> shape = kb.inputType(1).getShape();
  MLIRContext *context = kb.builder.getContext();
  int64_t size = dataShape[*axis];
  Value data = kb.input(0, dataShape);
  Value indices = kb.input(1, shape);
  Value output = kb.output(0, shape);
  checkIndices(kb, indices, size);
  Space whole(shape);
  kb.fill(whole, {output, whole.addAllBut([](unsigned) { return false; })},
          -0.0);
  // Domain (p..., v): v, the data's position along the axis, is reduced.
  unsigned rank = shape.size(), n = rank + 1;
  SmallVector<int64_t> domain(shape);
  domain.push_back(size);
  SmallVector<bool> reduction(n, false);
  reduction[rank] = true;
  SmallVector<unsigned> dataDims, pointDims;
  for (unsigned d = 0; d < rank; ++d) {
    dataDims.push_back(d == *axis ? rank : d);
    pointDims.push_back(d);
  }
  loop::NestOp nest = kb.nest(
      domain, reduction, {data, indices}, {output},
      {dimsMap(context, n, dataDims), dimsMap(context, n, pointDims),
       dimsMap(context, n, pointDims)},
      [&](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
        Value hit = namesPosition(b, loc, x[1],
                                  loop::IndexOp::create(b, loc, rank), size);
        Value term = arith::SelectOp::create(
            b, loc, hit, x[0], constant(b, loc, x[0].getType(), -0.0));
        return {arith::AddFOp::create(b, loc, x[2], term)};
      });
  loop::ScheduleAttr schedule = nest.getSchedule();
  nest.setScheduleAttr(loop::ScheduleAttr::get(context, schedule.getParallel(),
                                               schedule.getTile(), false));
  return success();
}

LogicalResult buildGatherElementsBackward(KernelBuilder &kb) {
  ArrayRef<int64_t> dataShape = kb.integers("data_shape");
  FailureOr<unsigned> axis = gatherElementsAxis(kb, dataShape, kb.inputType(1));
  if (failed(axis))
    return failure();
  ArrayRef<int64_t> shape = kb.inputType(1).getShape();
  MLIRContext *context = kb.builder.getContext();
  int64_t size = dataShape[*axis];
  Value gradOutput = kb.input(0, shape);
  Value indices = kb.input(1, shape);
  Value gradData = kb.output(0, dataShape);
  checkIndices(kb, indices, size);
  Space whole(dataShape);
  kb.fill(whole, {gradData, whole.addAllBut([](unsigned) { return false; })},
          0.0);
  // Domain (q..., j): q over the data the indices reach (the whole axis,
  // the indices' extents off it), j over the indices along the axis,
  // reduced in index order.
  unsigned rank = shape.size(), n = rank + 1;
  SmallVector<int64_t> domain;
  for (unsigned d = 0; d < rank; ++d)
    domain.push_back(d == *axis ? size : shape[d]);
  domain.push_back(shape[*axis]);
  SmallVector<bool> reduction(n, false);
  reduction[rank] = true;
  SmallVector<unsigned> pickDims, dataDims;
  for (unsigned d = 0; d < rank; ++d) {
    pickDims.push_back(d == *axis ? rank : d);
    dataDims.push_back(d);
  }
  unsigned position = *axis;
  kb.nest(domain, reduction, {gradOutput, indices}, {gradData},
          {dimsMap(context, n, pickDims), dimsMap(context, n, pickDims),
           dimsMap(context, n, dataDims)},
          [&](OpBuilder &b, Location loc, ValueRange x) -> SmallVector<Value> {
            Value hit = namesPosition(
                b, loc, x[1], loop::IndexOp::create(b, loc, position), size);
            Value term = arith::SelectOp::create(
                b, loc, hit, x[0], constant(b, loc, x[0].getType(), 0.0));
            return {arith::AddFOp::create(b, loc, x[2], term)};
          });
  return success();
}

} // namespace trainc::conversion
