// --trainc-reuse-buffers: a generated elementwise kernel writes its output
// over an input read whole that nothing after it uses, when the two have
// the same element type and size and no other operand touches the input.
// RUN: trainc-opt %s --trainc-kernel-to-loop --trainc-reuse-buffers -split-input-file | FileCheck %s
// RUN: trainc-opt %s --trainc-kernel-to-loop --trainc-reuse-buffers --trainc-plan-memory -split-input-file | FileCheck %s --check-prefix=ARENA

// %a dies at the add: the add writes over it, and the arena holds one
// buffer instead of two.
// CHECK-LABEL: func.func @dies
// CHECK: %[[A:[0-9]+]] = kernel.alloc : memref<4x8xf32>
// CHECK: kernel.launch "graph.relu"(%arg0) -> (%[[A]])
// CHECK-NOT: kernel.alloc
// CHECK: kernel.launch "graph.add"(%[[A]], %arg1) -> (%[[A]])
// CHECK: kernel.launch "graph.relu"(%[[A]]) -> (%arg2)
// ARENA-LABEL: func.func @dies
// ARENA-SAME: kernel.arena_size = 128
func.func @dies(%x: memref<4x8xf32>, %y: memref<4x8xf32>, %out: memref<4x8xf32>) {
  %a = kernel.alloc : memref<4x8xf32>
  kernel.launch "graph.relu"(%x) -> (%a) {backend = "generated", options = {}} : (memref<4x8xf32>) -> memref<4x8xf32>
  %b = kernel.alloc : memref<4x8xf32>
  kernel.launch "graph.add"(%a, %y) -> (%b) {backend = "generated", options = {}} : (memref<4x8xf32>, memref<4x8xf32>) -> memref<4x8xf32>
  kernel.launch "graph.relu"(%b) -> (%out) {backend = "generated", options = {}} : (memref<4x8xf32>) -> memref<4x8xf32>
  return
}

// -----

// Not over an input read later (%a by the last relu), one read twice by
// the launch (%b by the mul), one read through a broadcast (the bias), or
// one of another element type (%d by the comparison).
// CHECK-LABEL: func.func @kept
// CHECK: %[[A:[0-9]+]] = kernel.alloc : memref<4x8xf32>
// CHECK: %[[B:[0-9]+]] = kernel.alloc : memref<4x8xf32>
// CHECK: kernel.launch "graph.add"(%[[A]], %arg1) -> (%[[B]])
// CHECK: %[[C:[0-9]+]] = kernel.alloc : memref<4x8xf32>
// CHECK: kernel.launch "graph.mul"(%[[B]], %[[B]]) -> (%[[C]])
// CHECK: %[[D:[0-9]+]] = kernel.alloc : memref<4x8xf32>
// CHECK: kernel.launch "graph.add"(%[[A]], %{{.*}}) -> (%[[D]])
// CHECK: %[[M:[0-9]+]] = kernel.alloc : memref<4x8xi1>
// CHECK: kernel.launch "graph.greater"(%[[D]], %{{.*}}) -> (%[[M]])
func.func @kept(%x: memref<4x8xf32>, %y: memref<4x8xf32>, %bias: memref<8xf32>, %out: memref<4x8xi1>, %out2: memref<4x8xf32>) {
  %zero = kernel.constant dense<0.0> : tensor<f32> : memref<f32>
  %a = kernel.alloc : memref<4x8xf32>
  kernel.launch "graph.relu"(%x) -> (%a) {backend = "generated", options = {}} : (memref<4x8xf32>) -> memref<4x8xf32>
  %b = kernel.alloc : memref<4x8xf32>
  kernel.launch "graph.add"(%a, %y) -> (%b) {backend = "generated", options = {}} : (memref<4x8xf32>, memref<4x8xf32>) -> memref<4x8xf32>
  %c = kernel.alloc : memref<4x8xf32>
  kernel.launch "graph.mul"(%b, %b) -> (%c) {backend = "generated", options = {}} : (memref<4x8xf32>, memref<4x8xf32>) -> memref<4x8xf32>
  kernel.launch "graph.relu"(%c) -> (%out2) {backend = "generated", options = {}} : (memref<4x8xf32>) -> memref<4x8xf32>
  %bias8 = kernel.alloc : memref<8xf32>
  kernel.launch "graph.relu"(%bias) -> (%bias8) {backend = "generated", options = {}} : (memref<8xf32>) -> memref<8xf32>
  %d = kernel.alloc : memref<4x8xf32>
  kernel.launch "graph.add"(%a, %bias8) -> (%d) {backend = "generated", options = {}} : (memref<4x8xf32>, memref<8xf32>) -> memref<4x8xf32>
  %m = kernel.alloc : memref<4x8xi1>
  kernel.launch "graph.greater"(%d, %zero) -> (%m) {backend = "generated", options = {}} : (memref<4x8xf32>, memref<f32>) -> memref<4x8xi1>
  kernel.launch "graph.relu"(%a) -> (%out2) {backend = "generated", options = {}} : (memref<4x8xf32>) -> memref<4x8xf32>
  kernel.launch "graph.not"(%m) -> (%out) {backend = "generated", options = {}} : (memref<4x8xi1>) -> memref<4x8xi1>
  return
}

// -----

// Not by a kernel that is not elementwise (a reduction over the input).
// CHECK-LABEL: func.func @reduction
// CHECK: %[[S:[0-9]+]] = kernel.alloc : memref<4x1xf32>
// CHECK: kernel.launch "graph.reduce_sum"(%{{.*}}) -> (%[[S]])
func.func @reduction(%x: memref<4x8xf32>, %out: memref<4x1xf32>) {
  %a = kernel.alloc : memref<4x8xf32>
  kernel.launch "graph.relu"(%x) -> (%a) {backend = "generated", options = {}} : (memref<4x8xf32>) -> memref<4x8xf32>
  %s = kernel.alloc : memref<4x1xf32>
  kernel.launch "graph.reduce_sum"(%a) -> (%s) {backend = "generated", options = {axes = array<i64: 1>, keepdims = true}} : (memref<4x8xf32>) -> memref<4x1xf32>
  kernel.launch "graph.relu"(%s) -> (%out) {backend = "generated", options = {}} : (memref<4x1xf32>) -> memref<4x1xf32>
  return
}
