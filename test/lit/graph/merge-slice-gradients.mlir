// --trainc-merge-slice-gradients: a sum of gradients of adjacent slices
// becomes the gradient of their concatenation; a slice_backward of the
// whole tensor goes; nested concatenations along one axis flatten.
// RUN: trainc-opt %s --trainc-merge-slice-gradients -split-input-file | FileCheck %s

// The QKV split: three slices of the last axis, their gradients summed in
// any order, become one concatenation.
// CHECK-LABEL: func.func @qkv
// CHECK-SAME: (%[[Q:.*]]: tensor<2x4xf32>, %[[K:.*]]: tensor<2x4xf32>, %[[V:.*]]: tensor<2x4xf32>)
// CHECK-NEXT: %[[C:.*]] = graph.concat %[[Q]], %[[K]], %[[V]] {axis = 1 : i64} : (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x12xf32>
// CHECK-NEXT: return %[[C]]
func.func @qkv(%dq: tensor<2x4xf32>, %dk: tensor<2x4xf32>, %dv: tensor<2x4xf32>) -> tensor<2x12xf32> {
  %q = graph.slice_backward %dq {input_shape = array<i64: 2, 12>, starts = array<i64: 0, 0>, ends = array<i64: 2, 4>, steps = array<i64: 1, 1>} : (tensor<2x4xf32>) -> tensor<2x12xf32>
  %k = graph.slice_backward %dk {input_shape = array<i64: 2, 12>, starts = array<i64: 0, 4>, ends = array<i64: 2, 8>, steps = array<i64: 1, 1>} : (tensor<2x4xf32>) -> tensor<2x12xf32>
  %v = graph.slice_backward %dv {input_shape = array<i64: 2, 12>, starts = array<i64: 0, 8>, ends = array<i64: 2, 12>, steps = array<i64: 1, 1>} : (tensor<2x4xf32>) -> tensor<2x12xf32>
  %vk = graph.add %v, %k : (tensor<2x12xf32>, tensor<2x12xf32>) -> tensor<2x12xf32>
  %sum = graph.add %vk, %q : (tensor<2x12xf32>, tensor<2x12xf32>) -> tensor<2x12xf32>
  return %sum : tensor<2x12xf32>
}

// -----

// Two adjacent slices of a part of the tensor: the gradient of their
// concatenation, still placed into zeros.
// CHECK-LABEL: func.func @partial
// CHECK: %[[C:.*]] = graph.concat %arg0, %arg1 {axis = 1 : i64} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x8xf32>
// CHECK: graph.slice_backward %[[C]] {ends = array<i64: 2, 10>, input_shape = array<i64: 2, 12>, starts = array<i64: 0, 2>, steps = array<i64: 1, 1>} : (tensor<2x8xf32>) -> tensor<2x12xf32>
// CHECK-NOT: graph.add
func.func @partial(%a: tensor<2x4xf32>, %b: tensor<2x4xf32>) -> tensor<2x12xf32> {
  %x = graph.slice_backward %a {input_shape = array<i64: 2, 12>, starts = array<i64: 0, 2>, ends = array<i64: 2, 6>, steps = array<i64: 1, 1>} : (tensor<2x4xf32>) -> tensor<2x12xf32>
  %y = graph.slice_backward %b {input_shape = array<i64: 2, 12>, starts = array<i64: 0, 6>, ends = array<i64: 2, 10>, steps = array<i64: 1, 1>} : (tensor<2x4xf32>) -> tensor<2x12xf32>
  %sum = graph.add %x, %y : (tensor<2x12xf32>, tensor<2x12xf32>) -> tensor<2x12xf32>
  return %sum : tensor<2x12xf32>
}

// -----

