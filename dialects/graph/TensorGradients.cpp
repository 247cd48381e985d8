//===- TensorGradients.cpp - gradients of data-movement ops ---------------===//
#include "dialects/graph/GradientBuilder.h"

using namespace mlir;
using namespace trainc::graph;

static ArrayRef<int64_t> shapeOf(Value value) {
  return cast<RankedTensorType>(value.getType()).getShape();
}

LogicalResult ReshapeOp::buildGradients(OpBuilder &builder, ValueRange grads,
                                        SmallVectorImpl<Value> &out) {
  GradientBuilder b(builder, getLoc());
  out.push_back(b.reshape(grads[0], shapeOf(getInput())));
  return success();
}

LogicalResult TransposeOp::buildGradients(OpBuilder &builder, ValueRange grads,
                                          SmallVectorImpl<Value> &out) {
  GradientBuilder b(builder, getLoc());
  ArrayRef<int64_t> perm = getPerm();
  SmallVector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i)
    inverse[perm[i]] = i;
  out.push_back(b.transpose(grads[0], inverse));
  return success();
}

LogicalResult ExpandOp::buildGradients(OpBuilder &builder, ValueRange grads,
                                       SmallVectorImpl<Value> &out) {
  GradientBuilder b(builder, getLoc());
  out.push_back(b.reduceTo(grads[0], getInput().getType()));
  return success();
}

LogicalResult ConcatOp::buildGradients(OpBuilder &builder, ValueRange grads,
                                       SmallVectorImpl<Value> &out) {
  GradientBuilder b(builder, getLoc());
  ArrayRef<int64_t> full = shapeOf(getOutput());
  int64_t axis = getAxis(), offset = 0;
  for (Value input : getInputs()) {
    SmallVector<int64_t> starts(full.size(), 0), ends(full), steps(full.size(), 1);
    starts[axis] = offset;
    offset += shapeOf(input)[axis];
    ends[axis] = offset;
    out.push_back(SliceOp::create(builder, getLoc(), grads[0], starts, ends, steps));
  }
  return success();
}

LogicalResult SliceOp::buildGradients(OpBuilder &builder, ValueRange grads,
                                      SmallVectorImpl<Value> &out) {
  out.push_back(SliceBackwardOp::create(builder, getLoc(), grads[0],
                                        shapeOf(getInput()), getStarts(),
                                        getEnds(), getSteps()));
  return success();
}

LogicalResult GatherElementsOp::buildGradients(OpBuilder &builder,
                                               ValueRange grads,
                                               SmallVectorImpl<Value> &out) {
  bool floating = isa<FloatType>(getElementTypeOrSelf(getData().getType()));
  out.push_back(floating ? Value(GatherElementsBackwardOp::create(
                               builder, getLoc(), grads[0], getIndices(),
                               shapeOf(getData()), getAxis()))
                         : Value());
  out.push_back(Value()); // indices
  return success();
}

LogicalResult GatherOp::buildGradients(OpBuilder &builder, ValueRange grads,
                                       SmallVectorImpl<Value> &out) {
  bool floating = isa<FloatType>(getElementTypeOrSelf(getData().getType()));
  out.push_back(floating ? Value(GatherBackwardOp::create(
                               builder, getLoc(), grads[0], getIndices(),
                               shapeOf(getData()), getAxis()))
                         : Value());
  out.push_back(Value()); // indices
  return success();
}
