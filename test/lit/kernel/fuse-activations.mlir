// --trainc-fuse-activations: a ReLU read only from a oneDNN convolution or
// product becomes its post-op; the pre-activation buffer goes. So does a
// ReLU of such a product rounded to bf16, the rounding moved after it.
// ReLUs only with `relus=true` (trainc compile --relu-epilogues): oneDNN
// 2.6's ReLU post-op maps NaN to 0, the generated ReLU keeps it; by
// default only bias adds are fused.
// RUN: trainc-opt %s --trainc-fuse-activations=relus=true | FileCheck %s
// RUN: trainc-opt %s --trainc-fuse-activations | FileCheck %s --check-prefix=NANSAFE

// CHECK-LABEL: func.func @conv_relu
// CHECK-SAME: (%[[X:.*]]: memref<1x1x4x4xf32>, %[[W:.*]]: memref<2x1x3x3xf32>, %[[Y:.*]]: memref<1x2x4x4xf32>)
// CHECK-NOT: kernel.alloc
// CHECK: kernel.launch "graph.conv"(%[[X]], %[[W]]) -> (%[[Y]]) {backend = "dnnl", options = {pads = array<i64: 1, 1, 1, 1>, post_relu = true}}
// CHECK-NOT: graph.relu
// NANSAFE-LABEL: func.func @conv_relu
// NANSAFE: kernel.alloc
// NANSAFE: kernel.launch "graph.conv"{{.*}}options = {pads = array<i64: 1, 1, 1, 1>}}
// NANSAFE: kernel.launch "graph.relu"
func.func @conv_relu(%x: memref<1x1x4x4xf32>, %w: memref<2x1x3x3xf32>, %y: memref<1x2x4x4xf32>) {
  %c = kernel.alloc : memref<1x2x4x4xf32>
  kernel.launch "graph.conv"(%x, %w) -> (%c) {backend = "dnnl", options = {pads = array<i64: 1, 1, 1, 1>}} : (memref<1x1x4x4xf32>, memref<2x1x3x3xf32>) -> memref<1x2x4x4xf32>
  kernel.launch "graph.relu"(%c) -> (%y) {backend = "generated", options = {}} : (memref<1x2x4x4xf32>) -> memref<1x2x4x4xf32>
  return
}

// Not fused: the pre-activation has another reader; a product on another
// backend.
// CHECK-LABEL: func.func @not_fused
// CHECK: kernel.launch "graph.gemm"{{.*}}options = {}
// CHECK: kernel.launch "graph.relu"
// CHECK: kernel.launch "graph.matmul"{{.*}}backend = "openblas", options = {}
// CHECK: kernel.launch "graph.relu"
func.func @not_fused(%a: memref<2x3xf32>, %b: memref<3x4xf32>, %y: memref<2x4xf32>, %z: memref<2x4xf32>, %s: memref<2x4xf32>) {
  %c = kernel.alloc : memref<2x4xf32>
  kernel.launch "graph.gemm"(%a, %b) -> (%c) {backend = "dnnl", options = {}} : (memref<2x3xf32>, memref<3x4xf32>) -> memref<2x4xf32>
  kernel.launch "graph.relu"(%c) -> (%y) {backend = "generated", options = {}} : (memref<2x4xf32>) -> memref<2x4xf32>
  kernel.launch "runtime.copy"(%c) -> (%s) {backend = "generated", options = {}} : (memref<2x4xf32>) -> memref<2x4xf32>
  %d = kernel.alloc : memref<2x4xf32>
  kernel.launch "graph.matmul"(%a, %b) -> (%d) {backend = "openblas", options = {}} : (memref<2x3xf32>, memref<3x4xf32>) -> memref<2x4xf32>
  kernel.launch "graph.relu"(%d) -> (%z) {backend = "generated", options = {}} : (memref<2x4xf32>) -> memref<2x4xf32>
  return
}

// A bias add along the last dim after a oneDNN matmul becomes its third
// input (either operand order, [N] or [1, N]); then a ReLU its post-op.
// CHECK-LABEL: func.func @matmul_bias_relu
// CHECK-SAME: (%[[A:.*]]: memref<2x5x3xf32>, %[[B:.*]]: memref<3x4xf32>, %[[C:.*]]: memref<4xf32>, %[[D:.*]]: memref<1x4xf32>, %[[Y:.*]]: memref<2x5x4xf32>, %[[Z:.*]]: memref<2x5x4xf32>)
// CHECK-NEXT: kernel.launch "graph.matmul"(%[[A]], %[[B]], %[[C]]) -> (%[[Y]]) {backend = "dnnl", options = {rhs_perm = array<i64: 1, 0>}}
// CHECK-NEXT: kernel.launch "graph.matmul"(%[[A]], %[[B]], %[[D]]) -> (%[[Z]]) {backend = "dnnl", options = {post_relu = true}}
// CHECK-NEXT: return
func.func @matmul_bias_relu(%a: memref<2x5x3xf32>, %b: memref<3x4xf32>, %c: memref<4xf32>, %d: memref<1x4xf32>, %y: memref<2x5x4xf32>, %z: memref<2x5x4xf32>) {
  %m = kernel.alloc : memref<2x5x4xf32>
  kernel.launch "graph.matmul"(%a, %b) -> (%m) {backend = "dnnl", options = {rhs_perm = array<i64: 1, 0>}} : (memref<2x5x3xf32>, memref<3x4xf32>) -> memref<2x5x4xf32>
  kernel.launch "graph.add"(%c, %m) -> (%y) {backend = "generated", options = {}} : (memref<4xf32>, memref<2x5x4xf32>) -> memref<2x5x4xf32>
  %n = kernel.alloc : memref<2x5x4xf32>
  kernel.launch "graph.matmul"(%a, %b) -> (%n) {backend = "dnnl", options = {}} : (memref<2x5x3xf32>, memref<3x4xf32>) -> memref<2x5x4xf32>
  %s = kernel.alloc : memref<2x5x4xf32>
  kernel.launch "graph.add"(%n, %d) -> (%s) {backend = "generated", options = {}} : (memref<2x5x4xf32>, memref<1x4xf32>) -> memref<2x5x4xf32>
  kernel.launch "graph.relu"(%s) -> (%z) {backend = "generated", options = {}} : (memref<2x5x4xf32>) -> memref<2x5x4xf32>
  return
}

