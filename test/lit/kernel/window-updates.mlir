// --trainc-window-updates: an optimizer update of the generated backend
// whose gradient is the zero padding (graph.slice_backward, unit steps) of
// a convolution weight's live taps reads the window itself; the padding
// launch and its buffer go, and `gradient_starts` says where the window
// sits.
// RUN: trainc-opt %s --trainc-window-updates -split-input-file | FileCheck %s

// The centre tap (SGD with momentum) and a 2x2 hull (Adam): both folded.
// CHECK-LABEL: func.func @folded
// CHECK-NOT: graph.slice_backward
// CHECK: kernel.launch "graph.sgd_update"(%arg0, %[[CENTRE:[a-z0-9]+]], %arg2, %arg3, %arg4) -> (%arg0, %arg4) {{.*}}options = {gradient_starts = array<i64: 0, 0, 1, 1>, momentum = 9.000000e-01 : f64}} : (memref<8x4x3x3xf32>, memref<8x4x1x1xf32>
// CHECK: kernel.launch "graph.adam_update"(%arg5, %[[HULL:[a-z0-9]+]], {{.*}}options = {gradient_starts = array<i64: 0, 0, 0, 1>}} : (memref<8x4x3x3xf32>, memref<8x4x2x2xf32>
// CHECK-NOT: memref<8x4x3x3xf32> = kernel.alloc
func.func @folded(%w: memref<8x4x3x3xf32>, %x: memref<2x4x1x1xf32>, %lr: memref<f32>, %step: memref<i64>, %m: memref<8x4x3x3xf32>,
                  %u: memref<8x4x3x3xf32>, %um: memref<8x4x3x3xf32>, %uv: memref<8x4x3x3xf32>) {
  %narrow = kernel.alloc : memref<8x4x1x1xf32>
  kernel.launch "graph.conv_backward_weight"(%x, %x) -> (%narrow) {backend = "dnnl", options = {}} : (memref<2x4x1x1xf32>, memref<2x4x1x1xf32>) -> memref<8x4x1x1xf32>
  %full = kernel.alloc : memref<8x4x3x3xf32>
  kernel.launch "graph.slice_backward"(%narrow) -> (%full) {backend = "generated", options = {ends = array<i64: 8, 4, 2, 2>, input_shape = array<i64: 8, 4, 3, 3>, starts = array<i64: 0, 0, 1, 1>, steps = array<i64: 1, 1, 1, 1>}} : (memref<8x4x1x1xf32>) -> memref<8x4x3x3xf32>
  kernel.launch "graph.sgd_update"(%w, %full, %lr, %step, %m) -> (%w, %m) {backend = "generated", options = {momentum = 9.000000e-01 : f64}} : (memref<8x4x3x3xf32>, memref<8x4x3x3xf32>, memref<f32>, memref<i64>, memref<8x4x3x3xf32>) -> (memref<8x4x3x3xf32>, memref<8x4x3x3xf32>)
  %hull = kernel.alloc : memref<8x4x2x2xf32>
  kernel.launch "graph.conv_backward_weight"(%x, %x) -> (%hull) {backend = "dnnl", options = {}} : (memref<2x4x1x1xf32>, memref<2x4x1x1xf32>) -> memref<8x4x2x2xf32>
  %padded = kernel.alloc : memref<8x4x3x3xf32>
  kernel.launch "graph.slice_backward"(%hull) -> (%padded) {backend = "generated", options = {ends = array<i64: 8, 4, 2, 3>, input_shape = array<i64: 8, 4, 3, 3>, starts = array<i64: 0, 0, 0, 1>, steps = array<i64: 1, 1, 1, 1>}} : (memref<8x4x2x2xf32>) -> memref<8x4x3x3xf32>
  kernel.launch "graph.adam_update"(%u, %padded, %um, %uv, %lr, %step) -> (%u, %um, %uv) {backend = "generated", options = {}} : (memref<8x4x3x3xf32>, memref<8x4x3x3xf32>, memref<8x4x3x3xf32>, memref<8x4x3x3xf32>, memref<f32>, memref<i64>) -> (memref<8x4x3x3xf32>, memref<8x4x3x3xf32>, memref<8x4x3x3xf32>)
  return
}

// -----

// Data-parallel training: the all-reduce averages the window alone.
// CHECK-LABEL: func.func @averaged
// CHECK-NOT: graph.slice_backward
// CHECK: %[[MEAN:.*]] = kernel.alloc : memref<8x4x1x1xf32>
// CHECK: kernel.launch "graph.all_reduce"(%arg1) -> (%[[MEAN]])
// CHECK: kernel.launch "graph.sgd_update"(%arg0, %[[MEAN]], %arg2, %arg3) -> (%arg0) {{.*}}gradient_starts = array<i64: 0, 0, 1, 1>
// CHECK-NOT: memref<8x4x3x3xf32> = kernel.alloc
func.func @averaged(%w: memref<8x4x3x3xf32>, %g: memref<8x4x1x1xf32>, %lr: memref<f32>, %step: memref<i64>) {
  %full = kernel.alloc : memref<8x4x3x3xf32>
  kernel.launch "graph.slice_backward"(%g) -> (%full) {backend = "generated", options = {starts = array<i64: 0, 0, 1, 1>, steps = array<i64: 1, 1, 1, 1>}} : (memref<8x4x1x1xf32>) -> memref<8x4x3x3xf32>
  %mean = kernel.alloc : memref<8x4x3x3xf32>
  kernel.launch "graph.all_reduce"(%full) -> (%mean) {backend = "mpi", options = {reduction = "mean"}} : (memref<8x4x3x3xf32>) -> memref<8x4x3x3xf32>
  kernel.launch "graph.sgd_update"(%w, %mean, %lr, %step) -> (%w) {backend = "generated", options = {}} : (memref<8x4x3x3xf32>, memref<8x4x3x3xf32>, memref<f32>, memref<i64>) -> memref<8x4x3x3xf32>
  return
}

