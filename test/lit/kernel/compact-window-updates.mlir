// --trainc-compact-window-updates: an update that writes the copy of its
// gradient's window (window_copy) and leaves elements of zero gradient
// and zero state as they are (no weight decay) runs on the copy alone,
// with optimizer state of the window's shape; @eval reads the copy where
// it sliced that window; the copy gets graph.window_starts (here and in
// @refresh_weight_copies).
// RUN: trainc-opt %s --trainc-compact-window-updates -split-input-file | FileCheck %s

// CHECK-LABEL: func.func @train_step
// CHECK-SAME: %[[W:[a-z0-9]+]]: memref<8x4x3x3xf32> {graph.name = "w", graph.role = "parameter"}
// CHECK-SAME: %[[M:[a-z0-9]+]]: memref<8x4x1x1xf32> {graph.name = "w.momentum_buffer", graph.role = "optimizer_state"}
// CHECK-SAME: %[[C:[a-z0-9]+]]: memref<8x4x1x1xf32> {graph.copy_of = "w", graph.name = "w.window", graph.role = "weight_copy", graph.window_starts = array<i64: 0, 0, 1, 1>}
// CHECK: kernel.launch "graph.sgd_update"(%[[C]], %{{.*}}, %{{.*}}, %{{.*}}, %[[M]]) -> (%[[C]], %[[M]]) {backend = "generated", options = {momentum = 9.000000e-01 : f64, weight_decay = 0.000000e+00 : f64}} : (memref<8x4x1x1xf32>, memref<8x4x1x1xf32>, memref<f32>, memref<i64>, memref<8x4x1x1xf32>) -> (memref<8x4x1x1xf32>, memref<8x4x1x1xf32>)
// CHECK-LABEL: func.func @refresh_weight_copies
// CHECK-SAME: graph.window_starts = array<i64: 0, 0, 1, 1>
// CHECK-LABEL: func.func @eval
// CHECK-SAME: %[[EW:[a-z0-9]+]]: memref<8x4x3x3xf32> {graph.name = "w"
// CHECK-SAME: %[[EC:[a-z0-9]+]]: memref<8x4x1x1xf32> {graph.copy_of = "w", graph.name = "w.window", graph.role = "weight_copy", graph.window_starts = array<i64: 0, 0, 1, 1>}
// CHECK-NOT: graph.slice
// CHECK: kernel.launch "graph.conv"(%{{.*}}, %[[EC]])
func.func @train_step(%w: memref<8x4x3x3xf32> {graph.name = "w", graph.role = "parameter"},
                      %m: memref<8x4x3x3xf32> {graph.name = "w.momentum_buffer", graph.role = "optimizer_state"},
                      %x: memref<2x4x1x1xf32> {graph.name = "x", graph.role = "input"},
                      %lr: memref<f32> {graph.name = "learning_rate", graph.role = "learning_rate"},
                      %step: memref<i64> {graph.name = "step", graph.role = "step"},
                      %c: memref<8x4x1x1xf32> {graph.copy_of = "w", graph.name = "w.window", graph.role = "weight_copy"}) {
  %y = kernel.alloc : memref<2x8x1x1xf32>
  kernel.launch "graph.conv"(%x, %c) -> (%y) {backend = "dnnl", options = {}} : (memref<2x4x1x1xf32>, memref<8x4x1x1xf32>) -> memref<2x8x1x1xf32>
  %gw = kernel.alloc : memref<8x4x1x1xf32>
  kernel.launch "graph.conv_backward_weight"(%y, %x) -> (%gw) {backend = "dnnl", options = {}} : (memref<2x8x1x1xf32>, memref<2x4x1x1xf32>) -> memref<8x4x1x1xf32>
  kernel.launch "graph.sgd_update"(%w, %gw, %lr, %step, %m) -> (%w, %m, %c) {backend = "generated", options = {gradient_starts = array<i64: 0, 0, 1, 1>, momentum = 9.000000e-01 : f64, weight_decay = 0.000000e+00 : f64, window_copy = true}} : (memref<8x4x3x3xf32>, memref<8x4x1x1xf32>, memref<f32>, memref<i64>, memref<8x4x3x3xf32>) -> (memref<8x4x3x3xf32>, memref<8x4x3x3xf32>, memref<8x4x1x1xf32>)
  return
}
func.func @refresh_weight_copies(%w: memref<8x4x3x3xf32> {graph.name = "w", graph.role = "parameter"},
                                 %c: memref<8x4x1x1xf32> {graph.copy_of = "w", graph.name = "w.window", graph.role = "weight_copy"}) {
  kernel.launch "graph.slice"(%w) -> (%c) {backend = "generated", options = {starts = array<i64: 0, 0, 1, 1>, steps = array<i64: 1, 1, 1, 1>}} : (memref<8x4x3x3xf32>) -> memref<8x4x1x1xf32>
  return
}
func.func @eval(%x: memref<2x4x1x1xf32> {graph.name = "x", graph.role = "input"},
                %w: memref<8x4x3x3xf32> {graph.name = "w", graph.role = "parameter"},
                %y: memref<2x8x1x1xf32> {graph.name = "y", graph.role = "output"}) {
  %ws = kernel.alloc : memref<8x4x1x1xf32>
  kernel.launch "graph.slice"(%w) -> (%ws) {backend = "generated", options = {starts = array<i64: 0, 0, 1, 1>, steps = array<i64: 1, 1, 1, 1>}} : (memref<8x4x3x3xf32>) -> memref<8x4x1x1xf32>
  kernel.launch "graph.conv"(%x, %ws) -> (%y) {backend = "dnnl", options = {}} : (memref<2x4x1x1xf32>, memref<8x4x1x1xf32>) -> memref<2x8x1x1xf32>
  return
}

