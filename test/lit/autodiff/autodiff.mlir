// --trainc-autodiff on one small graph per op family: the gradient ops each
// family builds, accumulation of gradients for values used twice, and the
// reduction of broadcast gradients back to the operand's shape.
// RUN: trainc-opt %s -split-input-file --trainc-autodiff="loss=model" --canonicalize --cse | FileCheck %s

// Elementwise + accumulation: %0 feeds both tanh and add, so its gradient
// is the sum of both paths; w was broadcast, so its gradient is reduced.
// CHECK-LABEL: func.func @gradients
// CHECK-SAME: -> (tensor<f32> {graph.name = "loss", graph.role = "loss"}, tensor<3xf32> {graph.name = "w.grad", graph.role = "gradient"})
// CHECK: %[[X:.*]] = graph.mul %arg0, %arg1
// CHECK: %[[Y:.*]] = graph.tanh %[[X]]
// CHECK: %[[Y2:.*]] = graph.mul %[[Y]], %[[Y]]
// CHECK: %[[DTANH:.*]] = graph.sub %{{.*}}, %[[Y2]]
// CHECK: %[[SUM:.*]] = graph.add %{{.*}}, %[[DTANH]]
// CHECK: %[[DW:.*]] = graph.mul %[[SUM]], %arg0
// CHECK: %[[R:.*]] = graph.reduce_sum %[[DW]] {axes = array<i64: 0>}
// CHECK: %[[G:.*]] = graph.reshape %[[R]] {shape = array<i64: 3>}
// CHECK: return %{{.*}}, %[[G]]
func.func @forward(%x: tensor<2x3xf32> {graph.name = "x", graph.role = "input"},
                   %w: tensor<3xf32> {graph.name = "w", graph.role = "parameter"}) -> tensor<f32> {
  %0 = graph.mul %x, %w : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %1 = graph.tanh %0 : tensor<2x3xf32>
  %2 = graph.add %1, %0 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %3 = graph.reduce_sum %2 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xf32>) -> tensor<f32>
  return %3 : tensor<f32>
}

// -----

// Softmax and log-softmax: y * (g - sum(g * y)) and g - exp(y) * sum(g).
// CHECK-LABEL: func.func @gradients
// CHECK: %[[S:.*]] = graph.softmax %{{.*}} {axis = 1 : i64}
// CHECK: %[[L:.*]] = graph.log_softmax %[[S]] {axis = 1 : i64}
// CHECK: graph.reduce_sum %{{.*}} {axes = array<i64: 1>}
// CHECK: graph.exp %[[L]]
// CHECK: graph.mul %{{.*}}, %[[S]]
// CHECK: graph.reduce_sum %{{.*}} {axes = array<i64: 1>}
func.func @forward(%w: tensor<2x4xf32> {graph.name = "w", graph.role = "parameter"}) -> tensor<f32> {
  %0 = graph.softmax %w {axis = 1 : i64} : tensor<2x4xf32>
  %1 = graph.log_softmax %0 {axis = 1 : i64} : tensor<2x4xf32>
  %2 = graph.reduce_mean %1 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x4xf32>) -> tensor<f32>
  return %2 : tensor<f32>
}

// -----

// Data movement: transpose inverts its permutation, slice scatters back,
// gather scatter-adds, concat slices its gradient apart.
// CHECK-LABEL: func.func @gradients
// CHECK-DAG: graph.gather_backward %{{.*}}, %arg1 {axis = 0 : i64, data_shape = array<i64: 10, 4>}
// CHECK-DAG: graph.slice_backward %{{.*}} {ends = array<i64: 3, 4>, input_shape = array<i64: 3, 4>, starts = array<i64: 1, 0>, steps = array<i64: 1, 1>}
// CHECK-DAG: graph.transpose %{{.*}} {perm = array<i64: 1, 0>}
// CHECK-DAG: graph.slice %{{.*}} {ends = array<i64: 2, 4>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>}
func.func @forward(%table: tensor<10x4xf32> {graph.name = "table", graph.role = "parameter"},
                   %ids: tensor<2xi64> {graph.name = "ids", graph.role = "input"},
                   %m: tensor<3x4xf32> {graph.name = "m", graph.role = "parameter"}) -> tensor<f32> {
  %0 = graph.gather %table, %ids {axis = 0 : i64} : (tensor<10x4xf32>, tensor<2xi64>) -> tensor<2x4xf32>
  %1 = graph.slice %m {starts = array<i64: 1, 0>, ends = array<i64: 3, 4>, steps = array<i64: 1, 1>} : (tensor<3x4xf32>) -> tensor<2x4xf32>
  %2 = graph.concat %0, %1 {axis = 0 : i64} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<4x4xf32>
  %3 = graph.transpose %2 {perm = array<i64: 1, 0>} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %4 = graph.mul %3, %3 : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %5 = graph.reduce_sum %4 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x4xf32>) -> tensor<f32>
  return %5 : tensor<f32>
}