// Not a bias: a full-shape addend, an addend along another dim, a product
// read elsewhere.
// CHECK-LABEL: func.func @not_bias
// CHECK-COUNT-3: kernel.launch "graph.add"
func.func @not_bias(%a: memref<2x5x3xf32>, %b: memref<3x4xf32>, %c: memref<4xf32>, %e: memref<2x5x4xf32>, %f: memref<5x1xf32>, %y: memref<2x5x4xf32>, %z: memref<2x5x4xf32>, %w: memref<2x5x4xf32>, %s: memref<2x5x4xf32>) {
  %m = kernel.alloc : memref<2x5x4xf32>
  kernel.launch "graph.matmul"(%a, %b) -> (%m) {backend = "dnnl", options = {}} : (memref<2x5x3xf32>, memref<3x4xf32>) -> memref<2x5x4xf32>
  kernel.launch "graph.add"(%m, %e) -> (%y) {backend = "generated", options = {}} : (memref<2x5x4xf32>, memref<2x5x4xf32>) -> memref<2x5x4xf32>
  %n = kernel.alloc : memref<2x5x4xf32>
  kernel.launch "graph.matmul"(%a, %b) -> (%n) {backend = "dnnl", options = {}} : (memref<2x5x3xf32>, memref<3x4xf32>) -> memref<2x5x4xf32>
  kernel.launch "graph.add"(%n, %f) -> (%z) {backend = "generated", options = {}} : (memref<2x5x4xf32>, memref<5x1xf32>) -> memref<2x5x4xf32>
  %p = kernel.alloc : memref<2x5x4xf32>
  kernel.launch "graph.matmul"(%a, %b) -> (%p) {backend = "dnnl", options = {}} : (memref<2x5x3xf32>, memref<3x4xf32>) -> memref<2x5x4xf32>
  kernel.launch "graph.add"(%p, %c) -> (%w) {backend = "generated", options = {}} : (memref<2x5x4xf32>, memref<4xf32>) -> memref<2x5x4xf32>
  kernel.launch "runtime.copy"(%p) -> (%s) {backend = "generated", options = {}} : (memref<2x5x4xf32>) -> memref<2x5x4xf32>
  return
}

// An f32 convolution rounded to bf16 before its ReLU (--amp bf16 on an
// AVX2 target): the convolution applies the ReLU and the rounding writes
// the ReLU's output (relu(round(y)) == round(relu(y))).
// CHECK-LABEL: func.func @conv_round_relu
// CHECK-SAME: (%[[X:.*]]: memref<1x1x4x4xf32>, %[[W:.*]]: memref<2x1x3x3xf32>, %[[Y:.*]]: memref<1x2x4x4xbf16>)
// CHECK: %[[C:.*]] = kernel.alloc : memref<1x2x4x4xf32>
// CHECK-NEXT: kernel.launch "graph.conv"(%[[X]], %[[W]]) -> (%[[C]]) {backend = "dnnl", options = {pads = array<i64: 1, 1, 1, 1>, post_relu = true}}
// CHECK-NEXT: kernel.launch "graph.cast"(%[[C]]) -> (%[[Y]])
// CHECK-NOT: graph.relu
func.func @conv_round_relu(%x: memref<1x1x4x4xf32>, %w: memref<2x1x3x3xf32>, %y: memref<1x2x4x4xbf16>) {
  %c = kernel.alloc : memref<1x2x4x4xf32>
  kernel.launch "graph.conv"(%x, %w) -> (%c) {backend = "dnnl", options = {pads = array<i64: 1, 1, 1, 1>}} : (memref<1x1x4x4xf32>, memref<2x1x3x3xf32>) -> memref<1x2x4x4xf32>
  %r = kernel.alloc : memref<1x2x4x4xbf16>
  kernel.launch "graph.cast"(%c) -> (%r) {backend = "generated", options = {to = bf16}} : (memref<1x2x4x4xf32>) -> memref<1x2x4x4xbf16>
  kernel.launch "graph.relu"(%r) -> (%y) {backend = "generated", options = {}} : (memref<1x2x4x4xbf16>) -> memref<1x2x4x4xbf16>
  return
}
