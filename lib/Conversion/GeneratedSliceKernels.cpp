//===- GeneratedSliceKernels.cpp - slices and concatenation ---------------===//
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

LogicalResult buildSlice(KernelBuilder &kb) {
  ArrayRef<int64_t> full = kb.inputType(0).getShape();
  ArrayRef<int64_t> part = kb.outputType(0).getShape();
  SmallVector<int64_t> starts, steps;
  if (failed(sliceGeometry(kb, full, part, starts, steps)))
    return failure();
  MLIRContext *context = kb.builder.getContext();
  unsigned rank = part.size();
  SmallVector<int64_t> ones(rank, 1), zeros(rank, 0);
  kb.nest(part, SmallVector<bool>(rank, false), {kb.input(0, full)},
          {kb.output(0, part)},
          {shifted(context, rank, steps, starts),
           shifted(context, rank, ones, zeros)},
          copyBody);
  return success();
}

LogicalResult buildSliceBackward(KernelBuilder &kb) {
  ArrayRef<int64_t> part = kb.inputType(0).getShape();
  ArrayRef<int64_t> full = kb.outputType(0).getShape();
  SmallVector<int64_t> starts, steps;
  if (failed(sliceGeometry(kb, full, part, starts, steps)))
    return failure();
  MLIRContext *context = kb.builder.getContext();
  unsigned rank = part.size();
  Space whole(full);
  Operand gradInput{kb.output(0, full), whole.addAllBut([](unsigned) {
                      return false;
                    })};
  kb.fill(whole, gradInput, 0.0);
  SmallVector<int64_t> ones(rank, 1), zeros(rank, 0);
  kb.nest(part, SmallVector<bool>(rank, false), {kb.input(0, part)},
          {gradInput.buffer},
          {shifted(context, rank, ones, zeros),
           shifted(context, rank, steps, starts)},
          copyBody);
  return success();
}

LogicalResult buildConcat(KernelBuilder &kb) {
  std::optional<int64_t> axis = kb.integer("axis");
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

} // namespace trainc::conversion
