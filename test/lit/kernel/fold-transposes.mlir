// --trainc-fold-transposes: a dnnl or openblas matmul reads a swap of the
// last two dims of an operand in place (lhs_perm / rhs_perm); the transpose
// goes when nothing else reads it. Not for other backends, nor when the
// input is written in between. Other permutations that swap the last two
// dims become a transpose keeping the innermost dim plus that swap; a
// product read by a transpose making its rows innermost is computed
// transposed; a transpose made twice of the same input is made once.
// RUN: trainc-opt %s --trainc-fold-transposes | FileCheck %s

// CHECK-LABEL: func.func @attention_scores
// CHECK-SAME: (%[[Q:.*]]: memref<8x16x4xf32>, %[[K:.*]]: memref<8x16x4xf32>, %[[S:.*]]: memref<8x16x16xf32>)
// CHECK-NOT: graph.transpose
// CHECK: kernel.launch "graph.matmul"(%[[Q]], %[[K]]) -> (%[[S]]) {backend = "dnnl", options = {rhs_perm = array<i64: 0, 2, 1>}}
func.func @attention_scores(%q: memref<8x16x4xf32>, %k: memref<8x16x4xf32>, %s: memref<8x16x16xf32>) {
  %kt = kernel.alloc : memref<8x4x16xf32>
  kernel.launch "graph.transpose"(%k) -> (%kt) {backend = "generated", options = {perm = array<i64: 0, 2, 1>}} : (memref<8x16x4xf32>) -> memref<8x4x16xf32>
  kernel.launch "graph.matmul"(%q, %kt) -> (%s) {backend = "dnnl", options = {}} : (memref<8x16x4xf32>, memref<8x4x16xf32>) -> memref<8x16x16xf32>
  return
}

// The transpose stays for its other reader; the reference matmul keeps
// reading the transposed copy.
// CHECK-LABEL: func.func @shared
// CHECK: %[[AT:.*]] = kernel.alloc
// CHECK: kernel.launch "graph.transpose"
// CHECK: kernel.launch "graph.matmul"(%{{.*}}, %{{.*}}) -> (%{{.*}}) {backend = "dnnl", options = {lhs_perm = array<i64: 1, 0>}}
// CHECK: kernel.launch "graph.matmul"(%[[AT]], %{{.*}}) -> (%{{.*}}) {backend = "reference", options = {}}
func.func @shared(%a: memref<4x3xf32>, %b: memref<4x5xf32>, %y: memref<3x5xf32>, %z: memref<3x5xf32>) {
  %at = kernel.alloc : memref<3x4xf32>
  kernel.launch "graph.transpose"(%a) -> (%at) {backend = "generated", options = {perm = array<i64: 1, 0>}} : (memref<4x3xf32>) -> memref<3x4xf32>
  kernel.launch "graph.matmul"(%at, %b) -> (%y) {backend = "dnnl", options = {}} : (memref<3x4xf32>, memref<4x5xf32>) -> memref<3x5xf32>
  kernel.launch "graph.matmul"(%at, %b) -> (%z) {backend = "reference", options = {}} : (memref<3x4xf32>, memref<4x5xf32>) -> memref<3x5xf32>
  return
}

// %w is updated in place between the transpose and the product: the
// product must read the old values, so the transposed copy stays.
// CHECK-LABEL: func.func @updated_between
// CHECK: kernel.launch "graph.transpose"
// CHECK: kernel.launch "graph.matmul"({{.*}}) {backend = "dnnl", options = {}}
func.func @updated_between(%x: memref<3x4xf32>, %w: memref<5x4xf32>, %g: memref<5x4xf32>, %lr: memref<f32>, %step: memref<i64>, %y: memref<3x5xf32>) {
  %wt = kernel.alloc : memref<4x5xf32>
  kernel.launch "graph.transpose"(%w) -> (%wt) {backend = "generated", options = {perm = array<i64: 1, 0>}} : (memref<5x4xf32>) -> memref<4x5xf32>
  kernel.launch "graph.sgd_update"(%w, %g, %lr, %step) -> (%w) {backend = "generated", options = {}} : (memref<5x4xf32>, memref<5x4xf32>, memref<f32>, memref<i64>) -> memref<5x4xf32>
  kernel.launch "graph.matmul"(%x, %wt) -> (%y) {backend = "dnnl", options = {}} : (memref<3x4xf32>, memref<4x5xf32>) -> memref<3x5xf32>
  return
}

