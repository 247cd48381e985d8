// --trainc-kernel-to-loop: launches of the generated backend get a
// loop.kernel function (buffers seen collapsed: unit dims dropped, contiguous
// dims merged) and scratch allocs for what the kernel needs besides its
// outputs; other backends are left alone.
// RUN: trainc-opt %s --trainc-kernel-to-loop -split-input-file | FileCheck %s

// CHECK-LABEL: func.func @add_bias
// CHECK: kernel.launch "graph.add"{{.*}}backend = "generated", callee = @generated_add
// CHECK: kernel.launch "graph.relu"{{.*}}backend = "reference"
// CHECK-NOT: callee
// CHECK: func.func private @generated_add(%{{.*}}: memref<64x10xf32>, %{{.*}}: memref<10xf32>, %{{.*}}: memref<64x10xf32>) attributes {loop.kernel}
// CHECK: loop.nest ins({{.*}}) outs({{.*}}) domain = [64, 10] schedule = <parallel = -1, tile = [1, 16], vectorize = true>
// CHECK: arith.addf
func.func @add_bias(%a: memref<64x10xf32>, %b: memref<1x10xf32>, %c: memref<64x10xf32>, %d: memref<64x10xf32>) {
  kernel.launch "graph.add"(%a, %b) -> (%c) {backend = "generated", options = {}} : (memref<64x10xf32>, memref<1x10xf32>) -> memref<64x10xf32>
  kernel.launch "graph.relu"(%c) -> (%d) {backend = "reference", options = {}} : (memref<64x10xf32>) -> memref<64x10xf32>
  return
}

// -----

// Softmax over the last axis: two scratch rows (maxima, sums) and five
// nests (two fills, two reductions, the normalization); the large nests
// are split across threads by row.
// CHECK-LABEL: func.func @softmax
// CHECK: %[[MAX:.*]] = kernel.alloc : memref<256xf32>
// CHECK: %[[SUM:.*]] = kernel.alloc : memref<256xf32>
// CHECK: kernel.launch "graph.softmax"(%{{.*}}) -> (%{{.*}}) scratch(%[[MAX]], %[[SUM]] : memref<256xf32>, memref<256xf32>) {backend = "generated", callee = @generated_softmax
// CHECK: func.func private @generated_softmax(%{{.*}}: memref<256x1000xf32>, %{{.*}}: memref<256x1000xf32>, %{{.*}}: memref<256xf32>, %{{.*}}: memref<256xf32>)
// CHECK-COUNT-2: iterators = ["parallel", "reduction"]
// CHECK: schedule = <parallel = 0, tile = [1, 64], vectorize = true>
// CHECK-SAME: iterators = ["parallel", "parallel"]
// CHECK: math.exp
// CHECK: arith.divf
func.func @softmax(%x: memref<256x1000xf32>, %y: memref<256x1000xf32>) {
  kernel.launch "graph.softmax"(%x) -> (%y) {backend = "generated", options = {axis = 1 : i64}} : (memref<256x1000xf32>) -> memref<256x1000xf32>
  return
}

// -----

// A reduction over the batch (a bias gradient): the batch is the reduction,
// the features are parallel and contiguous.
// CHECK-LABEL: func.func private @generated_reduce_sum(%{{.*}}: memref<64x128xf32>, %{{.*}}: memref<128xf32>)
// CHECK: domain = [128]
// CHECK: domain = [64, 128]
// CHECK-SAME: iterators = ["reduction", "parallel"]
func.func @bias_grad(%x: memref<64x128xf32>, %y: memref<1x128xf32>) {
  kernel.launch "graph.reduce_sum"(%x) -> (%y) {backend = "generated", options = {axes = array<i64: 0>, keepdims = true}} : (memref<64x128xf32>) -> memref<1x128xf32>
  return
}

// -----

// Batch norm in training: per-channel sums over the batch and the spatial
// dims, split over channels and vectorized along the positions; a
// per-channel nest makes the output's factor and the running statistics
// (the unbiased variance divides by count - 1 = 8191); the data pass is
// split by batch.
// CHECK-LABEL: func.func @batch_norm
// CHECK-COUNT-3: kernel.alloc : memref<64xf32>
// CHECK-NEXT: kernel.launch "graph.batch_norm_training"{{.*}}callee = @generated_batch_norm_training
// CHECK: func.func private @generated_batch_norm_training(%[[X:.*]]: memref<32x64x256xf32>, {{.*}}, %[[Y:.*]]: memref<32x64x256xf32>, %{{.*}}: memref<64xf32>, %{{.*}}: memref<64xf32>, %[[FACTOR:.*]]: memref<64xf32>, %[[MEAN:.*]]: memref<64xf32>, %[[SQUARES:.*]]: memref<64xf32>)
// CHECK: loop.nest ins(%[[X]] : {{.*}}) outs(%[[MEAN]] : {{.*}}) domain = [32, 64, 256] schedule = <parallel = 1, tile = [1, 1, 64], vectorize = true>
// CHECK-SAME: iterators = ["reduction", "parallel", "reduction"]
// CHECK: loop.nest ins(%[[X]], %[[MEAN]] : {{.*}}) outs(%[[SQUARES]] : {{.*}}) domain = [32, 64, 256] schedule = <parallel = 1
// CHECK: loop.nest ins(%[[MEAN]], %[[SQUARES]], {{.*}}) outs(%[[FACTOR]], {{.*}}) domain = [64]
// CHECK: arith.constant 8.191000e+03 : f32
// CHECK: loop.nest ins(%[[X]], %[[MEAN]], %[[FACTOR]], {{.*}}) outs(%[[Y]] : {{.*}}) domain = [32, 64, 256] schedule = <parallel = 0, tile = [1, 1, 64], vectorize = true>
func.func @batch_norm(%x: memref<32x64x16x16xf32>, %c: memref<64xf32>, %y: memref<32x64x16x16xf32>, %m: memref<64xf32>, %v: memref<64xf32>) {
  kernel.launch "graph.batch_norm_training"(%x, %c, %c, %c, %c) -> (%y, %m, %v) {backend = "generated", options = {epsilon = 1.0e-05 : f64, momentum = 0.9 : f64}} : (memref<32x64x16x16xf32>, memref<64xf32>, memref<64xf32>, memref<64xf32>, memref<64xf32>) -> (memref<32x64x16x16xf32>, memref<64xf32>, memref<64xf32>)
  return
}

