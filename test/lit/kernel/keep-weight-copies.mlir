// --trainc-keep-weight-copies: the low-precision casts of a parameter in
// @train_step become a persistent copy (role weight_copy), written by a
// cast after the parameter's update and after the last read of this
// step's copy; @refresh_weight_copies makes every copy from its parameter.
// RUN: trainc-opt %s --trainc-keep-weight-copies -split-input-file | FileCheck %s

// w: the forward product and the input gradient read the copy; the update
// (after the weight gradient) moves down past the input gradient to the
// cast that writes the next step's copy. b: its cast's only reader comes
// before the update, which stays. v (f32 only) and s (state) keep no copy.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: %[[W:[a-z0-9]+]]: memref<4x8xf32> {graph.name = "w", graph.role = "parameter"}
// CHECK-SAME: %[[B:[a-z0-9]+]]: memref<4xf32> {graph.name = "b", graph.role = "parameter"}
// CHECK-SAME: %[[WC:[a-z0-9]+]]: memref<4x8xbf16> {graph.copy_of = "w", graph.name = "w.bf16", graph.role = "weight_copy"}
// CHECK-SAME: %[[BC:[a-z0-9]+]]: memref<4xbf16> {graph.copy_of = "b", graph.name = "b.bf16", graph.role = "weight_copy"}
// CHECK-NOT: "graph.cast"(%[[W]])
// CHECK: kernel.launch "graph.gemm"(%{{.*}}, %[[WC]], %[[BC]])
// CHECK: kernel.launch "graph.gemm"
// CHECK: kernel.launch "graph.cast"(%{{.*}}) -> (%[[GW:[0-9]+]]) {{.*}}to = f32
// CHECK: kernel.launch "graph.sgd_update"(%[[B]], {{.*}}) -> (%[[B]])
// CHECK-NEXT: kernel.launch "graph.cast"(%[[B]]) -> (%[[BC]]) {backend = "generated", options = {to = bf16}}
// CHECK: kernel.launch "graph.gemm"(%{{.*}}, %[[WC]]) -> (%[[DX:[0-9]+]])
// CHECK-NEXT: kernel.launch "graph.sgd_update"(%[[W]], %[[GW]], {{.*}}) -> (%[[W]])
// CHECK-NEXT: kernel.launch "graph.cast"(%[[W]]) -> (%[[WC]]) {backend = "generated", options = {to = bf16}}
// CHECK: kernel.launch "graph.sgd_update"(%arg2,
// CHECK-NOT: graph.cast
// CHECK: return
// CHECK-LABEL: func.func @refresh_weight_copies
// CHECK-SAME: (%[[RW:[a-z0-9]+]]: memref<4x8xf32> {graph.name = "w", graph.role = "parameter"}, %[[RB:[a-z0-9]+]]: memref<4xf32> {graph.name = "b", graph.role = "parameter"}, %[[RWC:[a-z0-9]+]]: memref<4x8xbf16> {graph.copy_of = "w", graph.name = "w.bf16", graph.role = "weight_copy"}, %[[RBC:[a-z0-9]+]]: memref<4xbf16> {graph.copy_of = "b", graph.name = "b.bf16", graph.role = "weight_copy"})
// CHECK-NEXT: kernel.launch "graph.cast"(%[[RW]]) -> (%[[RWC]]) {backend = "generated", options = {to = bf16}}
// CHECK-NEXT: kernel.launch "graph.cast"(%[[RB]]) -> (%[[RBC]]) {backend = "generated", options = {to = bf16}}
// CHECK-NEXT: return
// @eval keeps its casts.
// CHECK-LABEL: func.func @eval
// CHECK: kernel.launch "graph.cast"
func.func @train_step(%x: memref<2x8xbf16> {graph.name = "x", graph.role = "input"},
                      %w: memref<4x8xf32> {graph.name = "w", graph.role = "parameter"},
                      %v: memref<4xf32> {graph.name = "v", graph.role = "parameter"},
                      %b: memref<4xf32> {graph.name = "b", graph.role = "parameter"},
                      %s: memref<4xf32> {graph.name = "s", graph.role = "state"},
                      %lr: memref<f32> {graph.name = "learning_rate", graph.role = "learning_rate"},
                      %step: memref<i64> {graph.name = "step", graph.role = "step"}) {
  %wc = kernel.alloc : memref<4x8xbf16>
  kernel.launch "graph.cast"(%w) -> (%wc) {backend = "generated", options = {to = bf16}} : (memref<4x8xf32>) -> memref<4x8xbf16>
  %bc = kernel.alloc : memref<4xbf16>
  kernel.launch "graph.cast"(%b) -> (%bc) {backend = "generated", options = {to = bf16}} : (memref<4xf32>) -> memref<4xbf16>
  %sc = kernel.alloc : memref<4xbf16>
  kernel.launch "graph.cast"(%s) -> (%sc) {backend = "generated", options = {to = bf16}} : (memref<4xf32>) -> memref<4xbf16>
  %y = kernel.alloc : memref<2x4xbf16>
  kernel.launch "graph.gemm"(%x, %wc, %bc) -> (%y) {backend = "dnnl", options = {trans_b = true}} : (memref<2x8xbf16>, memref<4x8xbf16>, memref<4xbf16>) -> memref<2x4xbf16>
  %gw = kernel.alloc : memref<4x8xbf16>
  kernel.launch "graph.gemm"(%y, %x) -> (%gw) {backend = "dnnl", options = {trans_a = true}} : (memref<2x4xbf16>, memref<2x8xbf16>) -> memref<4x8xbf16>
  %gb = kernel.alloc : memref<4xf32>
  kernel.launch "graph.reduce_sum"(%y) -> (%gb) {backend = "generated", options = {axes = array<i64: 0>}} : (memref<2x4xbf16>) -> memref<4xf32>
  %gwf = kernel.alloc : memref<4x8xf32>
  kernel.launch "graph.cast"(%gw) -> (%gwf) {backend = "generated", options = {to = f32}} : (memref<4x8xbf16>) -> memref<4x8xf32>
  kernel.launch "graph.sgd_update"(%w, %gwf, %lr, %step) -> (%w) {backend = "generated", options = {}} : (memref<4x8xf32>, memref<4x8xf32>, memref<f32>, memref<i64>) -> memref<4x8xf32>
  kernel.launch "graph.sgd_update"(%b, %gb, %lr, %step) -> (%b) {backend = "generated", options = {}} : (memref<4xf32>, memref<4xf32>, memref<f32>, memref<i64>) -> memref<4xf32>
  %dx = kernel.alloc : memref<2x8xbf16>
  kernel.launch "graph.gemm"(%y, %wc) -> (%dx) {backend = "dnnl", options = {}} : (memref<2x4xbf16>, memref<4x8xbf16>) -> memref<2x8xbf16>
  kernel.launch "graph.sgd_update"(%v, %gb, %lr, %step) -> (%v) {backend = "generated", options = {}} : (memref<4xf32>, memref<4xf32>, memref<f32>, memref<i64>) -> memref<4xf32>
  return
}
func.func @eval(%x: memref<2x8xbf16> {graph.name = "x", graph.role = "input"},
                %w: memref<4x8xf32> {graph.name = "w", graph.role = "parameter"},
                %y: memref<2x4xbf16> {graph.name = "y", graph.role = "output"}) {
  %wc = kernel.alloc : memref<4x8xbf16>
  kernel.launch "graph.cast"(%w) -> (%wc) {backend = "generated", options = {to = bf16}} : (memref<4x8xf32>) -> memref<4x8xbf16>
  kernel.launch "graph.gemm"(%x, %wc) -> (%y) {backend = "dnnl", options = {trans_b = true}} : (memref<2x8xbf16>, memref<4x8xbf16>) -> memref<2x4xbf16>
  return
}

