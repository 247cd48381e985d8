// --trainc-fold-slice-transposes: a generated slice that nothing but a
// generated transpose reads (through a view or directly) becomes one
// generated slice with `perm`, from the slice's input to the transpose's
// output, its window and permutation on a common refinement of the two
// shapes (`source_shape`). Not when something else reads the slice, when
// the window does not fall on whole refined dims, when the input is
// written in between, nor on the CUDA target.
// RUN: trainc-opt %s --trainc-fold-slice-transposes -split-input-file | FileCheck %s

// The Transformer's keys: [S, B, 3E] = [64, 16, 384], the window
// [128:256] of E viewed as 4 heads of 32 and transposed to [B * H, S, D].
// CHECK-LABEL: func.func @packed_heads
// CHECK-SAME: (%[[Y:.*]]: memref<64x16x384xf32>, %[[K:.*]]: memref<64x64x32xf32>)
// CHECK-NOT: kernel.alloc
// CHECK-NOT: kernel.view
// CHECK-NEXT: kernel.launch "graph.slice"(%[[Y]]) -> (%[[K]]) {backend = "generated", options = {ends = array<i64: 64, 16, 8, 32>, perm = array<i64: 1, 2, 0, 3>, source_shape = array<i64: 64, 16, 12, 32>, starts = array<i64: 0, 0, 4, 0>, steps = array<i64: 1, 1, 1, 1>}} : (memref<64x16x384xf32>) -> memref<64x64x32xf32>
// CHECK-NEXT: return
func.func @packed_heads(%y: memref<64x16x384xf32>, %k: memref<64x64x32xf32>) {
  %s = kernel.alloc : memref<64x16x128xf32>
  kernel.launch "graph.slice"(%y) -> (%s) {backend = "generated", options = {ends = array<i64: 64, 16, 256>, starts = array<i64: 0, 0, 128>, steps = array<i64: 1, 1, 1>}} : (memref<64x16x384xf32>) -> memref<64x16x128xf32>
  %v = kernel.view %s : memref<64x16x128xf32> to memref<64x64x32xf32>
  kernel.launch "graph.transpose"(%v) -> (%k) {backend = "generated", options = {perm = array<i64: 1, 0, 2>}} : (memref<64x64x32xf32>) -> memref<64x64x32xf32>
  return
}

// -----

// GPT-2's split: [B, S, 3E] = [8, 16, 96], the values [64:96] viewed as
// [B, S, H, D] = [8, 16, 4, 8] and transposed to [B, H, S, D].
// CHECK-LABEL: func.func @split_heads
// CHECK: kernel.launch "graph.slice"(%{{.*}}) -> (%{{.*}}) {backend = "generated", options = {ends = array<i64: 8, 16, 12, 8>, perm = array<i64: 0, 2, 1, 3>, source_shape = array<i64: 8, 16, 12, 8>, starts = array<i64: 0, 0, 8, 0>, steps = array<i64: 1, 1, 1, 1>}} : (memref<8x16x96xf32>) -> memref<8x4x16x8xf32>
// CHECK-NOT: graph.transpose
func.func @split_heads(%y: memref<8x16x96xf32>, %o: memref<8x4x16x8xf32>) {
  %s = kernel.alloc : memref<8x16x32xf32>
  kernel.launch "graph.slice"(%y) -> (%s) {backend = "generated", options = {ends = array<i64: 8, 16, 96>, starts = array<i64: 0, 0, 64>, steps = array<i64: 1, 1, 1>}} : (memref<8x16x96xf32>) -> memref<8x16x32xf32>
  %v = kernel.view %s : memref<8x16x32xf32> to memref<8x16x4x8xf32>
  kernel.launch "graph.transpose"(%v) -> (%o) {backend = "generated", options = {perm = array<i64: 0, 2, 1, 3>}} : (memref<8x16x4x8xf32>) -> memref<8x4x16x8xf32>
  return
}

// -----

// A transpose of the slice itself, no view between.
// CHECK-LABEL: func.func @no_view
// CHECK: kernel.launch "graph.slice"(%{{.*}}) -> (%{{.*}}) {backend = "generated", options = {ends = array<i64: 6, 3>, perm = array<i64: 1, 0>, source_shape = array<i64: 8, 3>, starts = array<i64: 2, 0>, steps = array<i64: 1, 1>}}
// CHECK-NOT: graph.transpose
func.func @no_view(%y: memref<8x3xf32>, %o: memref<3x4xf32>) {
  %s = kernel.alloc : memref<4x3xf32>
  kernel.launch "graph.slice"(%y) -> (%s) {backend = "generated", options = {ends = array<i64: 6, 3>, starts = array<i64: 2, 0>, steps = array<i64: 1, 1>}} : (memref<8x3xf32>) -> memref<4x3xf32>
  kernel.launch "graph.transpose"(%s) -> (%o) {backend = "generated", options = {perm = array<i64: 1, 0>}} : (memref<4x3xf32>) -> memref<3x4xf32>
  return
}