// Left alone: ranges with a gap, overlapping ranges, slices that differ on
// two axes, strided slices, and a slice_backward with another reader.
// CHECK-LABEL: func.func @not_merged
// CHECK-COUNT-5: graph.add
// CHECK-NOT: graph.concat
func.func @not_merged(%a: tensor<2x4xf32>, %b: tensor<2x4xf32>, %c: tensor<1x4xf32>, %d: tensor<2x2xf32>) -> (tensor<2x12xf32>, tensor<2x12xf32>, tensor<2x12xf32>, tensor<2x12xf32>, tensor<2x12xf32>, tensor<2x12xf32>) {
  %x0 = graph.slice_backward %a {input_shape = array<i64: 2, 12>, starts = array<i64: 0, 0>, ends = array<i64: 2, 4>, steps = array<i64: 1, 1>} : (tensor<2x4xf32>) -> tensor<2x12xf32>
  %y0 = graph.slice_backward %b {input_shape = array<i64: 2, 12>, starts = array<i64: 0, 5>, ends = array<i64: 2, 9>, steps = array<i64: 1, 1>} : (tensor<2x4xf32>) -> tensor<2x12xf32>
  %gap = graph.add %x0, %y0 : (tensor<2x12xf32>, tensor<2x12xf32>) -> tensor<2x12xf32>
  %x1 = graph.slice_backward %a {input_shape = array<i64: 2, 12>, starts = array<i64: 0, 0>, ends = array<i64: 2, 4>, steps = array<i64: 1, 1>} : (tensor<2x4xf32>) -> tensor<2x12xf32>
  %y1 = graph.slice_backward %b {input_shape = array<i64: 2, 12>, starts = array<i64: 0, 2>, ends = array<i64: 2, 6>, steps = array<i64: 1, 1>} : (tensor<2x4xf32>) -> tensor<2x12xf32>
  %overlap = graph.add %x1, %y1 : (tensor<2x12xf32>, tensor<2x12xf32>) -> tensor<2x12xf32>
  %x2 = graph.slice_backward %a {input_shape = array<i64: 3, 12>, starts = array<i64: 0, 0>, ends = array<i64: 2, 4>, steps = array<i64: 1, 1>} : (tensor<2x4xf32>) -> tensor<3x12xf32>
  %y2 = graph.slice_backward %c {input_shape = array<i64: 3, 12>, starts = array<i64: 2, 4>, ends = array<i64: 3, 8>, steps = array<i64: 1, 1>} : (tensor<1x4xf32>) -> tensor<3x12xf32>
  %two = graph.add %x2, %y2 : (tensor<3x12xf32>, tensor<3x12xf32>) -> tensor<3x12xf32>
  %x3 = graph.slice_backward %d {input_shape = array<i64: 2, 12>, starts = array<i64: 0, 0>, ends = array<i64: 2, 4>, steps = array<i64: 1, 2>} : (tensor<2x2xf32>) -> tensor<2x12xf32>
  %y3 = graph.slice_backward %b {input_shape = array<i64: 2, 12>, starts = array<i64: 0, 4>, ends = array<i64: 2, 8>, steps = array<i64: 1, 1>} : (tensor<2x4xf32>) -> tensor<2x12xf32>
  %strided = graph.add %x3, %y3 : (tensor<2x12xf32>, tensor<2x12xf32>) -> tensor<2x12xf32>
  %x4 = graph.slice_backward %a {input_shape = array<i64: 2, 12>, starts = array<i64: 0, 0>, ends = array<i64: 2, 4>, steps = array<i64: 1, 1>} : (tensor<2x4xf32>) -> tensor<2x12xf32>
  %y4 = graph.slice_backward %b {input_shape = array<i64: 2, 12>, starts = array<i64: 0, 4>, ends = array<i64: 2, 8>, steps = array<i64: 1, 1>} : (tensor<2x4xf32>) -> tensor<2x12xf32>
  %shared = graph.add %x4, %y4 : (tensor<2x12xf32>, tensor<2x12xf32>) -> tensor<2x12xf32>
  %two12 = graph.slice %two {starts = array<i64: 0, 0>, ends = array<i64: 2, 12>, steps = array<i64: 1, 1>} : (tensor<3x12xf32>) -> tensor<2x12xf32>
  return %gap, %overlap, %two12, %strided, %shared, %x4 : tensor<2x12xf32>, tensor<2x12xf32>, tensor<2x12xf32>, tensor<2x12xf32>, tensor<2x12xf32>, tensor<2x12xf32>
}
