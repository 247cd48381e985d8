// --trainc-assign-weight-layouts: a parameter that only oneDNN convolutions
// and elementwise optimizer updates touch (with its gradient and momentum)
// gets a layout group, in every function; any other use keeps it dense.
// RUN: trainc-opt %s --trainc-assign-weight-layouts | FileCheck %s

// CHECK-LABEL: func.func @train_step
// CHECK-SAME: %{{.*}}: memref<2x3x3x3xf32> {graph.name = "w", graph.role = "parameter", kernel.layout = 0 : i64}
// CHECK-SAME: %{{.*}}: memref<2x3x3x3xf32> {graph.name = "w.momentum", graph.role = "optimizer_state", kernel.layout = 0 : i64}
// CHECK-SAME: %{{.*}}: memref<2x3x3x3xf32> {graph.name = "v", graph.role = "parameter"}
// CHECK-SAME: %{{.*}}: memref<2x3x3x3xf32> {graph.name = "u", graph.role = "parameter"}
// CHECK-SAME: %{{.*}}: memref<2x3x3x3xf32> {graph.name = "s", graph.role = "parameter"}
// CHECK: kernel.launch "graph.conv"({{.*}}) {backend = "dnnl", options = {weight_layout = 0 : i64}}
// CHECK: kernel.launch "graph.conv_backward_input"({{.*}}) {backend = "dnnl", options = {weight_layout = 0 : i64}}
// CHECK: kernel.launch "graph.conv_backward_weight"({{.*}}) {backend = "dnnl", options = {weight_layout = 0 : i64}}
// v: its gradient is a sum of two (graph.add reads it).
// CHECK: kernel.launch "graph.conv"({{.*}}) {backend = "dnnl", options = {}}
// CHECK: kernel.launch "graph.conv_backward_weight"({{.*}}) {backend = "dnnl", options = {}}
// CHECK: kernel.launch "graph.conv_backward_weight"({{.*}}) {backend = "dnnl", options = {}}
// u: @eval runs its convolution on another backend.
// CHECK: kernel.launch "graph.conv"({{.*}}) {backend = "dnnl", options = {}}
// s: no convolution at all.
// CHECK-NOT: weight_layout
func.func @train_step(%x: memref<1x3x5x5xf32> {graph.name = "x", graph.role = "input"},
                      %w: memref<2x3x3x3xf32> {graph.name = "w", graph.role = "parameter"},
                      %m: memref<2x3x3x3xf32> {graph.name = "w.momentum", graph.role = "optimizer_state"},
                      %v: memref<2x3x3x3xf32> {graph.name = "v", graph.role = "parameter"},
                      %u: memref<2x3x3x3xf32> {graph.name = "u", graph.role = "parameter"},
                      %s: memref<2x3x3x3xf32> {graph.name = "s", graph.role = "parameter"},
                      %lr: memref<f32> {graph.name = "learning_rate", graph.role = "learning_rate"},
                      %step: memref<i64> {graph.name = "step", graph.role = "step"}) {
  %y = kernel.alloc : memref<1x2x3x3xf32>
  kernel.launch "graph.conv"(%x, %w) -> (%y) {backend = "dnnl", options = {}} : (memref<1x3x5x5xf32>, memref<2x3x3x3xf32>) -> memref<1x2x3x3xf32>
  %dx = kernel.alloc : memref<1x3x5x5xf32>
  kernel.launch "graph.conv_backward_input"(%y, %w) -> (%dx) {backend = "dnnl", options = {}} : (memref<1x2x3x3xf32>, memref<2x3x3x3xf32>) -> memref<1x3x5x5xf32>
  %g = kernel.alloc : memref<2x3x3x3xf32>
  kernel.launch "graph.conv_backward_weight"(%y, %x) -> (%g) {backend = "dnnl", options = {}} : (memref<1x2x3x3xf32>, memref<1x3x5x5xf32>) -> memref<2x3x3x3xf32>
  kernel.launch "graph.sgd_update"(%w, %g, %lr, %step, %m) -> (%w, %m) {backend = "generated", options = {momentum = 9.000000e-01 : f64}} : (memref<2x3x3x3xf32>, memref<2x3x3x3xf32>, memref<f32>, memref<i64>, memref<2x3x3x3xf32>) -> (memref<2x3x3x3xf32>, memref<2x3x3x3xf32>)

  %y2 = kernel.alloc : memref<1x2x3x3xf32>
  kernel.launch "graph.conv"(%x, %v) -> (%y2) {backend = "dnnl", options = {}} : (memref<1x3x5x5xf32>, memref<2x3x3x3xf32>) -> memref<1x2x3x3xf32>
  %g1 = kernel.alloc : memref<2x3x3x3xf32>
  kernel.launch "graph.conv_backward_weight"(%y2, %x) -> (%g1) {backend = "dnnl", options = {}} : (memref<1x2x3x3xf32>, memref<1x3x5x5xf32>) -> memref<2x3x3x3xf32>
  %g2 = kernel.alloc : memref<2x3x3x3xf32>
  kernel.launch "graph.conv_backward_weight"(%y2, %x) -> (%g2) {backend = "dnnl", options = {}} : (memref<1x2x3x3xf32>, memref<1x3x5x5xf32>) -> memref<2x3x3x3xf32>
  %gv = kernel.alloc : memref<2x3x3x3xf32>
  kernel.launch "graph.add"(%g1, %g2) -> (%gv) {backend = "generated", options = {}} : (memref<2x3x3x3xf32>, memref<2x3x3x3xf32>) -> memref<2x3x3x3xf32>
  kernel.launch "graph.sgd_update"(%v, %gv, %lr, %step) -> (%v) {backend = "generated", options = {}} : (memref<2x3x3x3xf32>, memref<2x3x3x3xf32>, memref<f32>, memref<i64>) -> memref<2x3x3x3xf32>

  %y3 = kernel.alloc : memref<1x2x3x3xf32>
  kernel.launch "graph.conv"(%x, %u) -> (%y3) {backend = "dnnl", options = {}} : (memref<1x3x5x5xf32>, memref<2x3x3x3xf32>) -> memref<1x2x3x3xf32>

  %gs = kernel.alloc : memref<2x3x3x3xf32>
  kernel.launch "graph.mul"(%s, %s) -> (%gs) {backend = "generated", options = {}} : (memref<2x3x3x3xf32>, memref<2x3x3x3xf32>) -> memref<2x3x3x3xf32>
  kernel.launch "graph.sgd_update"(%s, %gs, %lr, %step) -> (%s) {backend = "generated", options = {}} : (memref<2x3x3x3xf32>, memref<2x3x3x3xf32>, memref<f32>, memref<i64>) -> memref<2x3x3x3xf32>
  return
}

