// --trainc-fold-concat-transposes: a concatenation whose every input is
// written by a generated transpose that nothing else reads (through a view
// or directly) becomes one generated concat from the transposes' inputs,
// each permuted into its window (`perms`, `source_shapes`), on a common
// refinement of the shapes (`output_shape`, `axis`). Not when an input is
// not such a transpose, when a transpose's output is read elsewhere, when
// a transpose's input is written before the concatenation, when the
// inputs refine differently, nor on the CUDA target.
// RUN: trainc-opt %s --trainc-fold-concat-transposes -split-input-file | FileCheck %s

// The Transformer's gradient of its packed projection: three [B * H, S,
// D] = [64, 64, 32] head gradients, transposed to [S, B * H, D], viewed as
// [S, B, E] = [64, 16, 128] and concatenated along E.
// CHECK-LABEL: func.func @head_gradients
// CHECK-SAME: (%[[Q:.*]]: memref<64x64x32xf32>, %[[K:.*]]: memref<64x64x32xf32>, %[[V:.*]]: memref<64x64x32xf32>, %[[OUT:.*]]: memref<64x16x384xf32>)
// CHECK-NOT: kernel.alloc
// CHECK-NOT: kernel.view
// CHECK-NEXT: kernel.launch "graph.concat"(%[[Q]], %[[K]], %[[V]]) -> (%[[OUT]]) {backend = "generated", options = {axis = 2 : i64, output_shape = array<i64: 64, 16, 12, 32>, perms = array<i64: 2, 0, 1, 3, 2, 0, 1, 3, 2, 0, 1, 3>, source_shapes = array<i64: 16, 4, 64, 32, 16, 4, 64, 32, 16, 4, 64, 32>}}
// CHECK-NEXT: return
func.func @head_gradients(%q: memref<64x64x32xf32>, %k: memref<64x64x32xf32>, %v: memref<64x64x32xf32>, %out: memref<64x16x384xf32>) {
  %qt = kernel.alloc : memref<64x64x32xf32>
  kernel.launch "graph.transpose"(%q) -> (%qt) {backend = "generated", options = {perm = array<i64: 1, 0, 2>}} : (memref<64x64x32xf32>) -> memref<64x64x32xf32>
  %kt = kernel.alloc : memref<64x64x32xf32>
  kernel.launch "graph.transpose"(%k) -> (%kt) {backend = "generated", options = {perm = array<i64: 1, 0, 2>}} : (memref<64x64x32xf32>) -> memref<64x64x32xf32>
  %vt = kernel.alloc : memref<64x64x32xf32>
  kernel.launch "graph.transpose"(%v) -> (%vt) {backend = "generated", options = {perm = array<i64: 1, 0, 2>}} : (memref<64x64x32xf32>) -> memref<64x64x32xf32>
  %qv = kernel.view %qt : memref<64x64x32xf32> to memref<64x16x128xf32>
  %kv = kernel.view %kt : memref<64x64x32xf32> to memref<64x16x128xf32>
  %vv = kernel.view %vt : memref<64x64x32xf32> to memref<64x16x128xf32>
  kernel.launch "graph.concat"(%qv, %kv, %vv) -> (%out) {backend = "reference", options = {axis = 2 : i64}} : (memref<64x16x128xf32>, memref<64x16x128xf32>, memref<64x16x128xf32>) -> memref<64x16x384xf32>
  return
}

// -----

// GPT-2's: [B, H, S, D] = [8, 4, 16, 8] transposed to [B, S, H, D] and
// viewed as [B, S, E] = [8, 16, 32], two of them.
// CHECK-LABEL: func.func @merge_heads
// CHECK: kernel.launch "graph.concat"(%{{.*}}, %{{.*}}) -> (%{{.*}}) {backend = "generated", options = {axis = 2 : i64, output_shape = array<i64: 8, 16, 8, 8>, perms = array<i64: 0, 2, 1, 3, 0, 2, 1, 3>, source_shapes = array<i64: 8, 4, 16, 8, 8, 4, 16, 8>}}
// CHECK-NOT: graph.transpose
func.func @merge_heads(%a: memref<8x4x16x8xf32>, %b: memref<8x4x16x8xf32>, %out: memref<8x16x64xf32>) {
  %at = kernel.alloc : memref<8x16x4x8xf32>
  kernel.launch "graph.transpose"(%a) -> (%at) {backend = "generated", options = {perm = array<i64: 0, 2, 1, 3>}} : (memref<8x4x16x8xf32>) -> memref<8x16x4x8xf32>
  %bt = kernel.alloc : memref<8x16x4x8xf32>
  kernel.launch "graph.transpose"(%b) -> (%bt) {backend = "generated", options = {perm = array<i64: 0, 2, 1, 3>}} : (memref<8x4x16x8xf32>) -> memref<8x16x4x8xf32>
  %av = kernel.view %at : memref<8x16x4x8xf32> to memref<8x16x32xf32>
  %bv = kernel.view %bt : memref<8x16x4x8xf32> to memref<8x16x32xf32>
  kernel.launch "graph.concat"(%av, %bv) -> (%out) {backend = "reference", options = {axis = 2 : i64}} : (memref<8x16x32xf32>, memref<8x16x32xf32>) -> memref<8x16x64xf32>
  return
}

