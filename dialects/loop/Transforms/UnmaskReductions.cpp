//===- UnmaskReductions.cpp - --trainc-unmask-reductions ------------------===//
#include "dialects/loop/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <limits>

namespace trainc::loop {
#define GEN_PASS_DEF_UNMASKREDUCTIONSPASS
#include "dialects/loop/Transforms/Passes.h.inc"
} // namespace trainc::loop

using namespace mlir;

namespace {

/// The value that leaves a floating-point reduction of `kind` unchanged.
std::optional<double> neutralElement(vector::CombiningKind kind) {
  constexpr double infinity = std::numeric_limits<double>::infinity();
  switch (kind) {
  case vector::CombiningKind::ADD:
    return -0.0; // x + -0.0 == x for every x, -0.0 included
  case vector::CombiningKind::MUL:
    return 1.0;
  case vector::CombiningKind::MAXNUMF:
  case vector::CombiningKind::MAXIMUMF:
    return -infinity;
  case vector::CombiningKind::MINNUMF:
  case vector::CombiningKind::MINIMUMF:
    return infinity;
  default:
    return std::nullopt;
  }
}

struct UnmaskReduction : OpRewritePattern<vector::MaskOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(vector::MaskOp mask,
                                PatternRewriter &rewriter) const override {
    auto reduction =
        dyn_cast_or_null<vector::MultiDimReductionOp>(mask.getMaskableOp());
    if (!reduction || mask.hasPassthru())
      return failure();
    auto sourceType = cast<VectorType>(reduction.getSource().getType());
    auto element = dyn_cast<FloatType>(sourceType.getElementType());
    std::optional<double> neutral = neutralElement(reduction.getKind());
    if (!element || !neutral ||
        cast<VectorType>(mask.getMask().getType()).getShape() !=
            sourceType.getShape())
      return failure();
    Location loc = mask.getLoc();
    Value fill = arith::ConstantOp::create(
        rewriter, loc,
        DenseElementsAttr::get(sourceType,
                               rewriter.getFloatAttr(element, *neutral)));
    Value selected = arith::SelectOp::create(rewriter, loc, mask.getMask(),
                                             reduction.getSource(), fill);
    Value unmasked = vector::MultiDimReductionOp::create(
        rewriter, loc, selected, reduction.getAcc(),
        reduction.getReductionMask(), reduction.getKind());
    rewriter.replaceOp(mask, unmasked);
    return success();
  }
};

struct UnmaskReductionsPass
    : trainc::loop::impl::UnmaskReductionsPassBase<UnmaskReductionsPass> {
  using Base::Base;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<UnmaskReduction>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
