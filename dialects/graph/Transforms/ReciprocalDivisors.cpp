//===- ReciprocalDivisors.cpp - --trainc-reciprocal-divisors --------------===//
//
// A float division by a constant becomes a multiplication by the constant's
// reciprocal:
//
//   div(x, constant 1.41421354) -> mul(x, constant 0.707106769)
//
// A vector division costs several multiplications (on Zen 4 one 16-lane
// vdivps takes as long as ~6 vmulps). Exported GELUs divide by sqrt(2),
// attention divides its queries by sqrt(d), and the gradient of each
// divides again. The product is within about 1 ulp of the quotient (the
// reciprocal rounded once, then the product); it is exact when the
// reciprocal is (a power of two). Same as XLA's algebraic simplifier and
// PyTorch's own GELU kernel, which multiplies by M_SQRT1_2.
//
//===----------------------------------------------------------------------===//
#include "dialects/graph/Transforms/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>

namespace trainc::graph {
#define GEN_PASS_DEF_RECIPROCALDIVISORSPASS
#include "dialects/graph/Transforms/Passes.h.inc"
} // namespace trainc::graph

using namespace mlir;
using namespace trainc::graph;

namespace {

/// div(x, splat constant c) -> mul(x, splat constant 1/c), for a float c
/// whose reciprocal is a normal number.
struct DivideByReciprocal : OpRewritePattern<DivOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(DivOp div,
                                PatternRewriter &rewriter) const override {
    auto divisor = div.getRhs().getDefiningOp<ConstantOp>();
    if (!divisor)
      return failure();
    auto value = dyn_cast<DenseFPElementsAttr>(divisor.getValue());
    if (!value || !value.isSplat())
      return failure();
    auto element = cast<FloatType>(value.getElementType());
    double reciprocal = 1.0 / value.getSplatValue<APFloat>().convertToDouble();
    APFloat rounded(reciprocal);
    bool lossy = false;
    rounded.convert(element.getFloatSemantics(), APFloat::rmNearestTiesToEven,
                    &lossy);
    if (!std::isfinite(reciprocal) || !rounded.isNormal())
      return failure();
    auto inverse = DenseElementsAttr::get(value.getType(), rounded);
    Value constant = ConstantOp::create(rewriter, divisor.getLoc(), inverse);
    rewriter.replaceOpWithNewOp<MulOp>(div, div.getType(), div.getLhs(),
                                       constant);
    return success();
  }
};

struct ReciprocalDivisorsPass
    : trainc::graph::impl::ReciprocalDivisorsPassBase<ReciprocalDivisorsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<DivideByReciprocal>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