// CHECK-LABEL: func.func @eval
// CHECK-SAME: {graph.name = "w", graph.role = "parameter", kernel.layout = 0 : i64}
// CHECK-SAME: {graph.name = "u", graph.role = "parameter"}
// CHECK: kernel.launch "graph.conv"({{.*}}) {backend = "dnnl", options = {weight_layout = 0 : i64}}
// CHECK: kernel.launch "graph.conv"({{.*}}) {backend = "openblas", options = {}}
func.func @eval(%x: memref<1x3x5x5xf32> {graph.name = "x", graph.role = "input"},
                %w: memref<2x3x3x3xf32> {graph.name = "w", graph.role = "parameter"},
                %u: memref<2x3x3x3xf32> {graph.name = "u", graph.role = "parameter"},
                %y: memref<1x2x3x3xf32> {graph.name = "y", graph.role = "output"},
                %y3: memref<1x2x3x3xf32> {graph.name = "y3", graph.role = "output"}) {
  kernel.launch "graph.conv"(%x, %w) -> (%y) {backend = "dnnl", options = {}} : (memref<1x3x5x5xf32>, memref<2x3x3x3xf32>) -> memref<1x2x3x3xf32>
  kernel.launch "graph.conv"(%x, %u) -> (%y3) {backend = "openblas", options = {}} : (memref<1x3x5x5xf32>, memref<2x3x3x3xf32>) -> memref<1x2x3x3xf32>
  return
}