// -----

// Left alone: one input is no transpose; a transpose read elsewhere too; a
// transpose's input updated in place before the concatenation.
// CHECK-LABEL: func.func @kept
// CHECK-COUNT-3: kernel.launch "graph.concat"({{.*}}) {backend = "reference", options = {axis = 2 : i64}}
func.func @kept(%q: memref<64x64x32xf32>, %k: memref<64x16x128xf32>, %out: memref<64x16x256xf32>, %r: memref<64x64x32xf32>, %g: memref<64x64x32xf32>, %lr: memref<f32>, %step: memref<i64>) {
  %qt = kernel.alloc : memref<64x64x32xf32>
  kernel.launch "graph.transpose"(%q) -> (%qt) {backend = "generated", options = {perm = array<i64: 1, 0, 2>}} : (memref<64x64x32xf32>) -> memref<64x64x32xf32>
  %qv = kernel.view %qt : memref<64x64x32xf32> to memref<64x16x128xf32>
  kernel.launch "graph.concat"(%qv, %k) -> (%out) {backend = "reference", options = {axis = 2 : i64}} : (memref<64x16x128xf32>, memref<64x16x128xf32>) -> memref<64x16x256xf32>
  %q2 = kernel.alloc : memref<64x64x32xf32>
  kernel.launch "graph.transpose"(%q) -> (%q2) {backend = "generated", options = {perm = array<i64: 1, 0, 2>}} : (memref<64x64x32xf32>) -> memref<64x64x32xf32>
  kernel.launch "graph.relu"(%q2) -> (%r) {backend = "generated", options = {}} : (memref<64x64x32xf32>) -> memref<64x64x32xf32>
  %q2v = kernel.view %q2 : memref<64x64x32xf32> to memref<64x16x128xf32>
  kernel.launch "graph.concat"(%q2v, %q2v) -> (%out) {backend = "reference", options = {axis = 2 : i64}} : (memref<64x16x128xf32>, memref<64x16x128xf32>) -> memref<64x16x256xf32>
  %q3 = kernel.alloc : memref<64x64x32xf32>
  kernel.launch "graph.transpose"(%q) -> (%q3) {backend = "generated", options = {perm = array<i64: 1, 0, 2>}} : (memref<64x64x32xf32>) -> memref<64x64x32xf32>
  kernel.launch "graph.sgd_update"(%q, %g, %lr, %step) -> (%q) {backend = "generated", options = {}} : (memref<64x64x32xf32>, memref<64x64x32xf32>, memref<f32>, memref<i64>) -> memref<64x64x32xf32>
  %q3v = kernel.view %q3 : memref<64x64x32xf32> to memref<64x16x128xf32>
  %q4 = kernel.alloc : memref<64x64x32xf32>
  kernel.launch "graph.transpose"(%g) -> (%q4) {backend = "generated", options = {perm = array<i64: 1, 0, 2>}} : (memref<64x64x32xf32>) -> memref<64x64x32xf32>
  %q4v = kernel.view %q4 : memref<64x64x32xf32> to memref<64x16x128xf32>
  kernel.launch "graph.concat"(%q3v, %q4v) -> (%out) {backend = "reference", options = {axis = 2 : i64}} : (memref<64x16x128xf32>, memref<64x16x128xf32>) -> memref<64x16x256xf32>
  return
}

// -----

// The CUDA target: left alone.
// CHECK-LABEL: func.func @cuda
// CHECK: kernel.launch "graph.transpose"
// CHECK: kernel.launch "graph.concat"
module attributes {kernel.target = "cuda"} {
func.func @cuda(%q: memref<64x64x32xf32>, %out: memref<64x16x128xf32>) {
  %qt = kernel.alloc : memref<64x64x32xf32>
  kernel.launch "graph.transpose"(%q) -> (%qt) {backend = "generated", options = {perm = array<i64: 1, 0, 2>}} : (memref<64x64x32xf32>) -> memref<64x64x32xf32>
  %qv = kernel.view %qt : memref<64x64x32xf32> to memref<64x16x128xf32>
  kernel.launch "graph.concat"(%qv) -> (%out) {backend = "generated", options = {axis = 2 : i64}} : (memref<64x16x128xf32>) -> memref<64x16x128xf32>
  return
}
}