// -----

// Left alone: weight decay changes the dead taps (a); the parameter read
// by another launch of @train_step (b); state another launch reads (d);
// @eval reading the whole parameter (e).
// CHECK-LABEL: func.func @train_step
// CHECK-NOT: graph.window_starts
// CHECK-COUNT-4: window_copy = true
// CHECK-NOT: graph.window_starts
func.func @train_step(%a: memref<8x4x3x3xf32> {graph.name = "a", graph.role = "parameter"},
                      %b: memref<8x4x3x3xf32> {graph.name = "b", graph.role = "parameter"},
                      %d: memref<8x4x3x3xf32> {graph.name = "d", graph.role = "parameter"},
                      %dm: memref<8x4x3x3xf32> {graph.name = "d.momentum_buffer", graph.role = "optimizer_state"},
                      %e: memref<8x4x3x3xf32> {graph.name = "e", graph.role = "parameter"},
                      %g: memref<8x4x1x1xf32> {graph.name = "g", graph.role = "input"},
                      %lr: memref<f32> {graph.name = "learning_rate", graph.role = "learning_rate"},
                      %step: memref<i64> {graph.name = "step", graph.role = "step"},
                      %ac: memref<8x4x1x1xf32> {graph.copy_of = "a", graph.name = "a.window", graph.role = "weight_copy"},
                      %bc: memref<8x4x1x1xf32> {graph.copy_of = "b", graph.name = "b.window", graph.role = "weight_copy"},
                      %dc: memref<8x4x1x1xf32> {graph.copy_of = "d", graph.name = "d.window", graph.role = "weight_copy"},
                      %ec: memref<8x4x1x1xf32> {graph.copy_of = "e", graph.name = "e.window", graph.role = "weight_copy"}) {
  kernel.launch "graph.sgd_update"(%a, %g, %lr, %step) -> (%a, %ac) {backend = "generated", options = {gradient_starts = array<i64: 0, 0, 1, 1>, weight_decay = 1.000000e-04 : f64, window_copy = true}} : (memref<8x4x3x3xf32>, memref<8x4x1x1xf32>, memref<f32>, memref<i64>) -> (memref<8x4x3x3xf32>, memref<8x4x1x1xf32>)
  %n = kernel.alloc : memref<8x4x3x3xf32>
  kernel.launch "graph.relu"(%b) -> (%n) {backend = "generated", options = {}} : (memref<8x4x3x3xf32>) -> memref<8x4x3x3xf32>
  kernel.launch "graph.sgd_update"(%b, %g, %lr, %step) -> (%b, %bc) {backend = "generated", options = {gradient_starts = array<i64: 0, 0, 1, 1>, window_copy = true}} : (memref<8x4x3x3xf32>, memref<8x4x1x1xf32>, memref<f32>, memref<i64>) -> (memref<8x4x3x3xf32>, memref<8x4x1x1xf32>)
  %o = kernel.alloc : memref<8x4x3x3xf32>
  kernel.launch "graph.relu"(%dm) -> (%o) {backend = "generated", options = {}} : (memref<8x4x3x3xf32>) -> memref<8x4x3x3xf32>
  kernel.launch "graph.sgd_update"(%d, %g, %lr, %step, %dm) -> (%d, %dm, %dc) {backend = "generated", options = {gradient_starts = array<i64: 0, 0, 1, 1>, momentum = 9.000000e-01 : f64, window_copy = true}} : (memref<8x4x3x3xf32>, memref<8x4x1x1xf32>, memref<f32>, memref<i64>, memref<8x4x3x3xf32>) -> (memref<8x4x3x3xf32>, memref<8x4x3x3xf32>, memref<8x4x1x1xf32>)
  kernel.launch "graph.sgd_update"(%e, %g, %lr, %step) -> (%e, %ec) {backend = "generated", options = {gradient_starts = array<i64: 0, 0, 1, 1>, window_copy = true}} : (memref<8x4x3x3xf32>, memref<8x4x1x1xf32>, memref<f32>, memref<i64>) -> (memref<8x4x3x3xf32>, memref<8x4x1x1xf32>)
  return
}
func.func @eval(%x: memref<2x4x3x3xf32> {graph.name = "x", graph.role = "input"},
                %e: memref<8x4x3x3xf32> {graph.name = "e", graph.role = "parameter"},
                %y: memref<2x8x1x1xf32> {graph.name = "y", graph.role = "output"}) {
  kernel.launch "graph.conv"(%x, %e) -> (%y) {backend = "dnnl", options = {}} : (memref<2x4x3x3xf32>, memref<8x4x3x3xf32>) -> memref<2x8x1x1xf32>
  return
}
