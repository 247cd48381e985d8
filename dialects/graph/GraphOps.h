//===- GraphOps.h - the graph dialect -------------------------*- C++ -*-===//
#ifndef TRAINC_DIALECTS_GRAPH_GRAPHOPS_H
#define TRAINC_DIALECTS_GRAPH_GRAPHOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/graph/GraphDialect.h.inc"

namespace trainc::graph::OpTrait {
/// Marks ops whose results carry no gradient (comparisons, masks, integer
/// arithmetic, optimizer updates); see GradientInterface.td.
template <typename ConcreteType>
class NonDifferentiable
    : public mlir::OpTrait::TraitBase<ConcreteType, NonDifferentiable> {};
} // namespace trainc::graph::OpTrait

#include "dialects/graph/GradientInterface.h.inc"

#define GET_OP_CLASSES
#include "dialects/graph/GraphOps.h.inc"

namespace trainc::graph {

/// Argument attribute naming an initializer's role in `@forward`.
inline constexpr llvm::StringLiteral kRoleAttrName = "graph.role";
/// Argument / result attribute holding the ONNX name of a value.
inline constexpr llvm::StringLiteral kNameAttrName = "graph.name";

/// The roles an initializer (or graph input) can have in `@forward`.
inline constexpr llvm::StringLiteral kRoleParameter = "parameter";
inline constexpr llvm::StringLiteral kRoleState = "state";
inline constexpr llvm::StringLiteral kRoleConstant = "constant";
inline constexpr llvm::StringLiteral kRoleInput = "input";
// Roles of the training functions' arguments and results.
inline constexpr llvm::StringLiteral kRoleLabels = "labels";
inline constexpr llvm::StringLiteral kRoleStep = "step";
inline constexpr llvm::StringLiteral kRoleSeed = "seed";
inline constexpr llvm::StringLiteral kRoleLearningRate = "learning_rate";
inline constexpr llvm::StringLiteral kRoleOptimizerState = "optimizer_state";
inline constexpr llvm::StringLiteral kRoleLoss = "loss";
inline constexpr llvm::StringLiteral kRoleGradient = "gradient";
inline constexpr llvm::StringLiteral kRoleOutput = "output";
/// Result attribute: the index of the argument this result replaces.
inline constexpr llvm::StringLiteral kUpdatesAttrName = "graph.updates";

} // namespace trainc::graph

#endif // TRAINC_DIALECTS_GRAPH_GRAPHOPS_H
