//===- ExpandBf16.cpp - --trainc-expand-bf16 ------------------------------===//
#include "dialects/loop/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Transforms/DialectConversion.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace trainc::loop {
#define GEN_PASS_DEF_EXPANDBF16PASS
#include "dialects/loop/Transforms/Passes.h.inc"
} // namespace trainc::loop

using namespace mlir;

namespace {
struct ExpandBf16Pass : trainc::loop::impl::ExpandBf16PassBase<ExpandBf16Pass> {
  using Base::Base;

  void runOnOperation() override {
    MLIRContext *context = &getContext();
    // Arithmetic on bf16 (a max pooling's maximumf) widened to f32 and
    // rounded back: upstream's arith-emulate-unsupported-floats.
    TypeConverter converter;
    arith::populateEmulateUnsupportedFloatsConversions(
        converter, {BFloat16Type::get(context)}, Float32Type::get(context));
    RewritePatternSet emulate(context);
    arith::populateEmulateUnsupportedFloatsPatterns(emulate, converter);
    ConversionTarget target(*context);
    arith::populateEmulateUnsupportedFloatsLegality(target, converter);
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(emulate))))
      return signalPassFailure();
    // Then every conversion to or from bf16 as integer arithmetic, unless
    // the target converts natively.
    if (nativeNarrowing)
      return;
    RewritePatternSet expand(context);
    arith::populateExpandBFloat16Patterns(expand);
    if (failed(applyPatternsGreedily(getOperation(), std::move(expand))))
      return signalPassFailure();
  }
};
} // namespace
