// A model of several outputs (Inception-v3 and GoogLeNet with their
// auxiliary heads): --trainc-autodiff="output-weights=..." trains on the
// weighted sum of the loss on each output, against one set of labels.
// RUN: trainc-opt %s --trainc-autodiff="output-weights=1,0.4" | FileCheck %s
// RUN: trainc-opt %s --trainc-autodiff="output-weights=1,0" | FileCheck %s --check-prefix=ZERO
// RUN: not trainc-opt %s --trainc-autodiff 2>&1 | FileCheck %s --check-prefix=NONE
// RUN: not trainc-opt %s --trainc-autodiff="output-weights=1" 2>&1 | FileCheck %s --check-prefix=COUNT
// RUN: not trainc-opt %s --trainc-autodiff="output-weights=0,0" 2>&1 | FileCheck %s --check-prefix=ALLZERO
// RUN: not trainc-opt %s --trainc-autodiff="output-weights=1,-1" 2>&1 | FileCheck %s --check-prefix=NEGATIVE

// Both outputs' losses, the auxiliary one scaled by 0.4, summed; the
// labels come once.
// CHECK-LABEL: func.func @gradients
// CHECK-SAME: %{{.*}}: tensor<2xi64> {graph.name = "labels", graph.role = "labels"}
// CHECK: %[[MAIN:.*]] = graph.matmul %arg0, %arg1
// CHECK: %[[AUX:.*]] = graph.matmul %arg0, %arg2
// CHECK: %[[L0:.*]] = graph.softmax_cross_entropy %[[MAIN]], %arg3
// CHECK: %[[L1:.*]] = graph.softmax_cross_entropy %[[AUX]], %arg3
// CHECK: %[[W:.*]] = graph.constant dense<4.000000e-01> : tensor<f32>
// CHECK: %[[SCALED:.*]] = graph.mul %[[L1]], %[[W]]
// CHECK: %[[LOSS:.*]] = graph.add %[[L0]], %[[SCALED]]
// CHECK: return %[[LOSS]]
// Both heads are trained.
// CHECK-LABEL: func.func @train_step
// CHECK-COUNT-2: graph.sgd_update

// Weight 0: the auxiliary head is computed, not trained.
// ZERO-LABEL: func.func @gradients
// ZERO: graph.softmax_cross_entropy %{{.*}} -> tensor<f32>
// ZERO-NOT: graph.softmax_cross_entropy {{.*}} -> tensor<f32>
// ZERO-LABEL: func.func @train_step
// ZERO-COUNT-1: graph.sgd_update
// ZERO-NOT: graph.sgd_update

// NONE: the model has 2 outputs ('logits', 'aux'); training needs one loss: give the weight of each output's loss (--output-weights
// COUNT: --output-weights has 1 weight, the model 2 outputs ('logits', 'aux')
// ALLZERO: every output weight is 0: nothing to train
// NEGATIVE: the output weights must be finite and >= 0, not -1

func.func @forward(%x: tensor<2x3xf32> {graph.name = "x", graph.role = "input"},
                   %w: tensor<3x5xf32> {graph.name = "w", graph.role = "parameter"},
                   %v: tensor<3x5xf32> {graph.name = "v", graph.role = "parameter"})
    -> (tensor<2x5xf32> {graph.name = "logits"}, tensor<2x5xf32> {graph.name = "aux"}) {
  %0 = graph.matmul %x, %w : (tensor<2x3xf32>, tensor<3x5xf32>) -> tensor<2x5xf32>
  %1 = graph.matmul %x, %v : (tensor<2x3xf32>, tensor<3x5xf32>) -> tensor<2x5xf32>
  return %0, %1 : tensor<2x5xf32>, tensor<2x5xf32>
}
