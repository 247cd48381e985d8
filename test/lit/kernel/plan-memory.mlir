// --trainc-plan-memory: buffers whose lifetimes do not overlap share
// arena space; offsets are 64-byte aligned; the function records its arena.
// RUN: trainc-opt %s --trainc-plan-memory | FileCheck %s

// CHECK: func.func @f({{.*}}) attributes {kernel.arena_size = 192 : i64}
// CHECK: kernel.alloc {offset = 0 : i64} : memref<16xf32>
// CHECK: kernel.alloc {offset = 64 : i64} : memref<16xf32>
// %a is dead once %b exists, so %c reuses its space.
// CHECK: kernel.alloc {offset = 0 : i64} : memref<16xf32>
// A buffer needing two slots goes after everything live.
// CHECK: kernel.alloc {offset = 128 : i64} : memref<2xf32>
func.func @f(%x: memref<16xf32>, %out: memref<16xf32>) {
  %a = kernel.alloc : memref<16xf32>
  kernel.launch "graph.relu"(%x) -> (%a) {options = {}} : (memref<16xf32>) -> memref<16xf32>
  %b = kernel.alloc : memref<16xf32>
  kernel.launch "graph.relu"(%a) -> (%b) {options = {}} : (memref<16xf32>) -> memref<16xf32>
  %c = kernel.alloc : memref<16xf32>
  kernel.launch "graph.relu"(%b) -> (%c) {options = {}} : (memref<16xf32>) -> memref<16xf32>
  %d = kernel.alloc : memref<2xf32>
  kernel.launch "graph.reduce_sum"(%b) -> (%d) {options = {axes = array<i64: 0>}} : (memref<16xf32>) -> memref<2xf32>
  kernel.launch "graph.add"(%c, %d) -> (%out) {options = {}} : (memref<16xf32>, memref<2xf32>) -> memref<16xf32>
  return
}

// A buffer stays live while a view of it is read: %b cannot reuse %a's
// space although %a itself is last used by the view.
// CHECK-LABEL: func.func @viewed
// CHECK: kernel.alloc {offset = 0 : i64} : memref<16xf32>
// CHECK: kernel.alloc {offset = 64 : i64} : memref<16xf32>
func.func @viewed(%x: memref<16xf32>, %out: memref<16xf32>) {
  %a = kernel.alloc : memref<16xf32>
  kernel.launch "graph.relu"(%x) -> (%a) {options = {}} : (memref<16xf32>) -> memref<16xf32>
  %v = kernel.view %a : memref<16xf32> to memref<4x4xf32>
  %b = kernel.alloc : memref<16xf32>
  kernel.launch "graph.relu"(%x) -> (%b) {options = {}} : (memref<16xf32>) -> memref<16xf32>
  kernel.launch "graph.add"(%v, %b) -> (%out) {options = {}} : (memref<4x4xf32>, memref<16xf32>) -> memref<16xf32>
  return
}
