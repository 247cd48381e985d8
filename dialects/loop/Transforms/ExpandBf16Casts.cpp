//===- ExpandBf16Casts.cpp - --trainc-expand-bf16-casts -------------------===//
#include "dialects/loop/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace trainc::loop {
#define GEN_PASS_DEF_EXPANDBF16CASTSPASS
#include "dialects/loop/Transforms/Passes.h.inc"
} // namespace trainc::loop

using namespace mlir;

namespace {
struct ExpandBf16CastsPass
    : trainc::loop::impl::ExpandBf16CastsPassBase<ExpandBf16CastsPass> {
  using Base::Base;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    arith::populateExpandBFloat16Patterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};
} // namespace