// -----

// Left alone: the slice is read by another launch too; a window [100:228]
// that starts inside a head of 32; the slice's input updated in place
// between the two; a reference transpose.
// CHECK-LABEL: func.func @kept
// CHECK-COUNT-4: kernel.launch "graph.slice"({{.*}}) {backend = "{{[a-z]*}}", options = {ends
// CHECK-NOT: perm = array<i64: 1, 2, 0, 3>
func.func @kept(%y: memref<64x16x384xf32>, %k: memref<64x64x32xf32>, %r: memref<64x16x128xf32>, %g: memref<64x16x384xf32>, %lr: memref<f32>, %step: memref<i64>) {
  %s = kernel.alloc : memref<64x16x128xf32>
  kernel.launch "graph.slice"(%y) -> (%s) {backend = "generated", options = {ends = array<i64: 64, 16, 256>, starts = array<i64: 0, 0, 128>, steps = array<i64: 1, 1, 1>}} : (memref<64x16x384xf32>) -> memref<64x16x128xf32>
  %v = kernel.view %s : memref<64x16x128xf32> to memref<64x64x32xf32>
  kernel.launch "graph.transpose"(%v) -> (%k) {backend = "generated", options = {perm = array<i64: 1, 0, 2>}} : (memref<64x64x32xf32>) -> memref<64x64x32xf32>
  kernel.launch "graph.relu"(%s) -> (%r) {backend = "generated", options = {}} : (memref<64x16x128xf32>) -> memref<64x16x128xf32>
  %s2 = kernel.alloc : memref<64x16x128xf32>
  kernel.launch "graph.slice"(%y) -> (%s2) {backend = "generated", options = {ends = array<i64: 64, 16, 228>, starts = array<i64: 0, 0, 100>, steps = array<i64: 1, 1, 1>}} : (memref<64x16x384xf32>) -> memref<64x16x128xf32>
  %v2 = kernel.view %s2 : memref<64x16x128xf32> to memref<64x64x32xf32>
  kernel.launch "graph.transpose"(%v2) -> (%k) {backend = "generated", options = {perm = array<i64: 1, 0, 2>}} : (memref<64x64x32xf32>) -> memref<64x64x32xf32>
  %s3 = kernel.alloc : memref<64x16x128xf32>
  kernel.launch "graph.slice"(%y) -> (%s3) {backend = "generated", options = {ends = array<i64: 64, 16, 256>, starts = array<i64: 0, 0, 128>, steps = array<i64: 1, 1, 1>}} : (memref<64x16x384xf32>) -> memref<64x16x128xf32>
  kernel.launch "graph.sgd_update"(%y, %g, %lr, %step) -> (%y) {backend = "generated", options = {}} : (memref<64x16x384xf32>, memref<64x16x384xf32>, memref<f32>, memref<i64>) -> memref<64x16x384xf32>
  %v3 = kernel.view %s3 : memref<64x16x128xf32> to memref<64x64x32xf32>
  kernel.launch "graph.transpose"(%v3) -> (%k) {backend = "generated", options = {perm = array<i64: 1, 0, 2>}} : (memref<64x64x32xf32>) -> memref<64x64x32xf32>
  %s4 = kernel.alloc : memref<64x16x128xf32>
  kernel.launch "graph.slice"(%y) -> (%s4) {backend = "generated", options = {ends = array<i64: 64, 16, 256>, starts = array<i64: 0, 0, 128>, steps = array<i64: 1, 1, 1>}} : (memref<64x16x384xf32>) -> memref<64x16x128xf32>
  %v4 = kernel.view %s4 : memref<64x16x128xf32> to memref<64x64x32xf32>
  kernel.launch "graph.transpose"(%v4) -> (%k) {backend = "reference", options = {perm = array<i64: 1, 0, 2>}} : (memref<64x64x32xf32>) -> memref<64x64x32xf32>
  return
}

// -----

// The CUDA target: left alone.
// CHECK-LABEL: func.func @cuda
// CHECK: kernel.launch "graph.slice"
// CHECK: kernel.launch "graph.transpose"
module attributes {kernel.target = "cuda"} {
func.func @cuda(%y: memref<64x16x384xf32>, %k: memref<64x64x32xf32>) {
  %s = kernel.alloc : memref<64x16x128xf32>
  kernel.launch "graph.slice"(%y) -> (%s) {backend = "generated", options = {ends = array<i64: 64, 16, 256>, starts = array<i64: 0, 0, 128>, steps = array<i64: 1, 1, 1>}} : (memref<64x16x384xf32>) -> memref<64x16x128xf32>
  %v = kernel.view %s : memref<64x16x128xf32> to memref<64x64x32xf32>
  kernel.launch "graph.transpose"(%v) -> (%k) {backend = "generated", options = {perm = array<i64: 1, 0, 2>}} : (memref<64x64x32xf32>) -> memref<64x64x32xf32>
  return
}
}
