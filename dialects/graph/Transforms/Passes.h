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

} // namespace trainc::graph

#endif // TRAINC_DIALECTS_GRAPH_TRANSFORMS_PASSES_H
