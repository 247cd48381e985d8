// --trainc-plan-memory: buffers whose lifetimes do not overlap share
// arena space; offsets are 64-byte aligned; the function records its arena,
// the smaller of first-fit in launch order and largest-first placement.
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

// In launch order %s1 and %s2 take 0 and 64, and %big, defined when only
// %s1 has died, finds no 128 bytes below 128: an arena of 256. Placed
// largest first, %big takes 0, %s1 (never live with it) shares it, and %s2
// goes above: 192, which is kept.
// CHECK-LABEL: func.func @largest_first
// CHECK-SAME: kernel.arena_size = 192 : i64
// CHECK: kernel.alloc {offset = 0 : i64} : memref<16xf32>
// CHECK: kernel.alloc {offset = 128 : i64} : memref<16xf32>
// CHECK: kernel.alloc {offset = 0 : i64} : memref<32xf32>
func.func @largest_first(%x: memref<16xf32>, %y: memref<32xf32>, %out: memref<48xf32>) {
  %s1 = kernel.alloc : memref<16xf32>
  kernel.launch "graph.relu"(%x) -> (%s1) {options = {}} : (memref<16xf32>) -> memref<16xf32>
  %s2 = kernel.alloc : memref<16xf32>
  kernel.launch "graph.relu"(%s1) -> (%s2) {options = {}} : (memref<16xf32>) -> memref<16xf32>
  %big = kernel.alloc : memref<32xf32>
  kernel.launch "graph.relu"(%y) -> (%big) {options = {}} : (memref<32xf32>) -> memref<32xf32>
  kernel.launch "graph.concat"(%s2, %big) -> (%out) {options = {axis = 0 : i64}} : (memref<16xf32>, memref<32xf32>) -> memref<48xf32>
  return
}
