//===- ApproximateMath.cpp - --trainc-approximate-math --------------------===//
#include "dialects/loop/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/STLExtras.h"

namespace trainc::loop {
#define GEN_PASS_DEF_APPROXIMATEMATHPASS
#include "dialects/loop/Transforms/Passes.h.inc"
} // namespace trainc::loop

using namespace mlir;

namespace {
/// f32 erf in two pieces, both computed and one selected, no division:
///   |x| < 1:  x P(x^2), P of degree 6 (erf's odd series, refitted);
///   |x| >= 1: sign(x) (1 - Q(min(|x|, 4) - 2.5)), Q of degree 12 fitted
///             to erfc on [1, 4] (erf rounds to +-1 in f32 beyond 4).
/// Upstream's approximation selects the coefficients of three intervals
/// by compares and blends, twice the instructions; a GELU's forward pass
/// was compute-bound on it. Writing the tail as 1 - erfc keeps its error
/// absolute and small where GELU's 1 + erf(x) cancels (x < -2). Fitted
/// (least squares, reweighted toward the largest error) in double with
/// mpmath's erf and erfc; evaluated in f32 with fused multiply-adds on
/// every f32 step of 1e-5 in [-6, 6] and 10^-30..10 against erf in
/// double: at most 1.3e-7 absolute and 1.7e-7 relative (2.4 ulp, near
/// +-0.48), and 7.5e-8 (1.3 ulp of 1) for |x| > 2. NaN stays NaN (the
/// clamp and the piece's test are ordered compares), +-inf gives +-1,
/// -0 gives -0.
struct TwoPieceErf : OpRewritePattern<math::ErfOp> {
  TwoPieceErf(MLIRContext *context)
      : OpRewritePattern<math::ErfOp>(context, /*benefit=*/2) {}

  LogicalResult matchAndRewrite(math::ErfOp op,
                                PatternRewriter &rewriter) const override {
    Type type = op.getType();
    if (!getElementTypeOrSelf(type).isF32())
      return failure();
    Location loc = op.getLoc();
    auto c = [&](float value) -> Value {
      TypedAttr attr = rewriter.getF32FloatAttr(value);
      if (auto vector = dyn_cast<VectorType>(type))
        attr = DenseElementsAttr::get(vector, attr);
      return arith::ConstantOp::create(rewriter, loc, attr);
    };
    // Coefficients from the constant term up.
    auto horner = [&](Value v, ArrayRef<float> coefficients) {
      Value sum = c(coefficients.back());
      for (float coefficient : llvm::reverse(coefficients.drop_back()))
        sum = math::FmaOp::create(rewriter, loc, v, sum, c(coefficient));
      return sum;
    };
    static constexpr float kSmall[] = {
        1.1283791065216064f,    -0.3761262595653534f,  0.1128358542919159f,
        -0.026853810995817184f, 0.005188327748328447f, -0.0008010191959328949f,
        7.85385345807299e-05f};
    static constexpr float kTail[] = {
        0.00040691785397939384f,  -0.0021780210081487894f,
        0.00544718699529767f,     -0.008353904820978642f,
        0.008612042292952538f,    -0.00610118405893445f,
        0.0028253872878849506f,   -0.0005729169934056699f,
        -0.00029358992469497025f, 0.0002802550734486431f,
        -5.8714391343528405e-05f, -2.1299425498000346e-05f,
        8.595898179919459e-06f};
    Value x = op.getOperand();
    Value magnitude = math::AbsFOp::create(rewriter, loc, x);
    Value square = arith::MulFOp::create(rewriter, loc, x, x);
    Value small =
        arith::MulFOp::create(rewriter, loc, x, horner(square, kSmall));
    Value four = c(4.0f);
    Value clamped = arith::SelectOp::create(
        rewriter, loc,
        arith::CmpFOp::create(rewriter, loc, arith::CmpFPredicate::OGT,
                              magnitude, four),
        four, magnitude);
    Value centred = arith::SubFOp::create(rewriter, loc, clamped, c(2.5f));
    Value tail = math::CopySignOp::create(
        rewriter, loc,
        arith::SubFOp::create(rewriter, loc, c(1.0f), horner(centred, kTail)),
        x);
    Value inner = arith::CmpFOp::create(
        rewriter, loc, arith::CmpFPredicate::OLT, magnitude, c(1.0f));
    rewriter.replaceOpWithNewOp<arith::SelectOp>(op, inner, small, tail);
    return success();
  }
};

struct ApproximateMathPass
    : trainc::loop::impl::ApproximateMathPassBase<ApproximateMathPass> {
  using Base::Base;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<TwoPieceErf>(&getContext());
    populateMathPolynomialApproximationPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};
} // namespace