// -----

// Convolution, pooling and normalization use their backward kernels; only
// the gradients the parameters need survive (no conv_backward_input for
// the image).
// CHECK-LABEL: func.func @gradients
// CHECK-NOT: graph.conv_backward_input
// CHECK: graph.layer_norm_backward
// CHECK: graph.max_pool_backward
// CHECK: graph.batch_norm_training_backward
// CHECK: graph.conv_backward_weight %{{.*}}, %arg0 {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>, weight_shape = array<i64: 4, 3, 3, 3>}
// CHECK: graph.reduce_sum %{{.*}} {axes = array<i64: 0, 2, 3>, keepdims = false}
// The running statistics are returned as updated state.
// CHECK: return {{.*}} : tensor<f32>, tensor<4x3x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
// CHECK-LABEL: func.func @eval
// CHECK: graph.batch_norm_inference %{{.*}}, %arg3, %arg4, %arg5, %arg6
func.func @forward(%x: tensor<2x3x8x8xf32> {graph.name = "x", graph.role = "input"},
                   %w: tensor<4x3x3x3xf32> {graph.name = "w", graph.role = "parameter"},
                   %b: tensor<4xf32> {graph.name = "b", graph.role = "parameter"},
                   %scale: tensor<4xf32> {graph.name = "scale", graph.role = "parameter"},
                   %shift: tensor<4xf32> {graph.name = "shift", graph.role = "parameter"},
                   %mean: tensor<4xf32> {graph.name = "mean", graph.role = "state"},
                   %var: tensor<4xf32> {graph.name = "var", graph.role = "state"},
                   %gamma: tensor<4x4xf32> {graph.name = "gamma", graph.role = "constant"}) -> tensor<f32> {
  %0 = graph.conv %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<2x4x8x8xf32>
  %1:3 = graph.batch_norm_training %0, %scale, %shift, %mean, %var {epsilon = 1.0e-5 : f64, momentum = 0.9 : f64} : (tensor<2x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>)
  %2 = graph.max_pool %1#0 {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<2x4x8x8xf32>) -> tensor<2x4x4x4xf32>
  %3 = graph.layer_norm %2, %gamma {axis = 2 : i64, epsilon = 1.0e-5 : f64} : (tensor<2x4x4x4xf32>, tensor<4x4xf32>) -> tensor<2x4x4x4xf32>
  %4 = graph.reduce_mean %3 {axes = array<i64: 0, 1, 2, 3>, keepdims = false} : (tensor<2x4x4x4xf32>) -> tensor<f32>
  return %4 : tensor<f32>
}

// -----

// Dropout draws one mask per dropout from (seed, step, stream); the
// backward multiplies by the same mask. @eval has no dropout.
// CHECK-LABEL: func.func @gradients
// CHECK: %[[M0:.*]] = graph.random_mask %arg2, %arg1 {element_type = f32, ratio = 5.000000e-01 : f64, shape = array<i64: 8>, stream = 0 : i64}
// CHECK: %[[M1:.*]] = graph.random_mask %arg2, %arg1 {element_type = f32, ratio = 2.500000e-01 : f64, shape = array<i64: 8>, stream = 1 : i64}
// CHECK: graph.mul %{{.*}}, %[[M1]]
// CHECK: graph.mul %{{.*}}, %[[M0]]
// CHECK-LABEL: func.func @eval
// CHECK-NOT: graph.dropout
// CHECK-NOT: graph.random_mask
// CHECK: return
func.func @forward(%w: tensor<8xf32> {graph.name = "w", graph.role = "parameter"}) -> tensor<f32> {
  %0 = graph.dropout %w {ratio = 0.5 : f64} : tensor<8xf32>
  %1 = graph.dropout %0 {ratio = 0.25 : f64} : tensor<8xf32>
  %2 = graph.reduce_sum %1 {axes = array<i64: 0>, keepdims = false} : (tensor<8xf32>) -> tensor<f32>
  return %2 : tensor<f32>
}