// -----

// The update cannot move past the input gradient (which writes the
// update's learning rate, as a stand-in for any conflict): the copy is
// written after that launch instead, unfused. A parameter cast after its
// update, or written twice, keeps its casts.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: %[[W:[a-z0-9]+]]: memref<8xf32> {graph.name = "w"
// CHECK-SAME: %[[U:[a-z0-9]+]]: memref<8xf32> {graph.name = "u"
// CHECK-SAME: %[[T:[a-z0-9]+]]: memref<8xf32> {graph.name = "t"
// CHECK-SAME: %[[WC:[a-z0-9]+]]: memref<8xbf16> {graph.copy_of = "w"
// CHECK-NOT: graph.copy_of
// CHECK: kernel.launch "graph.sgd_update"(%[[W]], {{.*}}) -> (%[[W]])
// CHECK: kernel.launch "graph.mul"(%[[WC]], {{.*}})
// CHECK-NEXT: kernel.launch "graph.cast"(%[[W]]) -> (%[[WC]])
// CHECK: kernel.launch "graph.cast"(%[[U]])
// CHECK: kernel.launch "graph.cast"(%[[T]])
// CHECK: func.func @refresh_weight_copies(%{{.*}}: memref<8xf32> {graph.name = "w", graph.role = "parameter"}, %{{.*}}: memref<8xbf16> {graph.copy_of = "w", graph.name = "w.bf16", graph.role = "weight_copy"})
func.func @train_step(%w: memref<8xf32> {graph.name = "w", graph.role = "parameter"},
                      %u: memref<8xf32> {graph.name = "u", graph.role = "parameter"},
                      %t: memref<8xf32> {graph.name = "t", graph.role = "parameter"},
                      %g: memref<8xf32> {graph.name = "g", graph.role = "input"},
                      %lr: memref<f32> {graph.name = "learning_rate", graph.role = "learning_rate"},
                      %step: memref<i64> {graph.name = "step", graph.role = "step"}) {
  %wc = kernel.alloc : memref<8xbf16>
  kernel.launch "graph.cast"(%w) -> (%wc) {backend = "generated", options = {to = bf16}} : (memref<8xf32>) -> memref<8xbf16>
  kernel.launch "graph.sgd_update"(%w, %g, %lr, %step) -> (%w) {backend = "generated", options = {}} : (memref<8xf32>, memref<8xf32>, memref<f32>, memref<i64>) -> memref<8xf32>
  %d = kernel.alloc : memref<8xbf16>
  kernel.launch "graph.mul"(%wc, %wc) -> (%d, %lr) {backend = "generated", options = {}} : (memref<8xbf16>, memref<8xbf16>) -> (memref<8xbf16>, memref<f32>)
  kernel.launch "graph.sgd_update"(%u, %g, %lr, %step) -> (%u) {backend = "generated", options = {}} : (memref<8xf32>, memref<8xf32>, memref<f32>, memref<i64>) -> memref<8xf32>
  %uc = kernel.alloc : memref<8xbf16>
  kernel.launch "graph.cast"(%u) -> (%uc) {backend = "generated", options = {to = bf16}} : (memref<8xf32>) -> memref<8xbf16>
  %tc = kernel.alloc : memref<8xbf16>
  kernel.launch "graph.cast"(%t) -> (%tc) {backend = "generated", options = {to = bf16}} : (memref<8xf32>) -> memref<8xbf16>
  kernel.launch "graph.sgd_update"(%t, %g, %lr, %step) -> (%t) {backend = "generated", options = {}} : (memref<8xf32>, memref<8xf32>, memref<f32>, memref<i64>) -> memref<8xf32>
  kernel.launch "graph.sgd_update"(%t, %g, %lr, %step) -> (%t) {backend = "generated", options = {}} : (memref<8xf32>, memref<8xf32>, memref<f32>, memref<i64>) -> memref<8xf32>
  return
}

