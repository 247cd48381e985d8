// The @train_step that --trainc-autodiff wraps around @gradients: optimizer
// state per parameter, in-place update attributes (graph.updates), global
// norm clipping, the step counter, and parameters without a gradient left
// alone.
// RUN: trainc-opt %s -split-input-file --trainc-autodiff="loss=mse optimizer=adamw lr=0.001 clip-grad-norm=1.0" --canonicalize --cse | FileCheck %s --check-prefix=ADAMW
// RUN: trainc-opt %s -split-input-file --trainc-autodiff="loss=mse optimizer=sgd momentum=0.9 nesterov=true weight-decay=0.0001" --canonicalize --cse | FileCheck %s --check-prefix=SGD

// ADAMW: module attributes {graph.training = {clip_grad_norm = 1.000000e+00 : f64, learning_rate = 1.000000e-03 : f64, loss = "mse", optimizer = "adamw", reduction = "mean", weight_decay = 1.000000e-02 : f64}}
// ADAMW-LABEL: func.func @train_step
// ADAMW-SAME: %arg3: tensor<2x4xf32> {graph.name = "labels", graph.role = "labels"}
// ADAMW-SAME: %arg4: tensor<3x4xf32> {graph.name = "w.exp_avg", graph.role = "optimizer_state"}
// ADAMW-SAME: %arg5: tensor<3x4xf32> {graph.name = "w.exp_avg_sq", graph.role = "optimizer_state"}
// ADAMW-SAME: %arg6: tensor<i64> {graph.name = "step", graph.role = "step"}
// ADAMW-SAME: %arg7: tensor<i64> {graph.name = "seed", graph.role = "seed"}
// ADAMW-SAME: %arg8: tensor<f32> {graph.name = "learning_rate", graph.role = "learning_rate"}
// ADAMW-SAME: -> (tensor<f32> {graph.name = "loss", graph.role = "loss"},
// ADAMW-SAME: tensor<3x4xf32> {graph.name = "w", graph.role = "parameter", graph.updates = 1 : i64},
// ADAMW-SAME: tensor<3x4xf32> {graph.name = "frozen_path", graph.role = "parameter", graph.updates = 2 : i64},
// ADAMW-SAME: tensor<3x4xf32> {graph.name = "w.exp_avg", graph.role = "optimizer_state", graph.updates = 4 : i64},
// ADAMW-SAME: tensor<3x4xf32> {graph.name = "w.exp_avg_sq", graph.role = "optimizer_state", graph.updates = 5 : i64},
// ADAMW-SAME: tensor<i64> {graph.name = "step", graph.role = "step", graph.updates = 6 : i64})
// ADAMW: %[[G:.*]]:3 = call @gradients(%arg0, %arg1, %arg2, %arg3, %arg6, %arg7)
// ADAMW: graph.sqrt
// ADAMW: graph.clip %{{.*}} {max = 1.000000e+00 : f64}
// ADAMW: %[[P:.*]], %[[M:.*]], %[[V:.*]] = graph.adam_update %arg1, %{{.*}}, %arg4, %arg5, %arg8, %arg6 {decoupled = true, weight_decay = 1.000000e-02 : f64}
// The parameter the loss does not depend on is returned unchanged.
// ADAMW: %[[STEP:.*]] = graph.add %arg6, %{{.*}} : (tensor<i64>, tensor<i64>) -> tensor<i64>
// ADAMW: return %[[G]]#0, %[[P]], %arg2, %[[M]], %[[V]], %[[STEP]]

// SGD-LABEL: func.func @train_step
// SGD-SAME: {graph.name = "w.momentum_buffer", graph.role = "optimizer_state"}
// SGD: graph.sgd_update %arg1, %{{.*}}, %arg7, %arg5, %arg4 {momentum = 9.000000e-01 : f64, nesterov = true, weight_decay = 1.000000e-04 : f64}
func.func @forward(%x: tensor<2x3xf32> {graph.name = "x", graph.role = "input"},
                   %w: tensor<3x4xf32> {graph.name = "w", graph.role = "parameter"},
                   %unused: tensor<3x4xf32> {graph.name = "frozen_path", graph.role = "parameter"}) -> tensor<2x4xf32> {
  %0 = graph.matmul %x, %w : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}
