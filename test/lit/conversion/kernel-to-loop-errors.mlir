// --trainc-kernel-to-loop refuses launches its builders cannot compute,
// naming the kernel: here optimizer updates whose gradient does not fit
// the parameter (`gradient_starts` is set by --trainc-window-updates,
// which checks the same; hand-written IR may not).
// RUN: trainc-opt %s --trainc-kernel-to-loop -split-input-file -verify-diagnostics

func.func @starts_short(%w: memref<8x4x3x3xf32>, %g: memref<8x4x1x1xf32>, %lr: memref<f32>, %step: memref<i64>) {
  // expected-error @+1 {{the generated graph.sgd_update needs `gradient_starts` (one per dim) that place its non-empty gradient inside the parameter}}
  kernel.launch "graph.sgd_update"(%w, %g, %lr, %step) -> (%w) {backend = "generated", options = {gradient_starts = array<i64: 0, 0>}} : (memref<8x4x3x3xf32>, memref<8x4x1x1xf32>, memref<f32>, memref<i64>) -> memref<8x4x3x3xf32>
  return
}

// -----

func.func @window_outside(%w: memref<8x4x3x3xf32>, %g: memref<8x4x1x1xf32>, %lr: memref<f32>, %step: memref<i64>) {
  // expected-error @+1 {{the generated graph.sgd_update needs `gradient_starts` (one per dim) that place its non-empty gradient inside the parameter}}
  kernel.launch "graph.sgd_update"(%w, %g, %lr, %step) -> (%w) {backend = "generated", options = {gradient_starts = array<i64: 0, 0, 1, 3>}} : (memref<8x4x3x3xf32>, memref<8x4x1x1xf32>, memref<f32>, memref<i64>) -> memref<8x4x3x3xf32>
  return
}

// -----

func.func @gradient_shape(%w: memref<8x4x3x3xf32>, %g: memref<8x4x1x1xf32>, %lr: memref<f32>, %step: memref<i64>) {
  // expected-error @+1 {{the generated graph.sgd_update needs a gradient of the parameter's size, or `gradient_starts`}}
  kernel.launch "graph.sgd_update"(%w, %g, %lr, %step) -> (%w) {backend = "generated", options = {}} : (memref<8x4x3x3xf32>, memref<8x4x1x1xf32>, memref<f32>, memref<i64>) -> memref<8x4x3x3xf32>
  return
}