// -----

// f32: the live taps of w (--trainc-drop-dead-taps' slice, read by the
// forward and the input gradient) become the copy w.window, written by
// w's windowed update itself (`window_copy`), which moves down past the
// input gradient; @refresh_weight_copies slices it. u: the update cannot
// move past the input gradient (which writes the learning rate, as a
// stand-in for any conflict): a slice launch after it writes the copy.
// Left alone: a slice of another window than the update's gradient (v), a
// slice with a step (t), and an update of the reference backend (r).
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: %[[W:[a-z0-9]+]]: memref<8x4x3x3xf32> {graph.name = "w"
// CHECK-SAME: %[[U:[a-z0-9]+]]: memref<8x4x3x3xf32> {graph.name = "u"
// CHECK-SAME: %[[WW:[a-z0-9]+]]: memref<8x4x1x1xf32> {graph.copy_of = "w", graph.name = "w.window", graph.role = "weight_copy"}
// CHECK-SAME: %[[UW:[a-z0-9]+]]: memref<8x4x1x1xf32> {graph.copy_of = "u", graph.name = "u.window", graph.role = "weight_copy"}
// CHECK-NOT: graph.copy_of
// CHECK-NOT: kernel.launch "graph.slice"(%[[W]])
// CHECK: kernel.launch "graph.conv"(%{{.*}}, %[[WW]])
// CHECK: kernel.launch "graph.conv_backward_input"(%{{.*}}, %[[WW]])
// CHECK-NEXT: kernel.launch "graph.sgd_update"(%[[W]], {{.*}}) -> (%[[W]], %{{.*}}, %[[WW]]) {{.*}}options = {gradient_starts = array<i64: 0, 0, 1, 1>, momentum = 9.000000e-01 : f64, window_copy = true}}
// CHECK: kernel.launch "graph.sgd_update"(%[[U]], {{.*}}) -> (%[[U]]) {
// CHECK: kernel.launch "graph.conv_backward_input"(%{{.*}}, %[[UW]]) -> (%{{.*}}, %{{.*}})
// CHECK-NEXT: kernel.launch "graph.slice"(%[[U]]) -> (%[[UW]])
// CHECK: kernel.launch "graph.slice"(%arg2)
// CHECK: kernel.launch "graph.slice"(%arg3)
// CHECK: kernel.launch "graph.slice"(%arg4)
// CHECK: return
// CHECK-LABEL: func.func @refresh_weight_copies
// CHECK-SAME: (%[[RW:[a-z0-9]+]]: memref<8x4x3x3xf32> {graph.name = "w", graph.role = "parameter"}, %[[RU:[a-z0-9]+]]: memref<8x4x3x3xf32> {graph.name = "u", graph.role = "parameter"}, %[[RWW:[a-z0-9]+]]: memref<8x4x1x1xf32> {{.*}}, %[[RUW:[a-z0-9]+]]: memref<8x4x1x1xf32>
// CHECK-NEXT: kernel.launch "graph.slice"(%[[RW]]) -> (%[[RWW]]) {backend = "generated", options = {starts = array<i64: 0, 0, 1, 1>, steps = array<i64: 1, 1, 1, 1>}}
// CHECK-NEXT: kernel.launch "graph.slice"(%[[RU]]) -> (%[[RUW]])
// CHECK-NEXT: return
func.func @train_step(%w: memref<8x4x3x3xf32> {graph.name = "w", graph.role = "parameter"},
                      %u: memref<8x4x3x3xf32> {graph.name = "u", graph.role = "parameter"},
                      %v: memref<8x4x3x3xf32> {graph.name = "v", graph.role = "parameter"},
                      %t: memref<8x4x3x3xf32> {graph.name = "t", graph.role = "parameter"},
                      %r: memref<8x4x3x3xf32> {graph.name = "r", graph.role = "parameter"},
                      %x: memref<2x4x1x1xf32> {graph.name = "x", graph.role = "input"},
                      %m: memref<8x4x3x3xf32> {graph.name = "w.momentum_buffer", graph.role = "optimizer_state"},
                      %lr: memref<f32> {graph.name = "learning_rate", graph.role = "learning_rate"},
                      %step: memref<i64> {graph.name = "step", graph.role = "step"}) {
  %ws = kernel.alloc : memref<8x4x1x1xf32>
  kernel.launch "graph.slice"(%w) -> (%ws) {backend = "generated", options = {starts = array<i64: 0, 0, 1, 1>, steps = array<i64: 1, 1, 1, 1>}} : (memref<8x4x3x3xf32>) -> memref<8x4x1x1xf32>
  %y = kernel.alloc : memref<2x8x1x1xf32>
  kernel.launch "graph.conv"(%x, %ws) -> (%y) {backend = "dnnl", options = {}} : (memref<2x4x1x1xf32>, memref<8x4x1x1xf32>) -> memref<2x8x1x1xf32>
  %gw = kernel.alloc : memref<8x4x1x1xf32>
  kernel.launch "graph.conv_backward_weight"(%y, %x) -> (%gw) {backend = "dnnl", options = {}} : (memref<2x8x1x1xf32>, memref<2x4x1x1xf32>) -> memref<8x4x1x1xf32>
  kernel.launch "graph.sgd_update"(%w, %gw, %lr, %step, %m) -> (%w, %m) {backend = "generated", options = {gradient_starts = array<i64: 0, 0, 1, 1>, momentum = 9.000000e-01 : f64}} : (memref<8x4x3x3xf32>, memref<8x4x1x1xf32>, memref<f32>, memref<i64>, memref<8x4x3x3xf32>) -> (memref<8x4x3x3xf32>, memref<8x4x3x3xf32>)
  %dx = kernel.alloc : memref<2x4x1x1xf32>
  kernel.launch "graph.conv_backward_input"(%y, %ws) -> (%dx) {backend = "dnnl", options = {}} : (memref<2x8x1x1xf32>, memref<8x4x1x1xf32>) -> memref<2x4x1x1xf32>

  %us = kernel.alloc : memref<8x4x1x1xf32>
  kernel.launch "graph.slice"(%u) -> (%us) {backend = "generated", options = {starts = array<i64: 0, 0, 1, 1>, steps = array<i64: 1, 1, 1, 1>}} : (memref<8x4x3x3xf32>) -> memref<8x4x1x1xf32>
  kernel.launch "graph.sgd_update"(%u, %gw, %lr, %step) -> (%u) {backend = "generated", options = {gradient_starts = array<i64: 0, 0, 1, 1>}} : (memref<8x4x3x3xf32>, memref<8x4x1x1xf32>, memref<f32>, memref<i64>) -> memref<8x4x3x3xf32>
  %du = kernel.alloc : memref<2x4x1x1xf32>
  kernel.launch "graph.conv_backward_input"(%y, %us) -> (%du, %lr) {backend = "dnnl", options = {}} : (memref<2x8x1x1xf32>, memref<8x4x1x1xf32>) -> (memref<2x4x1x1xf32>, memref<f32>)

  %vs = kernel.alloc : memref<8x4x1x1xf32>
  kernel.launch "graph.slice"(%v) -> (%vs) {backend = "generated", options = {starts = array<i64: 0, 0, 0, 0>, steps = array<i64: 1, 1, 1, 1>}} : (memref<8x4x3x3xf32>) -> memref<8x4x1x1xf32>
  kernel.launch "graph.sgd_update"(%v, %gw, %lr, %step) -> (%v) {backend = "generated", options = {gradient_starts = array<i64: 0, 0, 1, 1>}} : (memref<8x4x3x3xf32>, memref<8x4x1x1xf32>, memref<f32>, memref<i64>) -> memref<8x4x3x3xf32>
  %ts = kernel.alloc : memref<8x4x1x1xf32>
  kernel.launch "graph.slice"(%t) -> (%ts) {backend = "generated", options = {starts = array<i64: 0, 0, 1, 1>, steps = array<i64: 1, 1, 2, 2>}} : (memref<8x4x3x3xf32>) -> memref<8x4x1x1xf32>
  kernel.launch "graph.sgd_update"(%t, %gw, %lr, %step) -> (%t) {backend = "generated", options = {gradient_starts = array<i64: 0, 0, 1, 1>}} : (memref<8x4x3x3xf32>, memref<8x4x1x1xf32>, memref<f32>, memref<i64>) -> memref<8x4x3x3xf32>
  %rs = kernel.alloc : memref<8x4x1x1xf32>
  kernel.launch "graph.slice"(%r) -> (%rs) {backend = "generated", options = {starts = array<i64: 0, 0, 1, 1>, steps = array<i64: 1, 1, 1, 1>}} : (memref<8x4x3x3xf32>) -> memref<8x4x1x1xf32>
  kernel.launch "graph.sgd_update"(%r, %gw, %lr, %step) -> (%r) {backend = "reference", options = {gradient_starts = array<i64: 0, 0, 1, 1>}} : (memref<8x4x3x3xf32>, memref<8x4x1x1xf32>, memref<f32>, memref<i64>) -> memref<8x4x3x3xf32>
  return
}