// -----

// Left alone: a padded gradient something else reads too, one with a step,
// the window written over between the padding and the update, an update
// of the runtime's reference backend, and a window wider than 16 elements
// per row of the parameter (its leading dim not whole).
// CHECK-LABEL: func.func @kept
// CHECK-COUNT-5: graph.slice_backward
// CHECK-NOT: gradient_starts
func.func @kept(%w: memref<8x4x3x3xf32>, %g: memref<8x4x1x1xf32>, %s: memref<8x4x2x2xf32>, %lr: memref<f32>, %step: memref<i64>, %o: memref<8x4x3x3xf32>, %b: memref<8x4x3x3xf32>, %big: memref<4x4x3x3xf32>) {
  %a = kernel.alloc : memref<8x4x3x3xf32>
  kernel.launch "graph.slice_backward"(%g) -> (%a) {backend = "generated", options = {starts = array<i64: 0, 0, 1, 1>, steps = array<i64: 1, 1, 1, 1>}} : (memref<8x4x1x1xf32>) -> memref<8x4x3x3xf32>
  kernel.launch "graph.sgd_update"(%w, %a, %lr, %step) -> (%w) {backend = "generated", options = {}} : (memref<8x4x3x3xf32>, memref<8x4x3x3xf32>, memref<f32>, memref<i64>) -> memref<8x4x3x3xf32>
  kernel.launch "graph.relu"(%a) -> (%o) {backend = "generated", options = {}} : (memref<8x4x3x3xf32>) -> memref<8x4x3x3xf32>
  %c = kernel.alloc : memref<8x4x3x3xf32>
  kernel.launch "graph.slice_backward"(%s) -> (%c) {backend = "generated", options = {starts = array<i64: 0, 0, 0, 0>, steps = array<i64: 1, 1, 2, 2>}} : (memref<8x4x2x2xf32>) -> memref<8x4x3x3xf32>
  kernel.launch "graph.sgd_update"(%w, %c, %lr, %step) -> (%w) {backend = "generated", options = {}} : (memref<8x4x3x3xf32>, memref<8x4x3x3xf32>, memref<f32>, memref<i64>) -> memref<8x4x3x3xf32>
  %d = kernel.alloc : memref<8x4x3x3xf32>
  kernel.launch "graph.slice_backward"(%g) -> (%d) {backend = "generated", options = {starts = array<i64: 0, 0, 1, 1>, steps = array<i64: 1, 1, 1, 1>}} : (memref<8x4x1x1xf32>) -> memref<8x4x3x3xf32>
  kernel.launch "graph.relu"(%w) -> (%g) {backend = "generated", options = {}} : (memref<8x4x3x3xf32>) -> memref<8x4x1x1xf32>
  kernel.launch "graph.sgd_update"(%b, %d, %lr, %step) -> (%b) {backend = "generated", options = {}} : (memref<8x4x3x3xf32>, memref<8x4x3x3xf32>, memref<f32>, memref<i64>) -> memref<8x4x3x3xf32>
  %e = kernel.alloc : memref<8x4x3x3xf32>
  kernel.launch "graph.slice_backward"(%g) -> (%e) {backend = "generated", options = {starts = array<i64: 0, 0, 1, 1>, steps = array<i64: 1, 1, 1, 1>}} : (memref<8x4x1x1xf32>) -> memref<8x4x3x3xf32>
  kernel.launch "graph.sgd_update"(%b, %e, %lr, %step) -> (%b) {backend = "reference", options = {}} : (memref<8x4x3x3xf32>, memref<8x4x3x3xf32>, memref<f32>, memref<i64>) -> memref<8x4x3x3xf32>
  %f = kernel.alloc : memref<8x4x3x3xf32>
  kernel.launch "graph.slice_backward"(%big) -> (%f) {backend = "generated", options = {starts = array<i64: 2, 0, 0, 0>, steps = array<i64: 1, 1, 1, 1>}} : (memref<4x4x3x3xf32>) -> memref<8x4x3x3xf32>
  kernel.launch "graph.sgd_update"(%b, %f, %lr, %step) -> (%b) {backend = "generated", options = {}} : (memref<8x4x3x3xf32>, memref<8x4x3x3xf32>, memref<f32>, memref<i64>) -> memref<8x4x3x3xf32>
  return
}
