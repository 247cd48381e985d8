//===- GraphOps.h - the graph dialect -------------------------*- C++ -*-===//
#ifndef TRAINC_DIALECTS_GRAPH_GRAPHOPS_H
#define TRAINC_DIALECTS_GRAPH_GRAPHOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <optional>

#include "dialects/graph/GraphDialect.h.inc"

namespace trainc::graph::OpTrait {
/// Marks ops whose results carry no gradient (comparisons, masks, integer
/// arithmetic, optimizer updates); see GradientInterface.td.
template <typename ConcreteType>
class NonDifferentiable
    : public mlir::OpTrait::TraitBase<ConcreteType, NonDifferentiable> {};

// The cast classes of automatic mixed precision; see CastClass.td.
template <typename ConcreteType>
class CastLow : public mlir::OpTrait::TraitBase<ConcreteType, CastLow> {};
template <typename ConcreteType>
class CastFp32 : public mlir::OpTrait::TraitBase<ConcreteType, CastFp32> {};
template <typename ConcreteType>
class CastFollow : public mlir::OpTrait::TraitBase<ConcreteType, CastFollow> {};
template <typename ConcreteType>
class CastActivations
    : public mlir::OpTrait::TraitBase<ConcreteType, CastActivations> {};
template <typename ConcreteType>
class CastFixed : public mlir::OpTrait::TraitBase<ConcreteType, CastFixed> {};
} // namespace trainc::graph::OpTrait

#include "dialects/graph/GradientInterface.h.inc"

namespace trainc::graph {
/// The defaults of CostOpInterface: the element count of the largest
/// operand or result, and the bytes of all of them.
double largestElementCount(mlir::TypeRange operands, mlir::TypeRange results);
double totalBytes(mlir::TypeRange operands, mlir::TypeRange results);
} // namespace trainc::graph

#include "dialects/graph/CostInterface.h.inc"

#define GET_OP_CLASSES
#include "dialects/graph/GraphOps.h.inc"

namespace trainc::graph {

/// What one evaluation costs, from CostOpInterface.
struct Cost {
  double flops = 0, bytes = 0;
};
/// The cost of one evaluation of graph op `name` on operands and results
/// of these shaped types with these attributes (a kernel launch of it);
/// nullopt when `name` is not a graph op.
std::optional<Cost> estimateCost(mlir::OperationName name,
                                 mlir::TypeRange operands,
                                 mlir::TypeRange results,
                                 mlir::DictionaryAttr attributes);

/// Whether every value of float type `from` is exactly a value of float
/// type `to` (bf16 and f16 in f32; f32 in f64): a cast from -> to -> from
/// is the identity.
bool widensExactly(mlir::Type from, mlir::Type to);

/// How an op takes part in mixed precision (CastClass.td).
enum class CastClass { Low, Fp32, Follow, Activations, Fixed };

/// The cast class `op` declares, or nullopt for an op that declares none
/// (ops of other dialects; every graph op declares one).
std::optional<CastClass> getCastClass(mlir::Operation *op);

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
/// A persistent low-precision copy of a parameter that @train_step reads
/// instead of casting it, and writes after updating the parameter
/// (--trainc-keep-weight-copies); derived state, not checkpointed.
inline constexpr llvm::StringLiteral kRoleWeightCopy = "weight_copy";
/// Argument attribute of a weight copy: the name of its parameter.
inline constexpr llvm::StringLiteral kCopyOfAttrName = "graph.copy_of";
/// Argument attribute of a weight copy that holds the live taps of its
/// parameter (a window at these starts) for the training steps, which no
/// longer update the parameter itself (--trainc-compact-window-updates):
/// the runtime reads the taps from the copy when it reads the parameter.
inline constexpr llvm::StringLiteral kWindowStartsAttrName =
    "graph.window_starts";
/// @gradients' loss scale (dynamic loss scaling).
inline constexpr llvm::StringLiteral kRoleLossScale = "loss_scale";
/// Argument attribute: the initial value of a persistent argument that
/// does not start at zero (the loss scale), as an ElementsAttr.
inline constexpr llvm::StringLiteral kInitialValueAttrName =
    "graph.initial_value";
inline constexpr llvm::StringLiteral kRoleLoss = "loss";
inline constexpr llvm::StringLiteral kRoleGradient = "gradient";
inline constexpr llvm::StringLiteral kRoleOutput = "output";
/// Result attribute: the index of the argument this result replaces.
inline constexpr llvm::StringLiteral kUpdatesAttrName = "graph.updates";

} // namespace trainc::graph

#endif // TRAINC_DIALECTS_GRAPH_GRAPHOPS_H
