//===- MergeSliceGradients.cpp - --trainc-merge-slice-gradients -----------===//
//
// A tensor cut into adjacent slices (a fused QKV projection split into
// queries, keys and values) gets its gradient as a sum of slice_backwards,
// each a full-size tensor of zeros around one slice:
//
//   add(slice_backward(dq, [0:128]), slice_backward(dk, [128:256]))
//     -> slice_backward(concat(dq, dk), [0:256])
//
// and a slice_backward covering the whole tensor is its gradient itself,
// so the three-way sum becomes concat(dq, dk, dv): one copy instead of
// three zero-filled tensors and two additions.
//
//===----------------------------------------------------------------------===//
#include "dialects/graph/Transforms/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace trainc::graph {
#define GEN_PASS_DEF_MERGESLICEGRADIENTSPASS
#include "dialects/graph/Transforms/Passes.h.inc"
} // namespace trainc::graph

using namespace mlir;
using namespace trainc::graph;

namespace {

bool unitSteps(SliceBackwardOp op) {
  return llvm::all_of(op.getSteps(), [](int64_t step) { return step == 1; });
}

/// The one axis where `a` and `b` slice different ranges, if `a`'s range
/// there ends where `b`'s begins and they slice the same range elsewhere.
std::optional<size_t> adjacentAxis(SliceBackwardOp a, SliceBackwardOp b) {
  std::optional<size_t> axis;
  for (size_t d = 0; d < a.getStarts().size(); ++d) {
    if (a.getStarts()[d] == b.getStarts()[d] &&
        a.getEnds()[d] == b.getEnds()[d])
      continue;
    if (axis || a.getEnds()[d] != b.getStarts()[d])
      return std::nullopt;
    axis = d;
  }
  return axis;
}

/// add(slice_backward(x), slice_backward(y)) over adjacent ranges ->
/// slice_backward(concat(x, y)).
struct MergeAdjacent : OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AddOp add,
                                PatternRewriter &rewriter) const override {
    auto lhs = add.getLhs().getDefiningOp<SliceBackwardOp>();
    auto rhs = add.getRhs().getDefiningOp<SliceBackwardOp>();
    if (!lhs || !rhs || lhs == rhs || !lhs->hasOneUse() || !rhs->hasOneUse() ||
        lhs.getInputShape() != rhs.getInputShape() || !unitSteps(lhs) ||
        !unitSteps(rhs) || lhs.getType() != add.getType() ||
        rhs.getType() != add.getType())
      return failure();
    SliceBackwardOp first = lhs, second = rhs;
    std::optional<size_t> axis = adjacentAxis(first, second);
    if (!axis) {
      std::swap(first, second);
      axis = adjacentAxis(first, second);
    }
    if (!axis)
      return failure();
    Value joined = ConcatOp::create(
        rewriter, add.getLoc(),
        ValueRange{first.getGradOutput(), second.getGradOutput()},
        static_cast<int64_t>(*axis));
    SmallVector<int64_t> ends(first.getEnds());
    ends[*axis] = second.getEnds()[*axis];
    rewriter.replaceOpWithNewOp<SliceBackwardOp>(
        add, joined, first.getInputShape(), first.getStarts(), ends,
        first.getSteps());
    rewriter.eraseOp(lhs);
    rewriter.eraseOp(rhs);
    return success();
  }
};

/// A slice_backward of the whole tensor is its gradient itself.
struct DropWhole : OpRewritePattern<SliceBackwardOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(SliceBackwardOp op,
                                PatternRewriter &rewriter) const override {
    if (op.getGradOutput().getType() != op.getType() || !unitSteps(op))
      return failure();
    rewriter.replaceOp(op, op.getGradOutput());
    return success();
  }
};

/// concat(concat(a, b), c) along one axis -> concat(a, b, c).
struct FlattenConcat : OpRewritePattern<ConcatOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ConcatOp op,
                                PatternRewriter &rewriter) const override {
    SmallVector<Value> inputs;
    bool changed = false;
    for (Value input : op.getInputs()) {
      auto inner = input.getDefiningOp<ConcatOp>();
      if (inner && inner.getAxis() == op.getAxis() && inner->hasOneUse()) {
        llvm::append_range(inputs, inner.getInputs());
        changed = true;
      } else {
        inputs.push_back(input);
      }
    }
    if (!changed)
      return failure();
    rewriter.replaceOpWithNewOp<ConcatOp>(op, inputs, op.getAxis());
    return success();
  }
};

struct MergeSliceGradientsPass
    : trainc::graph::impl::MergeSliceGradientsPassBase<
          MergeSliceGradientsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<MergeAdjacent, DropWhole, FlattenConcat>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
