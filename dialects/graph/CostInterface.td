//===- CostInterface.td - what one evaluation of a graph op costs ---------===//
//
// Every graph op implements CostOpInterface: the floating-point operations
// and bytes of one evaluation, from shapes and attributes alone. The
// methods are static, so they answer for a graph op and equally for a
// kernel launch of it (`kernel.launch "graph.conv"`, whose options are the
// op's attributes): --stats, --profile and rematerialization ask the op,
// not a table of op names elsewhere.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_GRAPH_COST_INTERFACE_TD
#define TRAINC_GRAPH_COST_INTERFACE_TD

include "mlir/IR/OpBase.td"

def Graph_CostOpInterface : OpInterface<"CostOpInterface"> {
  let cppNamespace = "::trainc::graph";
  let description = [{
    Cost of one evaluation on operands and results of the given shaped
    types (tensors of the op, or memrefs of a kernel launch) with the given
    attributes. Flops count a multiply-add as 2. The default is one
    operation per element of the largest operand or result (elementwise
    ops, reductions, normalizations, losses, updates); products,
    convolutions and pooling count their multiply-adds or window taps, and
    data movement counts none. Bytes are every operand and result once.
  }];
  let methods = [
    StaticInterfaceMethod<
      "Floating-point operations of one evaluation.",
      "double", "estimateFlops",
      (ins "::mlir::TypeRange":$operands, "::mlir::TypeRange":$results,
           "::mlir::DictionaryAttr":$attributes),
      /*methodBody=*/[{}],
      /*defaultImplementation=*/[{
        return ::trainc::graph::largestElementCount(operands, results);
      }]>,
    StaticInterfaceMethod<
      "Bytes read and written by one evaluation (each operand and result "
      "once).",
      "double", "estimateBytes",
      (ins "::mlir::TypeRange":$operands, "::mlir::TypeRange":$results),
      /*methodBody=*/[{}],
      /*defaultImplementation=*/[{
        return ::trainc::graph::totalBytes(operands, results);
      }]>
  ];
}

// An op whose flops are not one per element: it defines estimateFlops
// (NeuralOps.cpp, TensorOps.cpp). Graph_Op adds the interface with its
// defaults to every other op.
def Graph_CustomCost
    : DeclareOpInterfaceMethods<Graph_CostOpInterface, ["estimateFlops"]>;

#endif // TRAINC_GRAPH_COST_INTERFACE_TD
