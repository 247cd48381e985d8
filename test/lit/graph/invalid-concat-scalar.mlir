// Concat needs inputs of rank >= 1: scalars have no axis to concatenate along.
// RUN: trainc-opt %s -split-input-file -verify-diagnostics
// Bug: ConcatOp::inferReturnTypes (TensorOps.cpp) checks the axis against
// max(rank, 1), so axis 0 of two scalars is accepted and the result is a scalar.

func.func @concat_scalars(%a: tensor<f32>, %b: tensor<f32>) {
  // expected-error @+2 {{concat axis 0 is out of range for rank 0}}
  // expected-error @+1 {{'graph.concat' op failed to infer returned types}}
  %0 = graph.concat %a, %b {axis = 0} : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return
}
