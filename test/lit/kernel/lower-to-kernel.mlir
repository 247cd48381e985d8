// --trainc-lower-to-kernel: graph ops become launches on buffers; results
// that replace arguments land in them (in place for optimizer updates and
// batch norms' running statistics that read the state last, by a final
// copy otherwise); other results become output arguments.
// RUN: trainc-opt %s --trainc-lower-to-kernel | FileCheck %s
// RUN: trainc-opt %s --trainc-lower-to-kernel=functions=views | FileCheck %s --check-prefix=VIEWS
// RUN: trainc-opt %s --trainc-lower-to-kernel=functions=norm | FileCheck %s --check-prefix=NORM

// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %[[X:.*]]: memref<2x3xf32> {graph.name = "x", graph.role = "input"},
// CHECK-SAME: %[[W:.*]]: memref<3xf32> {graph.name = "w", graph.role = "parameter"},
// CHECK-SAME: %[[S:.*]]: memref<3xf32> {graph.name = "s", graph.role = "state"},
// CHECK-SAME: %[[LR:.*]]: memref<f32> {graph.name = "learning_rate", graph.role = "learning_rate"},
// CHECK-SAME: %[[STEP:.*]]: memref<i64> {graph.name = "step", graph.role = "step"},
// CHECK-SAME: %[[LOSS:.*]]: memref<f32> {graph.name = "loss", graph.role = "loss"})
// CHECK-NOT: -> 
// CHECK: %[[ONE:.*]] = kernel.constant dense<1.000000e+00> : tensor<f32> : memref<f32>
// CHECK: %[[Y:.*]] = kernel.alloc : memref<2x3xf32>
// CHECK: kernel.launch "graph.mul"(%[[X]], %[[W]]) -> (%[[Y]]) {options = {}}
// CHECK: %[[L:.*]] = kernel.alloc : memref<f32>
// CHECK: kernel.launch "graph.reduce_sum"(%[[Y]]) -> (%[[L]]) {options = {axes = array<i64: 0, 1>, keepdims = false}}
// The optimizer is the last reader of w: it updates it in place.
// CHECK: kernel.launch "graph.sgd_update"(%[[W]], %{{.*}}, %[[LR]], %[[STEP]]) -> (%[[W]])
// The state's new value is computed elsewhere: it is copied in at the end.
// CHECK: %[[NS:.*]] = kernel.alloc : memref<3xf32>
// CHECK: kernel.launch "graph.add"(%[[S]], %[[ONE]]) -> (%[[NS]])
// CHECK: kernel.launch "runtime.copy"(%[[L]]) -> (%[[LOSS]])
// CHECK: kernel.launch "runtime.copy"(%[[NS]]) -> (%[[S]])
// CHECK: return
// CHECK-NOT: func.func @other
func.func @train_step(%x: tensor<2x3xf32> {graph.name = "x", graph.role = "input"},
                      %w: tensor<3xf32> {graph.name = "w", graph.role = "parameter"},
                      %s: tensor<3xf32> {graph.name = "s", graph.role = "state"},
                      %lr: tensor<f32> {graph.name = "learning_rate", graph.role = "learning_rate"},
                      %step: tensor<i64> {graph.name = "step", graph.role = "step"})
    -> (tensor<f32> {graph.name = "loss", graph.role = "loss"},
        tensor<3xf32> {graph.name = "w", graph.role = "parameter", graph.updates = 1 : i64},
        tensor<3xf32> {graph.name = "s", graph.role = "state", graph.updates = 2 : i64}) {
  %one = graph.constant dense<1.0> : tensor<f32>
  %y = graph.mul %x, %w : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %l = graph.reduce_sum %y {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xf32>) -> tensor<f32>
  %g = graph.reduce_sum %x {axes = array<i64: 0>, keepdims = false} : (tensor<2x3xf32>) -> tensor<3xf32>
  %nw = graph.sgd_update %w, %g, %lr, %step : (tensor<3xf32>, tensor<3xf32>, tensor<f32>, tensor<i64>) -> tensor<3xf32>
  %ns = graph.add %s, %one : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  return %l, %nw, %ns : tensor<f32>, tensor<3xf32>, tensor<3xf32>
}