// OpenBLAS: transposes of the last two dims fold (BLAS reads the matrix
// transposed); a transpose that moves a batch dim stays.
// CHECK-LABEL: func.func @openblas
// CHECK-SAME: (%[[Q:.*]]: memref<8x16x4xf32>, %[[K:.*]]: memref<8x16x4xf32>
// CHECK: kernel.launch "graph.matmul"(%[[Q]], %[[K]]) -> (%{{.*}}) {backend = "openblas", options = {rhs_perm = array<i64: 0, 2, 1>}}
// CHECK: %[[KB:.*]] = kernel.alloc : memref<16x8x4xf32>
// CHECK: kernel.launch "graph.transpose"(%[[K]]) -> (%[[KB]])
// CHECK: kernel.launch "graph.matmul"(%[[KB]], %{{.*}}) -> (%{{.*}}) {backend = "openblas", options = {rhs_perm = array<i64: 0, 2, 1>}}
func.func @openblas(%q: memref<8x16x4xf32>, %k: memref<8x16x4xf32>, %s: memref<8x16x16xf32>, %v: memref<16x8x4xf32>, %p: memref<16x8x8xf32>) {
  %kt = kernel.alloc : memref<8x4x16xf32>
  kernel.launch "graph.transpose"(%k) -> (%kt) {backend = "generated", options = {perm = array<i64: 0, 2, 1>}} : (memref<8x16x4xf32>) -> memref<8x4x16xf32>
  kernel.launch "graph.matmul"(%q, %kt) -> (%s) {backend = "openblas", options = {}} : (memref<8x16x4xf32>, memref<8x4x16xf32>) -> memref<8x16x16xf32>
  %kb = kernel.alloc : memref<16x8x4xf32>
  kernel.launch "graph.transpose"(%k) -> (%kb) {backend = "generated", options = {perm = array<i64: 1, 0, 2>}} : (memref<8x16x4xf32>) -> memref<16x8x4xf32>
  %vt = kernel.alloc : memref<16x4x8xf32>
  kernel.launch "graph.transpose"(%v) -> (%vt) {backend = "generated", options = {perm = array<i64: 0, 2, 1>}} : (memref<16x8x4xf32>) -> memref<16x4x8xf32>
  kernel.launch "graph.matmul"(%kb, %vt) -> (%p) {backend = "openblas", options = {}} : (memref<16x8x4xf32>, memref<16x4x8xf32>) -> memref<16x8x8xf32>
  return
}

// oneDNN: a permutation that moves a batch dim is not read in place (its
// strided batch loop is 3-5x slower); the copy keeps the innermost dim and
// the product reads it with the last two dims swapped.
// CHECK-LABEL: func.func @batch_moved
// CHECK-SAME: (%[[Q:.*]]: memref<8x16x4xf32>, %[[K:.*]]: memref<16x8x4xf32>, %[[S:.*]]: memref<8x16x16xf32>)
// CHECK: %[[KB:.*]] = kernel.alloc : memref<8x16x4xf32>
// CHECK: kernel.launch "graph.transpose"(%[[K]]) -> (%[[KB]]) {backend = "generated", options = {perm = array<i64: 1, 0, 2>}}
// CHECK: kernel.launch "graph.matmul"(%[[Q]], %[[KB]]) -> (%[[S]]) {backend = "dnnl", options = {rhs_perm = array<i64: 0, 2, 1>}}
func.func @batch_moved(%q: memref<8x16x4xf32>, %k: memref<16x8x4xf32>, %s: memref<8x16x16xf32>) {
  %kt = kernel.alloc : memref<8x4x16xf32>
  kernel.launch "graph.transpose"(%k) -> (%kt) {backend = "generated", options = {perm = array<i64: 1, 2, 0>}} : (memref<16x8x4xf32>) -> memref<8x4x16xf32>
  kernel.launch "graph.matmul"(%q, %kt) -> (%s) {backend = "dnnl", options = {}} : (memref<8x16x4xf32>, memref<8x4x16xf32>) -> memref<8x16x16xf32>
  return
}

