// --trainc-schedule-updates: each optimizer update moves up to right after
// the last launch it depends on.
// RUN: trainc-opt %s --trainc-schedule-updates | FileCheck %s

// w's update follows its gradient and the last read of w (the input
// gradient); v's update waits for a read through a view of v, u's for the
// launch that writes its learning rate.
// CHECK-LABEL: func.func @train_step
// CHECK: kernel.launch "graph.conv_backward_weight"({{.*}}) -> (%[[GW:[a-z0-9]+]])
// CHECK: kernel.launch "graph.conv_backward_input"
// CHECK: kernel.launch "graph.sgd_update"(%[[W:[a-z0-9]+]], %[[GW]], {{.*}}) -> (%[[W]])
// CHECK: kernel.launch "graph.relu"
// CHECK: kernel.launch "graph.gemm"
// CHECK: kernel.launch "graph.sgd_update"(%[[V:[a-z0-9]+]], {{.*}}) -> (%[[V]])
// CHECK: kernel.launch "graph.mul"
// CHECK: kernel.launch "runtime.copy"
// CHECK: kernel.launch "graph.sgd_update"(%[[U:[a-z0-9]+]], {{.*}}) -> (%[[U]])
// CHECK-NEXT: return
func.func @train_step(%x: memref<1x3x5x5xf32>, %w: memref<2x3x3x3xf32>,
                      %v: memref<6xf32>, %u: memref<6xf32>,
                      %lr: memref<f32>, %lru: memref<f32>, %step: memref<i64>) {
  %y = kernel.alloc : memref<1x2x3x3xf32>
  kernel.launch "graph.conv"(%x, %w) -> (%y) {backend = "dnnl", options = {}} : (memref<1x3x5x5xf32>, memref<2x3x3x3xf32>) -> memref<1x2x3x3xf32>
  %gw = kernel.alloc : memref<2x3x3x3xf32>
  kernel.launch "graph.conv_backward_weight"(%y, %x) -> (%gw) {backend = "dnnl", options = {}} : (memref<1x2x3x3xf32>, memref<1x3x5x5xf32>) -> memref<2x3x3x3xf32>
  %dx = kernel.alloc : memref<1x3x5x5xf32>
  kernel.launch "graph.conv_backward_input"(%y, %w) -> (%dx) {backend = "dnnl", options = {}} : (memref<1x2x3x3xf32>, memref<2x3x3x3xf32>) -> memref<1x3x5x5xf32>
  %gv = kernel.alloc : memref<6xf32>
  kernel.launch "graph.relu"(%v) -> (%gv) {backend = "generated", options = {}} : (memref<6xf32>) -> memref<6xf32>
  %vm = kernel.view %v : memref<6xf32> to memref<2x3xf32>
  %a = kernel.alloc : memref<3x3xf32>
  kernel.launch "graph.gemm"(%vm, %vm) -> (%a) {backend = "dnnl", options = {transA = true}} : (memref<2x3xf32>, memref<2x3xf32>) -> memref<3x3xf32>
  %gu = kernel.alloc : memref<6xf32>
  kernel.launch "graph.mul"(%u, %u) -> (%gu) {backend = "generated", options = {}} : (memref<6xf32>, memref<6xf32>) -> memref<6xf32>
  kernel.launch "runtime.copy"(%lr) -> (%lru) {backend = "generated", options = {}} : (memref<f32>) -> memref<f32>
  kernel.launch "graph.sgd_update"(%w, %gw, %lr, %step) -> (%w) {backend = "generated", options = {}} : (memref<2x3x3x3xf32>, memref<2x3x3x3xf32>, memref<f32>, memref<i64>) -> memref<2x3x3x3xf32>
  kernel.launch "graph.sgd_update"(%v, %gv, %lr, %step) -> (%v) {backend = "generated", options = {}} : (memref<6xf32>, memref<6xf32>, memref<f32>, memref<i64>) -> memref<6xf32>
  kernel.launch "graph.sgd_update"(%u, %gu, %lru, %step) -> (%u) {backend = "generated", options = {}} : (memref<6xf32>, memref<6xf32>, memref<f32>, memref<i64>) -> memref<6xf32>
  return
}
