// --trainc-autodiff reports every op without a gradient at once, naming its
// ONNX node, and rejects bad options with one clear message.
// RUN: not trainc-opt %s --allow-unregistered-dialect --trainc-autodiff="loss=model" -split-input-file 2>&1 | FileCheck %s

// CHECK: error: no gradient for 2 ops on the path to the loss: test.opaque (node 'second'), test.opaque (node 'first')
func.func @forward(%x: tensor<4xf32> {graph.name = "x", graph.role = "input"},
                   %w: tensor<4xf32> {graph.name = "w", graph.role = "parameter"}) -> tensor<f32> {
  %0 = graph.mul %x, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = "test.opaque"(%0) : (tensor<4xf32>) -> tensor<4xf32> loc("first")
  %2 = "test.opaque"(%1) : (tensor<4xf32>) -> tensor<4xf32> loc("second")
  %3 = graph.reduce_sum %2 {axes = array<i64: 0>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
  return %3 : tensor<f32>
}

// -----

// An op off the path to the loss needs no gradient.
// CHECK-NOT: no gradient
// CHECK: error: --loss=model needs a model whose output is a scalar loss
func.func @forward(%x: tensor<4xf32> {graph.name = "x", graph.role = "input"},
                   %w: tensor<4xf32> {graph.name = "w", graph.role = "parameter"}) -> tensor<4xf32> {
  %0 = graph.mul %x, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