// A product whose rows become the innermost dim of a transpose: computed
// as b^T a^T (operands swapped, their swaps toggled), so that the
// transpose keeps the innermost dim.
// CHECK-LABEL: func.func @product_transposed
// CHECK-SAME: (%[[A:.*]]: memref<8x4x12xf32>, %[[B:.*]]: memref<8x4x16xf32>, %[[Y:.*]]: memref<16x8x12xf32>)
// CHECK: %[[P:.*]] = kernel.alloc : memref<8x16x12xf32>
// CHECK: kernel.launch "graph.matmul"(%[[B]], %[[A]]) -> (%[[P]]) {backend = "openblas", options = {lhs_perm = array<i64: 0, 2, 1>}}
// CHECK: kernel.launch "graph.transpose"(%[[P]]) -> (%[[Y]]) {backend = "generated", options = {perm = array<i64: 1, 0, 2>}}
func.func @product_transposed(%a: memref<8x4x12xf32>, %b: memref<8x4x16xf32>, %y: memref<16x8x12xf32>) {
  %p = kernel.alloc : memref<8x12x16xf32>
  %at = kernel.alloc : memref<8x12x4xf32>
  kernel.launch "graph.transpose"(%a) -> (%at) {backend = "generated", options = {perm = array<i64: 0, 2, 1>}} : (memref<8x4x12xf32>) -> memref<8x12x4xf32>
  kernel.launch "graph.matmul"(%at, %b) -> (%p) {backend = "openblas", options = {}} : (memref<8x12x4xf32>, memref<8x4x16xf32>) -> memref<8x12x16xf32>
  kernel.launch "graph.transpose"(%p) -> (%y) {backend = "generated", options = {perm = array<i64: 2, 0, 1>}} : (memref<8x12x16xf32>) -> memref<16x8x12xf32>
  return
}

// A transpose of the product's last two dims goes: the product is
// computed transposed into its result. The transposed rhs 5x4 is read
// with its last two dims swapped again: not at all.
// CHECK-LABEL: func.func @product_swapped
// CHECK-SAME: (%[[X:.*]]: memref<3x4xf32>, %[[W:.*]]: memref<5x4xf32>, %[[Y:.*]]: memref<5x3xf32>)
// CHECK-NOT: graph.transpose
// CHECK: kernel.launch "graph.matmul"(%[[W]], %[[X]]) -> (%[[Y]]) {backend = "dnnl", options = {rhs_perm = array<i64: 1, 0>}}
// CHECK-NEXT: return
func.func @product_swapped(%x: memref<3x4xf32>, %w: memref<5x4xf32>, %y: memref<5x3xf32>) {
  %wt = kernel.alloc : memref<4x5xf32>
  kernel.launch "graph.transpose"(%w) -> (%wt) {backend = "generated", options = {perm = array<i64: 1, 0>}} : (memref<5x4xf32>) -> memref<4x5xf32>
  %p = kernel.alloc : memref<3x5xf32>
  kernel.launch "graph.matmul"(%x, %wt) -> (%p) {backend = "dnnl", options = {}} : (memref<3x4xf32>, memref<4x5xf32>) -> memref<3x5xf32>
  kernel.launch "graph.transpose"(%p) -> (%y) {backend = "generated", options = {perm = array<i64: 1, 0>}} : (memref<3x5xf32>) -> memref<5x3xf32>
  return
}

// The transposed product's buffer is allocated after the matmul (logits
// permuted to [N, V, T] for the loss, issue 26): the allocation moves
// before the matmul, which writes there.
// CHECK-LABEL: func.func @product_into_later_buffer
// CHECK-SAME: (%[[X:.*]]: memref<4x16x8xf32>, %[[W:.*]]: memref<8x50xf32>, %[[L:.*]]: memref<4x16xi64>, %[[LOSS:.*]]: memref<f32>)
// CHECK-NEXT: %[[T:.*]] = kernel.alloc : memref<4x50x16xf32>
// CHECK-NEXT: kernel.launch "graph.matmul"(%[[W]], %[[X]]) -> (%[[T]]) {backend = "dnnl", options = {lhs_perm = array<i64: 1, 0>, rhs_perm = array<i64: 0, 2, 1>}}
// CHECK-NOT: graph.transpose
// CHECK: kernel.launch "graph.softmax_cross_entropy"(%[[T]], %[[L]]) -> (%[[LOSS]])
func.func @product_into_later_buffer(%x: memref<4x16x8xf32>, %w: memref<8x50xf32>, %labels: memref<4x16xi64>, %loss: memref<f32>) {
  %p = kernel.alloc : memref<4x16x50xf32>
  kernel.launch "graph.matmul"(%x, %w) -> (%p) {backend = "dnnl", options = {}} : (memref<4x16x8xf32>, memref<8x50xf32>) -> memref<4x16x50xf32>
  %t = kernel.alloc : memref<4x50x16xf32>
  kernel.launch "graph.transpose"(%p) -> (%t) {backend = "generated", options = {perm = array<i64: 0, 2, 1>}} : (memref<4x16x50xf32>) -> memref<4x50x16xf32>
  kernel.launch "graph.softmax_cross_entropy"(%t, %labels) -> (%loss) {backend = "generated", options = {ignore_index = -100 : i64, label_smoothing = 0.000000e+00 : f64, reduction = "mean"}} : (memref<4x50x16xf32>, memref<4x16xi64>) -> memref<f32>
  return
}

