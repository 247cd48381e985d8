//===- ExpandViews.cpp - --trainc-expand-views
//-----------------------------===//
//
// memref views as strided metadata (upstream's expand-strided-metadata
// patterns), without the greedy driver's region simplification.
//
//===----------------------------------------------------------------------===//
#include "dialects/loop/Transforms/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace trainc::loop {
#define GEN_PASS_DEF_EXPANDVIEWSPASS
#include "dialects/loop/Transforms/Passes.h.inc"
} // namespace trainc::loop

using namespace mlir;

namespace {

struct ExpandViewsPass
    : trainc::loop::impl::ExpandViewsPassBase<ExpandViewsPass> {
  using Base::Base;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    memref::populateExpandStridedMetadataPatterns(patterns);
    GreedyRewriteConfig config;
    config.setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
    if (failed(
            applyPatternsGreedily(getOperation(), std::move(patterns), config)))
      signalPassFailure();
  }
};

} // namespace
