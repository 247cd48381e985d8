// Dynamic loss scaling (dialects/graph/Transforms/LossScaling.cpp, built
// into the training functions by --trainc-autodiff loss-scaling=dynamic).
// @gradients seeds its reverse sweep with the scale;
// @train_step keeps the scale and two counters as optimizer state (the
// scale starting at its initial value), unscales the gradient, checks it
// with one sum (x * 0 is NaN only for inf and NaN), and keeps the old
// parameter, momentum and step when it is not finite.
// RUN: trainc-opt %s -split-input-file --trainc-autodiff="loss=mse optimizer=sgd momentum=0.9 loss-scaling=dynamic initial-loss-scale=1024" --canonicalize --cse | FileCheck %s --check-prefix=SCALED
// RUN: not trainc-opt %s -split-input-file --trainc-autodiff="loss=mse loss-scaling=static" 2>&1 | FileCheck %s --check-prefix=BADSCALE
// BADSCALE: unknown loss scaling 'static' (none, dynamic)
// SCALED: graph.training = {{{.*}}loss_scaling = "dynamic"
// SCALED-LABEL: func.func @gradients
// SCALED-SAME: %arg6: tensor<f32> {graph.name = "loss_scale", graph.role = "loss_scale"}
// SCALED: %[[SEED:.*]] = graph.expand %arg6 {shape = array<i64: 2, 4>} : (tensor<f32>) -> tensor<2x4xf32>
// SCALED-LABEL: func.func @train_step
// SCALED-SAME: %arg8: tensor<f32> {graph.initial_value = dense<1.024000e+03> : tensor<f32>, graph.name = "amp.loss_scale", graph.role = "optimizer_state"}
// SCALED-SAME: %arg9: tensor<i64> {graph.name = "amp.good_steps", graph.role = "optimizer_state"}
// SCALED-SAME: %arg10: tensor<i64> {graph.name = "amp.skipped_steps", graph.role = "optimizer_state"}
// SCALED: %[[G:.*]]:3 = call @gradients(%arg0, %arg1, %arg2, %arg3, %arg5, %arg6, %arg8)
// SCALED: %[[Z:.*]] = graph.mul %[[G]]#1, %{{.*}}
// SCALED: %[[S:.*]] = graph.reduce_sum %[[Z]]
// SCALED: %[[NAN:.*]] = graph.is_nan %[[S]]
// SCALED: %[[FINITE:.*]] = graph.not %[[NAN]]
// SCALED: %[[INV:.*]] = graph.div %{{.*}}, %arg8
// SCALED: %[[UNSCALED:.*]] = graph.mul %[[G]]#1, %[[INV]]
// SCALED: %[[P:.*]], %[[M:.*]] = graph.sgd_update %arg1, %[[UNSCALED]], %arg7, %arg5, %arg4
// SCALED-DAG: %[[P2:.*]] = graph.where %[[FINITE]], %[[P]], %arg1
// SCALED-DAG: %[[M2:.*]] = graph.where %[[FINITE]], %[[M]], %arg4
// SCALED-DAG: %[[STEP:.*]] = graph.where %[[FINITE]], %{{.*}}, %arg5 : (tensor<i1>, tensor<i64>, tensor<i64>)
// SCALED: return %[[G]]#0, %[[P2]], %arg2, %[[M2]], %{{.*}}, %{{.*}}, %{{.*}}, %[[STEP]]

func.func @forward(%x: tensor<2x3xf32> {graph.name = "x", graph.role = "input"},
                   %w: tensor<3x4xf32> {graph.name = "w", graph.role = "parameter"},
                   %unused: tensor<3x4xf32> {graph.name = "frozen_path", graph.role = "parameter"}) -> tensor<2x4xf32> {
  %0 = graph.matmul %x, %w : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}
