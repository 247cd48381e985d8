// --trainc-dedupe-kernels: launches whose kernels print alike (apart from
// their names) share the first one; the others are erased.
// RUN: trainc-opt %s --trainc-kernel-to-loop --trainc-dedupe-kernels | FileCheck %s

// CHECK-LABEL: func.func @twice
// CHECK: kernel.launch "graph.relu"{{.*}}callee = @[[K:[a-z_0-9]+]]
// CHECK: kernel.launch "graph.relu"{{.*}}callee = @[[K]]
// A different shape keeps its own kernel.
// CHECK: kernel.launch "graph.relu"{{.*}}callee = @[[L:[a-z_0-9]+]]
// CHECK: func.func private @[[K]](
// CHECK-NOT: func.func private @{{.*}}(%{{.*}}: memref<32xf32>
// CHECK: func.func private @[[L]](%{{.*}}: memref<7xf32>
func.func @twice(%x: memref<4x8xf32>, %y: memref<4x8xf32>, %z: memref<4x8xf32>, %a: memref<7xf32>, %b: memref<7xf32>) {
  kernel.launch "graph.relu"(%x) -> (%y) {backend = "generated", options = {}} : (memref<4x8xf32>) -> memref<4x8xf32>
  kernel.launch "graph.relu"(%y) -> (%z) {backend = "generated", options = {}} : (memref<4x8xf32>) -> memref<4x8xf32>
  kernel.launch "graph.relu"(%a) -> (%b) {backend = "generated", options = {}} : (memref<7xf32>) -> memref<7xf32>
  return
}
