//===- CastClass.td - how each graph op takes part in mixed precision -----===//
//
// Automatic mixed precision (--trainc-amp) gives every value a precision by
// the cast class of the op that computes it, a fact of the op declared
// here and nowhere else. Every graph op carries exactly one of these traits
// (a unit test walks the registered ops):
//
// * CastLow: runs in the low precision (bf16 or f16): its float operands
//   are cast down and its float results are low. Products: convolutions,
//   matmul, gemm and their backward ops.
// * CastFp32: runs in f32 whatever its operands: softmax, log-softmax, the
//   losses, normalization statistics, exp/log/pow/erf/sqrt/reciprocal,
//   reductions that accumulate, the optimizer updates.
// * CastFollow: runs in the precision of its inputs: low when any float
//   operand is low (the others are cast down), f32 otherwise. Cheap
//   elementwise math and data movement.
// * CastActivations: normalizations in training (batch and layer norm and
//   their gradients): the activations (operands shaped like the first)
//   follow as CastFollow, while the parameters and running statistics stay
//   f32 and the kernels compute the statistics in f32 (PyTorch's CPU
//   autocast runs them on bf16 inputs too).
// * CastFixed: states its own types, which the pass never changes
//   (graph.cast, graph.constant).
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_GRAPH_CAST_CLASS_TD
#define TRAINC_GRAPH_CAST_CLASS_TD

include "mlir/IR/OpBase.td"

def Graph_CastLow : NativeOpTrait<"CastLow"> {
  let cppNamespace = "::trainc::graph::OpTrait";
}
def Graph_CastFp32 : NativeOpTrait<"CastFp32"> {
  let cppNamespace = "::trainc::graph::OpTrait";
}
def Graph_CastFollow : NativeOpTrait<"CastFollow"> {
  let cppNamespace = "::trainc::graph::OpTrait";
}
def Graph_CastActivations : NativeOpTrait<"CastActivations"> {
  let cppNamespace = "::trainc::graph::OpTrait";
}
def Graph_CastFixed : NativeOpTrait<"CastFixed"> {
  let cppNamespace = "::trainc::graph::OpTrait";
}

#endif // TRAINC_GRAPH_CAST_CLASS_TD