// The product is read by something besides its transpose: left alone.
// CHECK-LABEL: func.func @product_shared
// CHECK: kernel.launch "graph.matmul"(%arg0, %arg1) -> (%[[P:.*]]) {backend = "dnnl", options = {}}
// CHECK: kernel.launch "graph.transpose"(%[[P]])
func.func @product_shared(%x: memref<3x4xf32>, %w: memref<4x5xf32>, %y: memref<5x3xf32>, %z: memref<3x5xf32>) {
  %p = kernel.alloc : memref<3x5xf32>
  kernel.launch "graph.matmul"(%x, %w) -> (%p) {backend = "dnnl", options = {}} : (memref<3x4xf32>, memref<4x5xf32>) -> memref<3x5xf32>
  kernel.launch "graph.transpose"(%p) -> (%y) {backend = "generated", options = {perm = array<i64: 1, 0>}} : (memref<3x5xf32>) -> memref<5x3xf32>
  kernel.launch "graph.relu"(%p) -> (%z) {backend = "generated", options = {}} : (memref<3x5xf32>) -> memref<3x5xf32>
  return
}

// Rule 2 makes the forward's key transpose [1, 2, 0] the [1, 0, 2] one
// that the key's gradient reads too: the second is not made again, its
// readers read the first's result. Not when the input is written in
// between (the second's copy of %v stays).
// CHECK-LABEL: func.func @made_twice
// CHECK-SAME: (%[[Q:.*]]: memref<8x16x4xf32>, %[[K:.*]]: memref<16x8x4xf32>, %[[V:.*]]: memref<16x8x4xf32>,
// CHECK: %[[KB:.*]] = kernel.alloc : memref<8x16x4xf32>
// CHECK: kernel.launch "graph.transpose"(%[[K]]) -> (%[[KB]])
// CHECK: kernel.launch "graph.matmul"(%[[Q]], %[[KB]])
// CHECK-NOT: kernel.launch "graph.transpose"(%[[K]])
// CHECK: kernel.launch "graph.matmul"(%[[Q]], %[[KB]])
// CHECK: kernel.launch "graph.transpose"(%[[V]])
// CHECK: kernel.launch "graph.relu"(%[[V]]) -> (%[[V]])
// CHECK: kernel.launch "graph.transpose"(%[[V]])
func.func @made_twice(%q: memref<8x16x4xf32>, %k: memref<16x8x4xf32>, %v: memref<16x8x4xf32>, %s: memref<8x16x16xf32>, %t: memref<8x16x16xf32>, %a: memref<8x16x4xf32>, %b: memref<8x16x4xf32>) {
  %kt = kernel.alloc : memref<8x4x16xf32>
  kernel.launch "graph.transpose"(%k) -> (%kt) {backend = "generated", options = {perm = array<i64: 1, 2, 0>}} : (memref<16x8x4xf32>) -> memref<8x4x16xf32>
  kernel.launch "graph.matmul"(%q, %kt) -> (%s) {backend = "dnnl", options = {}} : (memref<8x16x4xf32>, memref<8x4x16xf32>) -> memref<8x16x16xf32>
  %kb = kernel.alloc : memref<8x16x4xf32>
  kernel.launch "graph.transpose"(%k) -> (%kb) {backend = "generated", options = {perm = array<i64: 1, 0, 2>}} : (memref<16x8x4xf32>) -> memref<8x16x4xf32>
  kernel.launch "graph.matmul"(%q, %kb) -> (%t) {backend = "dnnl", options = {rhs_perm = array<i64: 0, 2, 1>}} : (memref<8x16x4xf32>, memref<8x16x4xf32>) -> memref<8x16x16xf32>
  %va = kernel.alloc : memref<8x16x4xf32>
  kernel.launch "graph.transpose"(%v) -> (%va) {backend = "generated", options = {perm = array<i64: 1, 0, 2>}} : (memref<16x8x4xf32>) -> memref<8x16x4xf32>
  kernel.launch "graph.relu"(%va) -> (%a) {backend = "generated", options = {}} : (memref<8x16x4xf32>) -> memref<8x16x4xf32>
  kernel.launch "graph.relu"(%v) -> (%v) {backend = "generated", options = {}} : (memref<16x8x4xf32>) -> memref<16x8x4xf32>
  %vb = kernel.alloc : memref<8x16x4xf32>
  kernel.launch "graph.transpose"(%v) -> (%vb) {backend = "generated", options = {perm = array<i64: 1, 0, 2>}} : (memref<16x8x4xf32>) -> memref<8x16x4xf32>
  kernel.launch "graph.relu"(%vb) -> (%b) {backend = "generated", options = {}} : (memref<8x16x4xf32>) -> memref<8x16x4xf32>
  return
}
