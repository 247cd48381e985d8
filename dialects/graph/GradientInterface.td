//===- GradientInterface.td - how graph ops differentiate ----------------===//
//
// Every differentiable graph op implements GradientOpInterface: given the
// gradients of its results, it builds the gradients of its operands out of
// graph ops (RAF's per-op gradient registry, as an MLIR interface). Ops whose
// outputs carry no gradient (comparisons, integer shape arithmetic, random
// masks) carry the NonDifferentiable trait instead. An op with neither is a
// missing gradient, which --trainc-autodiff reports.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_GRAPH_GRADIENT_INTERFACE_TD
#define TRAINC_GRAPH_GRADIENT_INTERFACE_TD

include "mlir/IR/OpBase.td"

def Graph_GradientOpInterface : OpInterface<"GradientOpInterface"> {
  let cppNamespace = "::trainc::graph";
  let description = [{
    Reverse-mode derivative of one op. `resultGradients` has one entry per
    result, null where that result receives no gradient. The method appends
    one entry per operand to `operandGradients` (null where the operand gets
    none, e.g. integer indices). Gradients have exactly the operand's type:
    broadcasting ops reduce them back to the operand's shape.
  }];
  let methods = [
    InterfaceMethod<
      "Builds the operand gradients at the builder's insertion point.",
      "::llvm::LogicalResult", "buildGradients",
      (ins "::mlir::OpBuilder &":$builder,
           "::mlir::ValueRange":$resultGradients,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGradients)>
  ];
}

// The op's results carry no gradient (comparisons, masks, integer math).
def Graph_NonDifferentiable : NativeOpTrait<"NonDifferentiable"> {
  let cppNamespace = "::trainc::graph::OpTrait";
}

// Shorthand for ops that implement the interface.
def Graph_Differentiable
    : DeclareOpInterfaceMethods<Graph_GradientOpInterface>;

#endif // TRAINC_GRAPH_GRADIENT_INTERFACE_TD