func.func @eval(%x: tensor<2x3xf32> {graph.name = "x", graph.role = "input"}) -> (tensor<2x3xf32> {graph.name = "y"}) {
  %y = graph.relu %x : tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

func.func @other() {
  return
}

// Reshapes view their operand's buffer. The update of w must not run in
// place while a view of w is still to be read: %v is read after the
// update, so the update writes a fresh buffer that is copied in at the end.
// VIEWS-LABEL: func.func @views(
// VIEWS-SAME: %[[W:[^:]*]]: memref<2x3xf32>
// VIEWS: %[[V:.*]] = kernel.view %[[W]] : memref<2x3xf32> to memref<6xf32>
// VIEWS: %[[NW:.*]] = kernel.alloc : memref<2x3xf32>
// VIEWS: kernel.launch "graph.sgd_update"(%[[W]], {{.*}}) -> (%[[NW]])
// VIEWS: kernel.launch "graph.neg"(%[[V]])
// VIEWS: kernel.launch "runtime.copy"(%[[NW]]) -> (%[[W]])
func.func @views(%w: tensor<2x3xf32> {graph.name = "w", graph.role = "parameter"},
                 %lr: tensor<f32> {graph.name = "learning_rate", graph.role = "learning_rate"},
                 %step: tensor<i64> {graph.name = "step", graph.role = "step"})
    -> (tensor<6xf32> {graph.name = "y"},
        tensor<2x3xf32> {graph.name = "w", graph.role = "parameter", graph.updates = 0 : i64}) {
  %v = graph.reshape %w {shape = array<i64: 6>} : (tensor<2x3xf32>) -> tensor<6xf32>
  %nw = graph.sgd_update %w, %w, %lr, %step : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<f32>, tensor<i64>) -> tensor<2x3xf32>
  %y = graph.neg %v : tensor<6xf32>
  return %y, %nw : tensor<6xf32>, tensor<2x3xf32>
}

// A batch norm in training, the last reader of its running statistics,
// writes the new ones in place (every backend may: the kernels' aliasing
// contract); only the output y is copied out.
// NORM-LABEL: func.func @norm(
// NORM-SAME: %[[X:[^:]*]]: memref<4x3x8x8xf32>
// NORM-SAME: %[[C:[^:]*]]: memref<3xf32>
// NORM-SAME: %[[M:[^:]*]]: memref<3xf32>
// NORM-SAME: %[[V:[^:]*]]: memref<3xf32>
// NORM: kernel.launch "graph.batch_norm_training"(%[[X]], %[[C]], %[[C]], %[[M]], %[[V]]) -> (%{{.*}}, %[[M]], %[[V]])
// NORM-NEXT: kernel.launch "runtime.copy"({{.*}} : (memref<4x3x8x8xf32>) -> memref<4x3x8x8xf32>
// NORM-NOT: runtime.copy
func.func @norm(%x: tensor<4x3x8x8xf32> {graph.name = "x", graph.role = "input"},
                %c: tensor<3xf32> {graph.name = "c", graph.role = "parameter"},
                %m: tensor<3xf32> {graph.name = "m", graph.role = "state"},
                %v: tensor<3xf32> {graph.name = "v", graph.role = "state"})
    -> (tensor<4x3x8x8xf32> {graph.name = "y"},
        tensor<3xf32> {graph.name = "m", graph.role = "state", graph.updates = 2 : i64},
        tensor<3xf32> {graph.name = "v", graph.role = "state", graph.updates = 3 : i64}) {
  %y, %nm, %nv = graph.batch_norm_training %x, %c, %c, %m, %v {epsilon = 1.0e-5, momentum = 0.9} : (tensor<4x3x8x8xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<4x3x8x8xf32>, tensor<3xf32>, tensor<3xf32>)
  return %y, %nm, %nv : tensor<4x3x8x8xf32>, tensor<3xf32>, tensor<3xf32>
}