// -----

// Cross entropy over [N, C, d1, d2] (the spatial dims merged): the labels'
// check (first invalid position, then its label, into the loop.check
// status), softmax's row statistics, the label's score as a sum over the
// classes of select(loop.index == label, ...), then the loss: a full
// reduction into the scalar, on one thread.
// CHECK-LABEL: func.func @cross_entropy
// CHECK: kernel.launch "graph.softmax_cross_entropy"(%{{.*}}) -> (%{{.*}}) scratch({{.*}} : memref<i64>, memref<i64>, memref<8x20xf32>, memref<8x20xf32>, memref<8x20xf32>) {backend = "generated", callee = @generated_softmax_cross_entropy
// CHECK: func.func private @generated_softmax_cross_entropy(%{{.*}}: memref<8x10x20xf32>, %{{.*}}: memref<8x20xi64>, %{{.*}}: memref<f32>, {{.*}}) attributes {loop.check = #loop.check<status = 4, message = "graph.softmax_cross_entropy: label {} is not a class index in [0, 10)">, loop.kernel}
// CHECK: loop.nest ins(%{{.*}} : memref<8x20xi64>) outs(%{{.*}} : memref<i64>) domain = [8, 20]
// CHECK: arith.cmpi uge
// CHECK: arith.minsi
// CHECK: loop.nest ins(%{{.*}}, %{{.*}} : memref<8x20xi64>, memref<i64>) outs(%{{.*}} : memref<i64>) domain = [8, 20]
// CHECK: arith.addi
// CHECK: domain = [8, 10, 20]
// CHECK-SAME: iterators = ["parallel", "reduction", "parallel"]
// CHECK: math.exp
// CHECK: loop.nest ins({{.*}} : memref<8x10x20xf32>, memref<8x20xi64>, memref<8x20xf32>) outs(%{{.*}} : memref<8x20xf32>) domain = [8, 10, 20]
// CHECK: %[[CLASS:.*]] = loop.index 1 : index
// CHECK: %[[CLASS64:.*]] = arith.index_cast %[[CLASS]] : index to i64
// CHECK: %[[HIT:.*]] = arith.cmpi eq, %[[CLASS64]], %{{.*}} : i64
// CHECK: arith.select %[[HIT]]
// CHECK: loop.nest ins({{.*}}) outs(%{{.*}} : memref<f32>) domain = [8, 20] schedule = <parallel = -1, {{.*}} iterators = ["reduction", "reduction"]
// CHECK: math.log
func.func @cross_entropy(%x: memref<8x10x4x5xf32>, %labels: memref<8x4x5xi64>, %loss: memref<f32>) {
  kernel.launch "graph.softmax_cross_entropy"(%x, %labels) -> (%loss) {backend = "generated", options = {ignore_index = -100 : i64, label_smoothing = 0.0 : f64, reduction = "sum"}} : (memref<8x10x4x5xf32>, memref<8x4x5xi64>) -> memref<f32>
  return
}

// -----

// Its gradient on 256 rows of 1000 classes: the check, the mean's divisor
// (the labels that are not ignore_index), the row statistics, then one
// elementwise nest split across threads by row.
// CHECK-LABEL: func.func private @generated_softmax_cross_entropy_backward(
// CHECK: loop.nest ins(%{{.*}} : memref<256xi64>) outs(%{{.*}} : memref<f32>) domain = [256]
// CHECK: arith.cmpi eq
// CHECK: loop.nest ins({{.*}}) outs(%{{.*}} : memref<256x1000xf32>) domain = [256, 1000] schedule = <parallel = 0, tile = [1, 64], vectorize = true>
// CHECK-SAME: iterators = ["parallel", "parallel"]
// CHECK: loop.index 1 : index
// CHECK: math.exp
func.func @cross_entropy_gradient(%g: memref<f32>, %x: memref<256x1000xf32>, %labels: memref<256xi64>, %dx: memref<256x1000xf32>) {
  kernel.launch "graph.softmax_cross_entropy_backward"(%g, %x, %labels) -> (%dx) {backend = "generated", options = {ignore_index = -100 : i64, label_smoothing = 0.0 : f64, reduction = "mean"}} : (memref<f32>, memref<256x1000xf32>, memref<256xi64>) -> memref<256x1000xf32>
  return
}
