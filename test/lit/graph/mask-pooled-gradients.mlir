// --trainc-mask-pooled-gradients: a ReLU's gradient mask applied to what a
// max pooling's gradient routed back is applied to the pooled gradient,
// tested on the pooled value, before the routing.
// RUN: trainc-opt %s --trainc-mask-pooled-gradients -split-input-file | FileCheck %s

// The mask reads the pool's input (the ReLU's output), as autodiff writes
// it; the pooled value is the forward's pooling again (CSE merges them).
// CHECK-LABEL: func.func @relu_then_pool
// CHECK: %[[ZERO:.*]] = graph.constant dense<0.000000e+00> : tensor<f32>
// CHECK: %[[Y:.*]] = graph.relu %arg0
// CHECK: %[[P:.*]] = graph.max_pool %[[Y]] {{.*}}kernel_shape = array<i64: 2, 2>{{.*}} -> tensor<2x3x2x2xf32>
// CHECK: %[[M:.*]] = graph.greater %[[P]], %[[ZERO]] : (tensor<2x3x2x2xf32>, tensor<f32>) -> tensor<2x3x2x2xi1>
// CHECK: %[[G:.*]] = graph.where %[[M]], %arg1, %[[ZERO]] : (tensor<2x3x2x2xi1>, tensor<2x3x2x2xf32>, tensor<f32>) -> tensor<2x3x2x2xf32>
// CHECK: %[[DX:.*]] = graph.max_pool_backward %[[G]], %[[Y]]
// CHECK-NOT: graph.where
// CHECK: return %[[DX]]
func.func @relu_then_pool(%x: tensor<2x3x4x4xf32>, %g: tensor<2x3x2x2xf32>) -> tensor<2x3x4x4xf32> {
  %zero = graph.constant dense<0.0> : tensor<f32>
  %y = graph.relu %x : tensor<2x3x4x4xf32>
  %d = graph.max_pool_backward %g, %y {dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<2x3x2x2xf32>, tensor<2x3x4x4xf32>) -> tensor<2x3x4x4xf32>
  %positive = graph.greater %y, %zero : (tensor<2x3x4x4xf32>, tensor<f32>) -> tensor<2x3x4x4xi1>
  %dx = graph.where %positive, %d, %zero : (tensor<2x3x4x4xi1>, tensor<2x3x4x4xf32>, tensor<f32>) -> tensor<2x3x4x4xf32>
  return %dx : tensor<2x3x4x4xf32>
}

// -----

// Overlapping padded windows (ResNet-18's 3x3 / 2 pooling), the mask on
// the ReLU's input: the pooling keeps its geometry.
// CHECK-LABEL: func.func @overlapping_mask_on_relu_input
// CHECK: graph.max_pool %{{.*}} {dilations = array<i64: 1, 1>, kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>}
// CHECK: graph.where {{.*}} -> tensor<1x2x3x3xf32>
// CHECK: graph.max_pool_backward {{.*}}kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>
func.func @overlapping_mask_on_relu_input(%x: tensor<1x2x6x6xf32>, %g: tensor<1x2x3x3xf32>) -> tensor<1x2x6x6xf32> {
  %zero = graph.constant dense<0.0> : tensor<f32>
  %y = graph.relu %x : tensor<1x2x6x6xf32>
  %d = graph.max_pool_backward %g, %y {dilations = array<i64: 1, 1>, kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x2x3x3xf32>, tensor<1x2x6x6xf32>) -> tensor<1x2x6x6xf32>
  %positive = graph.greater %x, %zero : (tensor<1x2x6x6xf32>, tensor<f32>) -> tensor<1x2x6x6xi1>
  %dx = graph.where %positive, %d, %zero : (tensor<1x2x6x6xi1>, tensor<1x2x6x6xf32>, tensor<f32>) -> tensor<1x2x6x6xf32>
  return %dx : tensor<1x2x6x6xf32>
}

// -----

// Left alone: a mask on another tensor, a nonzero threshold or fill, and
// a routed gradient something else reads too.
// CHECK-LABEL: func.func @not_masks_of_the_pooled
// CHECK-NOT: graph.max_pool %
// CHECK: return
func.func @not_masks_of_the_pooled(%x: tensor<1x1x4x4xf32>, %other: tensor<1x1x4x4xf32>, %g: tensor<1x1x2x2xf32>) -> (tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>) {
  %zero = graph.constant dense<0.0> : tensor<f32>
  %one = graph.constant dense<1.0> : tensor<f32>
  %y = graph.relu %x : tensor<1x1x4x4xf32>
  %d1 = graph.max_pool_backward %g, %y {dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x1x2x2xf32>, tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  %c1 = graph.greater %other, %zero : (tensor<1x1x4x4xf32>, tensor<f32>) -> tensor<1x1x4x4xi1>
  %w1 = graph.where %c1, %d1, %zero : (tensor<1x1x4x4xi1>, tensor<1x1x4x4xf32>, tensor<f32>) -> tensor<1x1x4x4xf32>
  %d2 = graph.max_pool_backward %g, %y {dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x1x2x2xf32>, tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  %c2 = graph.greater %y, %one : (tensor<1x1x4x4xf32>, tensor<f32>) -> tensor<1x1x4x4xi1>
  %w2 = graph.where %c2, %d2, %zero : (tensor<1x1x4x4xi1>, tensor<1x1x4x4xf32>, tensor<f32>) -> tensor<1x1x4x4xf32>
  %d3 = graph.max_pool_backward %g, %y {dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x1x2x2xf32>, tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  %c3 = graph.greater %y, %zero : (tensor<1x1x4x4xf32>, tensor<f32>) -> tensor<1x1x4x4xi1>
  %w3 = graph.where %c3, %d3, %zero : (tensor<1x1x4x4xi1>, tensor<1x1x4x4xf32>, tensor<f32>) -> tensor<1x1x4x4xf32>
  return %w1, %w2, %w3, %d3 : tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>
}
