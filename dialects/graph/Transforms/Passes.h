//===- Passes.h - graph dialect passes -------------------------*- C++ -*-===//
#ifndef TRAINC_DIALECTS_GRAPH_TRANSFORMS_PASSES_H
#define TRAINC_DIALECTS_GRAPH_TRANSFORMS_PASSES_H

#include "dialects/graph/GraphOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

namespace trainc::graph {

#define GEN_PASS_DECL
#include "dialects/graph/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "dialects/graph/Transforms/Passes.h.inc"

/// The convolutions and their gradient ops below `root`, collected first
/// so that a pass may rewrite or erase them as it goes.
inline llvm::SmallVector<mlir::Operation *>
convolutionOps(mlir::Operation *root) {
  llvm::SmallVector<mlir::Operation *> convolutions;
  root->walk([&](mlir::Operation *op) {
    if (mlir::isa<ConvOp, ConvBackwardInputOp, ConvBackwardWeightOp>(op))
      convolutions.push_back(op);
  });
  return convolutions;
}

} // namespace trainc::graph

#endif // TRAINC_DIALECTS_GRAPH_TRANSFORMS_PASSES_H
