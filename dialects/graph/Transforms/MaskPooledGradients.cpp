//===- MaskPooledGradients.cpp - --trainc-mask-pooled-gradients -----------===//
//
// A ReLU before a max pooling gets, in the backward pass, the gradient the
// pooling routed back masked by the ReLU:
//
//   d  = max_pool_backward(g, y)          // y = relu(x), the pool's input
//   dx = where(greater(y or x, 0), d, 0)
//
// max_pool_backward sends each window's gradient to one element whose
// value is the window's maximum, which is that window's pooled value p. So
// the mask can be applied per window, to g, before the routing:
//
//   dx = max_pool_backward(where(greater(p, 0), g, 0), y),  p = max_pool(y)
//
// The same values reach the same elements, summed in the same order
// (overlapping windows that route to one element see the same mask); the
// masked tensor is the pooled one, a window's size smaller (4x for 2x2).
//
//===----------------------------------------------------------------------===//
#include "dialects/graph/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

namespace trainc::graph {
#define GEN_PASS_DEF_MASKPOOLEDGRADIENTSPASS
#include "dialects/graph/Transforms/Passes.h.inc"
} // namespace trainc::graph

using namespace mlir;
using namespace trainc::graph;

namespace {

/// Whether `value` is a constant of float zeros (+0).
bool isZero(Value value) {
  auto constant = value.getDefiningOp<ConstantOp>();
  if (!constant)
    return false;
  auto elements = dyn_cast<DenseFPElementsAttr>(constant.getValue());
  return elements && elements.isSplat() &&
         elements.getSplatValue<APFloat>().isPosZero();
}

/// Rewrites one where if it masks a max pooling's gradient by its input's
/// sign; whether it did.
bool maskPooledGradient(WhereOp where) {
  auto greater = where.getCondition().getDefiningOp<GreaterOp>();
  auto routed = where.getLhs().getDefiningOp<MaxPoolBackwardOp>();
  if (!greater || !routed || !isZero(greater.getRhs()) ||
      !isZero(where.getRhs()) || !routed->hasOneUse() ||
      where.getType() != routed.getType())
    return false;
  // The mask reads the pool's input y, or x where y = relu(x): x > 0 iff
  // relu(x) > 0.
  Value input = routed.getInput();
  Value tested = greater.getLhs();
  auto relu = input.getDefiningOp<ReluOp>();
  if (tested != input && !(relu && tested == relu.getInput()))
    return false;
  OpBuilder b(where);
  Location loc = where.getLoc();
  Value pooled = MaxPoolOp::create(b, loc, input, routed.getKernelShape(),
                                   routed.getStrides(), routed.getPads(),
                                   routed.getDilations(), routed.getCeilMode());
  if (cast<RankedTensorType>(pooled.getType()).getShape() !=
      cast<RankedTensorType>(routed.getGradOutput().getType()).getShape()) {
    pooled.getDefiningOp()->erase();
    return false;
  }
  Value mask = GreaterOp::create(b, loc, pooled, greater.getRhs());
  Value masked =
      WhereOp::create(b, loc, mask, routed.getGradOutput(), where.getRhs());
  Value result = MaxPoolBackwardOp::create(
      b, loc, masked, input, routed.getKernelShape(), routed.getStrides(),
      routed.getPads(), routed.getDilations(), routed.getCeilMode());
  where.getOutput().replaceAllUsesWith(result);
  where.erase();
  routed.erase();
  if (greater->use_empty())
    greater.erase();
  return true;
}

struct MaskPooledGradientsPass
    : trainc::graph::impl::MaskPooledGradientsPassBase<
          MaskPooledGradientsPass> {
  void runOnOperation() override {
    SmallVector<WhereOp> candidates;
    getOperation().walk([&](WhereOp where) { candidates.push_back(where); });
    for (WhereOp where : candidates)
      maskPooledGradient(where);
  }
};

} // namespace
