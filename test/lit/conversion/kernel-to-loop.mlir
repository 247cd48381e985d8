// --trainc-kernel-to-loop: launches of the generated backend get a
// loop.kernel function (buffers seen collapsed: unit dims dropped, contiguous
// dims merged) and scratch allocs for what the kernel needs besides its
// outputs; other backends are left alone.
// RUN: trainc-opt %s --trainc-kernel-to-loop -split-input-file | FileCheck %s
// Innermost tiles hold up to 4 vectors of the target's (vector-lanes; 16 by
// default, 8 on AVX2):
// RUN: trainc-opt %s --trainc-kernel-to-loop="vector-lanes=8" -split-input-file | FileCheck %s --check-prefix=AVX2
// AVX2-LABEL: func.func private @generated_softmax
// AVX2: schedule = <parallel = 0, tile = [1, 32], vectorize = true>

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

// Softmax over the last axis: two scratch rows (maxima, sums) and six
// nests (the maxima, exp(x - max) into the output, its row sums, the
// output divided in place; two fills); the large nests are split across
// threads by row. One exp per element.
// CHECK-LABEL: func.func @softmax
// CHECK: %[[MAX:.*]] = kernel.alloc : memref<256xf32>
// CHECK: %[[SUM:.*]] = kernel.alloc : memref<256xf32>
// CHECK: kernel.launch "graph.softmax"(%{{.*}}) -> (%{{.*}}) scratch(%[[MAX]], %[[SUM]] : memref<256xf32>, memref<256xf32>) {backend = "generated", callee = @generated_softmax
// CHECK: func.func private @generated_softmax(%[[X:.*]]: memref<256x1000xf32>, %[[Y:.*]]: memref<256x1000xf32>, %[[M:.*]]: memref<256xf32>, %[[S:.*]]: memref<256xf32>)
// CHECK: loop.nest ins(%[[X]] : {{.*}}) outs(%[[M]] : {{.*}}iterators = ["parallel", "reduction"]
// CHECK: loop.nest ins(%[[X]], %[[M]] : {{.*}}) outs(%[[Y]] : {{.*}}) {{.*}}schedule = <parallel = 0, tile = [1, 64], vectorize = true>
// CHECK-SAME: iterators = ["parallel", "parallel"]
// CHECK: math.exp
// CHECK: loop.nest ins(%[[Y]] : {{.*}}) outs(%[[S]] : {{.*}}iterators = ["parallel", "reduction"]
// CHECK-NOT: math.exp
// CHECK: loop.nest ins(%[[Y]], %[[S]] : {{.*}}) outs(%[[Y]] : {{.*}}iterators = ["parallel", "parallel"]
// CHECK-NEXT: ^bb0
// CHECK-NEXT: arith.divf
// CHECK-NOT: math.exp
// CHECK: return
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

// Batch norm in training: one nest zeroes both per-channel sums; one pass
// over the batch and the spatial dims sums the elements and their squares
// in f64, split over channels and vectorized along the positions; one
// per-channel nest rounds the mean, takes the mean's square out of the
// squares (clamped at 0) and makes the output's factor and the running
// statistics (the unbiased variance divides by count - 1 = 8191); the data
// pass is split by batch.
// CHECK-LABEL: func.func @batch_norm
// CHECK: kernel.alloc : memref<64xf32>
// CHECK-COUNT-2: kernel.alloc : memref<64xf64>
// CHECK-NEXT: kernel.alloc : memref<64xf32>
// CHECK-NEXT: kernel.launch "graph.batch_norm_training"{{.*}}callee = @generated_batch_norm_training
// CHECK: func.func private @generated_batch_norm_training(%[[X:.*]]: memref<32x64x256xf32>, {{.*}}, %[[Y:.*]]: memref<32x64x256xf32>, %{{.*}}: memref<64xf32>, %{{.*}}: memref<64xf32>, %[[FACTOR:.*]]: memref<64xf32>, %[[SUM:.*]]: memref<64xf64>, %[[SUMSQ:.*]]: memref<64xf64>, %[[MEAN:.*]]: memref<64xf32>)
// CHECK: loop.nest outs(%[[SUM]], %[[SUMSQ]] : {{.*}}) domain = [64]
// CHECK: loop.nest ins(%[[X]] : {{.*}}) outs(%[[SUM]], %[[SUMSQ]] : {{.*}}) domain = [32, 64, 256] schedule = <parallel = 1, tile = [1, 1, 64], vectorize = true>
// CHECK-SAME: iterators = ["reduction", "parallel", "reduction"]
// CHECK: %[[WIDE:.*]] = arith.extf {{.*}} : f32 to f64
// CHECK: %[[SQUARE:.*]] = arith.mulf %[[WIDE]], %[[WIDE]] : f64
// CHECK: arith.addf {{.*}}, %[[WIDE]] : f64
// CHECK: arith.addf {{.*}}, %[[SQUARE]] : f64
// CHECK-NOT: domain = [32, 64, 256]
// CHECK: loop.nest ins(%[[SUM]], %[[SUMSQ]], {{.*}}) outs(%[[MEAN]], %[[FACTOR]], {{.*}}) domain = [64]
// CHECK: arith.truncf {{.*}} : f64 to f32
// CHECK: arith.subf
// CHECK: arith.maximumf {{.*}} : f64
// CHECK: arith.truncf {{.*}} : f64 to f32
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
// reduction into an f64 scratch scalar, on one thread, rounded to the f32
// loss.
// CHECK-LABEL: func.func @cross_entropy
// CHECK: kernel.launch "graph.softmax_cross_entropy"(%{{.*}}) -> (%{{.*}}) scratch({{.*}} : memref<i64>, memref<i64>, memref<8x20xf32>, memref<8x20xf32>, memref<8x20xf32>, memref<f64>) {backend = "generated", callee = @generated_softmax_cross_entropy
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
// CHECK: loop.nest ins({{.*}}) outs(%[[SUM:.*]] : memref<f64>) domain = [8, 20] schedule = <parallel = -1, {{.*}} iterators = ["reduction", "reduction"]
// CHECK: math.log
// CHECK: arith.extf {{.*}} : f32 to f64
// CHECK: loop.nest ins(%[[SUM]] : memref<f64>) outs(%{{.*}} : memref<f32>) domain = []
// CHECK: arith.truncf {{.*}} : f64 to f32
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

// -----

// Max pooling's gradient, 2x2/2 windows tiling 64x32x28x28, in one nest
// over the window positions: the input seen as [N*C*OH, KH, OW] pairs of
// taps (i64), each window row's pair an operand (a constant KH) and an
// output of dx, the maximum (NaNs skipped) and the first maximal tap (a
// NaN's code below every tap) in registers, no scratch; innermost tiles
// of exactly OW = 14 lanes; split across threads by window row.
// CHECK-DAG: #[[ROW0:.*]] = affine_map<(d0, d1) -> (d0, 0, d1)>
// CHECK-DAG: #[[ROW1:.*]] = affine_map<(d0, d1) -> (d0, 1, d1)>
// CHECK-LABEL: func.func @max_pool_gradient(
// CHECK-NOT: kernel.alloc
// CHECK: kernel.launch "graph.max_pool_backward"(%{{.*}}) -> (%{{.*}}) {backend = "generated", callee = @generated_max_pool_backward
// CHECK: func.func private @generated_max_pool_backward(%[[DY:[^:]+]]: memref<28672x14xf32>, %[[X:[^:]+]]: memref<28672x2x14xi64>, %[[DX:[^:]+]]: memref<28672x2x14xi64>)
// CHECK: loop.nest ins(%[[DY]], %[[X]], %[[X]] : {{.*}}) outs(%[[DX]], %[[DX]] : {{.*}}) domain = [28672, 14] schedule = <parallel = 0, tile = [1, 14], vectorize = true> attributes {indexing_maps = [#{{[^,]+}}, #[[ROW0]], #[[ROW1]], #[[ROW0]], #[[ROW1]]], iterators = ["parallel", "parallel"]}
// CHECK: arith.shrui
// CHECK: arith.constant 0xFF800000 : f32
// CHECK-COUNT-4: arith.maxnumf
// CHECK: arith.cmpf oeq
// CHECK: arith.cmpf uno
// CHECK-COUNT-3: arith.minsi
// CHECK: arith.shli
// CHECK: arith.shli
// CHECK: loop.yield %{{.*}}, %{{.*}} : i64, i64
// CHECK-NOT: loop.nest
func.func @max_pool_gradient(%dy: memref<64x32x14x14xf32>, %x: memref<64x32x28x28xf32>, %dx: memref<64x32x28x28xf32>) {
  kernel.launch "graph.max_pool_backward"(%dy, %x) -> (%dx) {backend = "generated", options = {ceil_mode = false, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>}} : (memref<64x32x14x14xf32>, memref<64x32x28x28xf32>) -> memref<64x32x28x28xf32>
  return
}

// -----

// The forward over the same space: one reduction into the output.
// CHECK-LABEL: func.func @max_pool(
// CHECK: func.func private @generated_max_pool(%[[X:[^:]+]]: memref<28672x2x14xi64>, %[[Y:[^:]+]]: memref<28672x14xf32>)
// CHECK: loop.nest outs(%[[Y]] : {{.*}})
// CHECK: loop.nest ins(%[[X]] : {{.*}}) outs(%[[Y]] : {{.*}}) domain = [28672, 2, 14] schedule = <parallel = 0, tile = [1, 1, 14], vectorize = true>
// CHECK: arith.maximumf
// CHECK: arith.maximumf
// CHECK-NOT: loop.nest
func.func @max_pool(%x: memref<64x32x28x28xf32>, %y: memref<64x32x14x14xf32>) {
  kernel.launch "graph.max_pool"(%x) -> (%y) {backend = "generated", options = {ceil_mode = false, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>}} : (memref<64x32x28x28xf32>) -> memref<64x32x14x14xf32>
  return
}

// -----

// 3x3/3 windows: the taps of the last dim come before its window positions
// (innermost), read with a stride of 3: scalar loops.
// CHECK: #[[STRIDED:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3, d2)>
// CHECK-LABEL: func.func @max_pool_gradient_3x3
// CHECK: func.func private @generated_max_pool_backward(%{{.*}}: memref<18x3xf32>, %[[X:[^:]+]]: memref<18x3x3x3xf32>
// CHECK: loop.nest ins(%[[X]] : {{.*}}) outs({{.*}}) domain = [18, 3, 3, 3] schedule = <parallel = -1, tile = [1, 1, 1, 3], vectorize = false> attributes {indexing_maps = [#[[STRIDED]], #{{.*}}], iterators = ["parallel", "reduction", "reduction", "parallel"]}
// CHECK: loop.index 1 : index
// CHECK: loop.index 2 : index
func.func @max_pool_gradient_3x3(%dy: memref<2x3x3x3xf32>, %x: memref<2x3x9x9xf32>, %dx: memref<2x3x9x9xf32>) {
  kernel.launch "graph.max_pool_backward"(%dy, %x) -> (%dx) {backend = "generated", options = {ceil_mode = false, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 3, 3>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 3, 3>}} : (memref<2x3x3x3xf32>, memref<2x3x9x9xf32>) -> memref<2x3x9x9xf32>
  return
}

// -----

// Overlapping windows (3x3, stride 2, padding 1: ResNet's pooling): the
// maximum and the gradient's argmax are nests over the output positions,
// every tap an operand, a shifted view of the padded input (-inf padding
// for the maximum, taps inside the input tested for the argmax), the taps
// unrolled in the body. The gradient's scatter stays a nest over positions
// and taps whose sums index its f32 scratch: single points, in window
// order (overlapping windows write the same elements).
// CHECK-DAG: #[[FIRST_TAP:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2 * 2, d3 * 2)>
// CHECK-DAG: #[[LAST_TAP:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2 * 2 + 2, d3 * 2 + 2)>
// CHECK-LABEL: func.func private @generated_max_pool(
// CHECK: loop.nest ins(%[[P:[^,]+]], %[[P]], %[[P]], %[[P]], %[[P]], %[[P]], %[[P]], %[[P]], %[[P]] : {{.*}}) outs(%{{.*}} : memref<2x3x4x4xbf16>) domain = [2, 3, 4, 4]
// CHECK-SAME: indexing_maps = [#[[FIRST_TAP]], {{.*}}, #[[LAST_TAP]], #{{.*}}]
// CHECK-COUNT-9: arith.maximumf
// CHECK-NOT: loop.nest
// CHECK-LABEL: func.func private @generated_max_pool_backward(
// CHECK: loop.nest ins(%[[Q:[^,]+]], %[[Q]], %[[Q]], %[[Q]], %[[Q]], %[[Q]], %[[Q]], %[[Q]], %[[Q]] : {{.*}}) outs(%[[CHOSEN:.*]] : memref<2x3x4x4xi64>) domain = [2, 3, 4, 4]
// CHECK: loop.nest ins(%{{.*}}, %[[CHOSEN]] : {{.*}}) outs(%{{.*}} : memref<2x3x9x9xf32>) domain = [2, 3, 4, 4, 3, 3] schedule = <parallel = -1, tile = [1, 1, 1, 1, 1, 1], vectorize = false>
func.func @overlapping_max_pool(%x: memref<2x3x8x8xbf16>, %y: memref<2x3x4x4xbf16>, %dy: memref<2x3x4x4xbf16>, %dx: memref<2x3x8x8xbf16>) {
  kernel.launch "graph.max_pool"(%x) -> (%y) {backend = "generated", options = {ceil_mode = false, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>}} : (memref<2x3x8x8xbf16>) -> memref<2x3x4x4xbf16>
  kernel.launch "graph.max_pool_backward"(%dy, %x) -> (%dx) {backend = "generated", options = {ceil_mode = false, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>}} : (memref<2x3x4x4xbf16>, memref<2x3x8x8xbf16>) -> memref<2x3x8x8xbf16>
  return
}

// -----

// The gradient of a convolution weight's live centre tap: one nest over
// [rows, taps] writing every element once (the tap at flat position 4 of
// 3x3 from the gradient, zeros elsewhere), no fill and strided scatter.
// A slice that also narrows a leading dim keeps fill + scatter.
// CHECK-LABEL: func.func private @generated_slice_backward(%{{.*}}: memref<32xf32>, %{{.*}}: memref<32x9xf32>)
// CHECK: loop.nest ins(%{{.*}} : memref<32xf32>) outs(%{{.*}} : memref<32x9xf32>) domain = [32, 9]
// CHECK: %[[TAP:.*]] = loop.index 1
// CHECK: %[[LIVE:.*]] = arith.cmpi eq, %[[TAP]], %c4
// CHECK: arith.select %[[LIVE]]
// CHECK-NOT: loop.nest
// CHECK-LABEL: func.func private @generated_slice_backward_0(
// CHECK-COUNT-2: loop.nest
func.func @centre_tap_gradient(%g: memref<8x4x1x1xf32>, %dw: memref<8x4x3x3xf32>, %h: memref<4x4x1x1xf32>, %dv: memref<8x4x3x3xf32>) {
  kernel.launch "graph.slice_backward"(%g) -> (%dw) {backend = "generated", options = {input_shape = array<i64: 8, 4, 3, 3>, starts = array<i64: 0, 0, 1, 1>, ends = array<i64: 8, 4, 2, 2>, steps = array<i64: 1, 1, 1, 1>}} : (memref<8x4x1x1xf32>) -> memref<8x4x3x3xf32>
  kernel.launch "graph.slice_backward"(%h) -> (%dv) {backend = "generated", options = {input_shape = array<i64: 8, 4, 3, 3>, starts = array<i64: 2, 0, 1, 1>, ends = array<i64: 6, 4, 2, 2>, steps = array<i64: 1, 1, 1, 1>}} : (memref<4x4x1x1xf32>) -> memref<8x4x3x3xf32>
  return
}

// -----

// A depthwise convolution (one channel per group) of stride 1 and up to 9
// taps reads its input unpadded: every tap is a shifted view of the input
// itself, a wrapping input (a read that leaves a row or a plane lands in
// the next one, inside the buffer), selected to zero by loop.index where
// it left the plane; its weight a broadcast, with the bias, in tiles of a
// few channels (of 4, then the rest in one tile: their chains of adds
// interleave) of exactly a row of 8 (unmasked, on a target of 16 lanes).
// Channels 0 and C-1, whose reads could leave the buffer, are copied into
// a scratch [N, 4, H, W] between planes of slack and computed there. With
// strides, the zero-padded input (a fill and a copy) is split into phases
// ([N, C, s, E, s, E]) first, so that each tap reads a contiguous row: the
// pass reads the padded input seen as [N, C, E, s, E, s] (a view of the
// same scratch) in tiles of [s, E] transposed (--trainc-lower-loop-nests
// loads each tile's row whole and deinterleaves it in registers).
// CHECK-DAG: #[[FIRST_TAP:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1 + 1, d2 - 1, d3 - 1)>
// CHECK-DAG: #[[EDGE_WEIGHT:.*]] = affine_map<(d0, d1, d2, d3) -> (d1 * 3, 2, 2)>
// CHECK-DAG: #[[LAST_CHANNELS:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1 + 5, d2 - 1, d3 - 1)>
// CHECK-DAG: #[[SPLIT:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d3, d2, d5, d4)>
// CHECK-DAG: #[[PHASE_TAP:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, 0, d2 + 1, 0, d3 + 1)>
// CHECK-LABEL: func.func private @generated_conv(
// CHECK-SAME: %[[X:[^:]+]]: memref<2x4x8x8xf32>, %[[W:[^:]+]]: memref<4x3x3xf32>, %[[B:[^:]+]]: memref<4xf32>, %[[Y:[^:]+]]: memref<2x4x8x8xf32>, %[[E:[^:]+]]: memref<2x4x8x8xf32>)
// CHECK: loop.nest ins(%[[X]], %[[X]], %[[X]], %[[X]], %[[X]], %[[X]], %[[X]], %[[X]], %[[X]], %[[W]], %[[W]], %[[W]], %[[W]], %[[W]], %[[W]], %[[W]], %[[W]], %[[W]], %[[B]] : {{.*}}) outs(%[[Y]] : memref<2x4x8x8xf32>) domain = [2, 2, 8, 8] schedule = <parallel = -1, tile = [1, 2, 1, 8], vectorize = true> attributes {indexing_maps = [#[[FIRST_TAP]], {{.*}}wrapping_inputs = array<i64: 0, 1, 2, 3, 4, 5, 6, 7, 8>}
// CHECK: %[[ROW:.*]] = loop.index 2 : index
// CHECK: %[[ROW32:.*]] = arith.index_cast %[[ROW]] : index to i32
// CHECK: arith.cmpi sge, %[[ROW32]], %{{.*}} : i32
// CHECK: arith.select %{{.*}}, %{{.*}}, %{{.*}} : f32
// The sum starts from the bias (%arg23) and adds the taps in row-major
// order, each with a fused multiply-add (oneDNN's order and rounding).
// CHECK: %[[SUM0:.*]] = math.fma %{{.*}}, %arg14, %arg23 : f32
// CHECK-NEXT: %[[SUM1:.*]] = math.fma %{{.*}}, %arg15, %[[SUM0]] : f32
// CHECK-COUNT-6: math.fma
// CHECK-NEXT: %[[SUM8:.*]] = math.fma %{{.*}}, %arg22, %{{.*}} : f32
// CHECK-NEXT: loop.yield %[[SUM8]] : f32
// CHECK: loop.nest ins(%[[X]] : memref<2x4x8x8xf32>) outs(%[[E]] : memref<2x4x8x8xf32>) domain = [2, 2, 8, 8]
// CHECK: loop.nest ins(%[[E]], {{.*}}) outs(%[[Y]] : memref<2x4x8x8xf32>) domain = [2, 2, 8, 8] {{.*}}#[[EDGE_WEIGHT]]{{.*}}wrapping_inputs = array<i64: 0, 1, 2, 3, 4, 5, 6, 7, 8>
// CHECK-NOT: loop.nest
// CHECK-LABEL: func.func private @generated_conv_0(
// CHECK: loop.nest {{.*}} domain = [2, 4, 8, 8] schedule = <parallel = -1, tile = [1, 4, 1, 8], vectorize = true>
// CHECK: loop.nest {{.*}} domain = [2, 1, 8, 8] schedule = <parallel = -1, tile = [1, 1, 1, 8], vectorize = true> attributes {indexing_maps = [#[[LAST_CHANNELS]]
// CHECK: loop.nest
// CHECK: loop.nest
// CHECK-NOT: loop.nest
// CHECK-LABEL: func.func private @generated_conv_1(
// CHECK-SAME: %[[PADDED:[^:]+]]: memref<2x4x10x10xf32>, %[[VIEW:[^:]+]]: memref<2x4x5x2x5x2xf32> {loop.view_of = 3 : i64}
// CHECK: loop.nest outs(%[[PADDED]] : memref<2x4x10x10xf32>)
// CHECK: loop.nest ins(%{{[^ ]+}} : memref<2x4x8x8xf32>) outs(%[[PADDED]] : memref<2x4x10x10xf32>)
// CHECK: loop.nest ins(%[[VIEW]] : memref<2x4x5x2x5x2xf32>) outs(%[[PHASES:[^ ]+]] : memref<2x4x2x5x2x5xf32>) domain = [2, 4, 2, 5, 2, 5] schedule = <parallel = -1, tile = [1, 1, 1, 1, 2, 5], vectorize = true> attributes {indexing_maps = [#[[SPLIT]], #{{[^ ]+}}]
// CHECK: loop.nest ins(%[[PHASES]], {{.*}} outs(%{{[^ ]+}} : memref<2x4x4x4xf32>) domain = [2, 4, 4, 4] schedule = <{{.*}}vectorize = true> attributes {indexing_maps = [{{.*}}#[[PHASE_TAP]]
func.func @depthwise(%x: memref<2x4x8x8xf32>, %w: memref<4x1x3x3xf32>, %b: memref<4xf32>, %y: memref<2x4x8x8xf32>, %ys: memref<2x4x4x4xf32>, %x7: memref<2x7x8x8xf32>, %w7: memref<7x1x3x3xf32>, %y7: memref<2x7x8x8xf32>) {
  kernel.launch "graph.conv"(%x, %w, %b) -> (%y) {backend = "generated", options = {dilations = array<i64: 1, 1>, group = 4 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>}} : (memref<2x4x8x8xf32>, memref<4x1x3x3xf32>, memref<4xf32>) -> memref<2x4x8x8xf32>
  kernel.launch "graph.conv"(%x7, %w7) -> (%y7) {backend = "generated", options = {dilations = array<i64: 1, 1>, group = 7 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>}} : (memref<2x7x8x8xf32>, memref<7x1x3x3xf32>) -> memref<2x7x8x8xf32>
  kernel.launch "graph.conv"(%x, %w) -> (%ys) {backend = "generated", options = {dilations = array<i64: 1, 1>, group = 4 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>}} : (memref<2x4x8x8xf32>, memref<4x1x3x3xf32>) -> memref<2x4x4x4xf32>
  return
}

// -----

// A depthwise weight gradient: one nest whose nine outputs are the taps
// of a row of sums (constant views of private scratch [C, 3, 3, W]), each
// a sum over the batch and the rows, kept a vector along the row (tile
// [1, 1, 1, 8]: the whole row, unmasked), then one nest summing each
// row into dw. Without strides it reads the input unpadded, as the
// forward convolution does: channels 1 to C-2 from the input (wrapping
// inputs, each tap selected to zero where it left the plane), channels 0
// and C-1 from their copies between slack planes. Planes whose rows are shorter than half a vector run
// channels-last: the gradient and the weight are transposed into
// [N, H, W, C] and [K, K, C] (scalar passes), every tap runs along the
// channels, and the result is transposed back. Channels-last nests run a
// vector of channels at a time (tile [16, 1, 1, 1]) with the batch and
// the plane inside it, writing private scratch (llvm.noalias): LLVM keeps
// a weight gradient's sums, or the taps' weights, in registers.
// CHECK-LABEL: func.func private @generated_conv_backward_weight(
// CHECK-SAME: %[[DY:[^:]+]]: memref<2x4x8x8xf32>, %[[X:[^:]+]]: memref<2x4x8x8xf32>, %[[DW:[^:]+]]: memref<4x3x3xf32>, %[[ROWS:[^:]+]]: memref<4x3x3x8xf32> {llvm.noalias}, %[[E:[^:]+]]: memref<2x4x8x8xf32>)
// CHECK: loop.nest ins(%[[DY]], %[[X]], %[[X]], %[[X]], %[[X]], %[[X]], %[[X]], %[[X]], %[[X]], %[[X]] : {{.*}}) outs(%[[ROWS]], %[[ROWS]], %[[ROWS]], %[[ROWS]], %[[ROWS]], %[[ROWS]], %[[ROWS]], %[[ROWS]], %[[ROWS]] : {{.*}}) domain = [2, 2, 8, 8] schedule = <parallel = -1, tile = [1, 1, 1, 8], vectorize = true> attributes {{{.*}}iterators = ["parallel", "reduction", "reduction", "parallel"], wrapping_inputs = array<i64: 1, 2, 3, 4, 5, 6, 7, 8, 9>}
// CHECK: loop.nest ins(%[[X]] : memref<2x4x8x8xf32>) outs(%[[E]] : memref<2x4x8x8xf32>)
// CHECK: loop.nest ins(%[[DY]], %[[E]], {{.*}}) outs(%[[ROWS]], {{.*}}) domain = [2, 2, 8, 8] {{.*}}wrapping_inputs = array<i64: 1, 2, 3, 4, 5, 6, 7, 8, 9>}
// CHECK: loop.nest ins(%[[ROWS]] : memref<4x3x3x8xf32>) outs(%[[DW]] : memref<4x3x3xf32>) domain = [4, 3, 3, 8] {{.*}}iterators = ["parallel", "parallel", "parallel", "reduction"]
// CHECK-LABEL: func.func private @generated_conv_backward_weight_0(
// CHECK-SAME: %[[DWT:[^:]+]]: memref<3x3x16xf32> {llvm.noalias})
// CHECK: loop.nest ins(%[[DYT2:[^ ]+]], %[[XT:[^ ]+]], {{.*}}) outs(%[[DWT]], {{.*}}) domain = [16, 2, 2, 2] schedule = <parallel = -1, tile = [16, 1, 1, 1], vectorize = true> attributes {{{.*}}iterators = ["parallel", "reduction", "reduction", "reduction"]}
// CHECK: loop.nest ins(%[[DWT]] : memref<3x3x16xf32>) outs(%{{[^ ]+}} : memref<16x3x3xf32>)
// CHECK-LABEL: func.func private @generated_conv_backward_input(
// CHECK: loop.nest ins(%{{[^ ]+}} : memref<2x16x2x2xf32>) outs(%[[DYT:[^ ]+]] : memref<2x4x4x16xf32>) {{.*}}vectorize = false
// CHECK: loop.nest ins(%{{[^ ]+}} : memref<16x3x3xf32>) outs(%[[WT:[^ ]+]] : memref<3x3x16xf32>) {{.*}}vectorize = false
// CHECK: loop.nest ins(%[[DYT]], {{.*}}, %[[WT]] : {{.*}}) outs(%[[DXT:[^ ]+]] : memref<2x2x2x16xf32>) domain = [16, 2, 2, 2] schedule = <parallel = -1, tile = [16, 1, 1, 1], vectorize = true>
// CHECK: loop.nest ins(%[[DXT]] : memref<2x2x2x16xf32>) outs(%{{[^ ]+}} : memref<2x16x2x2xf32>) {{.*}}vectorize = false
// Rows of 4 and more: the copies between NCHW and (padded) NHWC run in the
// target's order, in transposed tiles of vectors.
// CHECK-LABEL: func.func private @generated_conv_backward_input_1(
// CHECK: loop.nest ins(%{{[^ ]+}} : memref<2x16x4x4xf32>) outs(%{{[^ ]+}} : memref<2x6x6x16xf32>) domain = [2, 4, 4, 16] schedule = <parallel = -1, tile = [1, 1, 4, 16], vectorize = true>
// CHECK: loop.nest ins(%{{[^ ]+}} : memref<2x4x4x16xf32>) outs(%{{[^ ]+}} : memref<2x16x4x4xf32>) domain = [2, 16, 4, 4] schedule = <parallel = -1, tile = [1, 16, 1, 16], vectorize = true>
func.func @depthwise_gradients(%dy: memref<2x4x8x8xf32>, %w: memref<4x1x3x3xf32>, %x: memref<2x4x8x8xf32>, %dw: memref<4x1x3x3xf32>, %dys: memref<2x16x2x2xf32>, %ws: memref<16x1x3x3xf32>, %dxs: memref<2x16x2x2xf32>, %xs: memref<2x16x2x2xf32>, %dws: memref<16x1x3x3xf32>, %dy4: memref<2x16x4x4xf32>, %dx4: memref<2x16x4x4xf32>) {
  kernel.launch "graph.conv_backward_weight"(%dy, %x) -> (%dw) {backend = "generated", options = {dilations = array<i64: 1, 1>, group = 4 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>, weight_shape = array<i64: 4, 1, 3, 3>}} : (memref<2x4x8x8xf32>, memref<2x4x8x8xf32>) -> memref<4x1x3x3xf32>
  kernel.launch "graph.conv_backward_weight"(%dys, %xs) -> (%dws) {backend = "generated", options = {dilations = array<i64: 1, 1>, group = 16 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>, weight_shape = array<i64: 16, 1, 3, 3>}} : (memref<2x16x2x2xf32>, memref<2x16x2x2xf32>) -> memref<16x1x3x3xf32>
  kernel.launch "graph.conv_backward_input"(%dys, %ws) -> (%dxs) {backend = "generated", options = {dilations = array<i64: 1, 1>, group = 16 : i64, input_shape = array<i64: 2, 16, 2, 2>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>}} : (memref<2x16x2x2xf32>, memref<16x1x3x3xf32>) -> memref<2x16x2x2xf32>
  kernel.launch "graph.conv_backward_input"(%dy4, %ws) -> (%dx4) {backend = "generated", options = {dilations = array<i64: 1, 1>, group = 16 : i64, input_shape = array<i64: 2, 16, 4, 4>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>}} : (memref<2x16x4x4xf32>, memref<16x1x3x3xf32>) -> memref<2x16x4x4xf32>
  return
}

// -----

// A strided depthwise input gradient by phases: dx (seen as [N, C, E, s,
// E, s]) at h = 2i + r sums only the taps of phase r, over the gradient
// padded with zeros (no stride-dilated copy) and the weight padded with
// zeros (a private scratch) where a phase has fewer taps: 4 taps instead of
// 9. Domain (n, c, r0, i0, r1, i1): a tile holds both phases of 8
// positions, written transposed (interleaved) into dx's rows.
// CHECK-DAG: #[[FIRST_TAP:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d3, d5)>
// CHECK-DAG: #[[LAST_TAP:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d3 + 1, d5 + 1)>
// CHECK-DAG: #[[FIRST_WEIGHT:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d1, d2 + 2, d4 + 2)>
// CHECK-DAG: #[[LAST_WEIGHT:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d1, d2, d4)>
// CHECK-DAG: #[[INTERLEAVED:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d3, d2, d5, d4)>
// CHECK-DAG: #[[CL_TAP:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d3, d4 + 1, d5 + 1, d0)>
// CHECK-DAG: #[[CL_WEIGHT:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d1 + 2, d2 + 2, d0)>
// CHECK-DAG: #[[CL_OUT:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d3, d4, d1, d5, d2, d0)>
// CHECK-LABEL: func.func private @generated_conv_backward_input(
// CHECK-SAME: %[[DY:[^:]+]]: memref<2x4x8x8xf32>, %[[W:[^:]+]]: memref<4x3x3xf32>, %[[DX:[^:]+]]: memref<2x4x8x2x8x2xf32>, %[[DYP:[^:]+]]: memref<2x4x9x9xf32>, %[[WP:[^:]+]]: memref<4x4x4xf32> {llvm.noalias})
// CHECK: loop.nest outs(%[[DYP]] : {{.*}})
// CHECK: loop.nest ins(%[[DY]] : {{.*}}) outs(%[[DYP]] : {{.*}})
// CHECK: loop.nest outs(%[[WP]] : {{.*}})
// CHECK: loop.nest ins(%[[W]] : {{.*}}) outs(%[[WP]] : {{.*}})
// CHECK: loop.nest ins(%[[DYP]], %[[DYP]], %[[DYP]], %[[DYP]], %[[WP]], %[[WP]], %[[WP]], %[[WP]] : {{.*}}) outs(%[[DX]] : memref<2x4x8x2x8x2xf32>) domain = [2, 4, 2, 8, 2, 8] schedule = <parallel = -1, tile = [1, 1, 1, 1, 2, 8], vectorize = true> attributes {indexing_maps = [#[[FIRST_TAP]], #{{[^ ]+}}, #{{[^ ]+}}, #[[LAST_TAP]], #[[FIRST_WEIGHT]], #{{[^ ]+}}, #{{[^ ]+}}, #[[LAST_WEIGHT]], #[[INTERLEAVED]]]
// Channels-last (4x4 planes): domain (c, r0, r1, n, i0, i1), a vector of
// channels at a time, each phase's 4 weights in registers (private
// scratch), the result written through a view [N, E, s, E, s, C] of the
// channels-last buffer [N, H, W, C] that is copied back.
// CHECK-LABEL: func.func private @generated_conv_backward_input_0(
// CHECK-SAME: %[[CL_WP:[^:]+]]: memref<4x4x16xf32> {llvm.noalias}, %[[CL_RESULT:[^:]+]]: memref<2x4x4x16xf32>, %[[CL_VIEW:[^:]+]]: memref<2x2x2x2x2x16xf32> {loop.view_of = 5 : i64})
// CHECK: loop.nest ins({{.*}}%[[CL_WP]] : {{.*}}) outs(%[[CL_VIEW]] : memref<2x2x2x2x2x16xf32>) domain = [16, 2, 2, 2, 2, 2] schedule = <parallel = -1, tile = [16, 1, 1, 1, 1, 1], vectorize = true> attributes {indexing_maps = [{{.*}}#[[CL_TAP]], #[[CL_WEIGHT]], {{.*}}#[[CL_OUT]]]
// CHECK: loop.nest ins(%[[CL_RESULT]] : memref<2x4x4x16xf32>) outs(%{{[^ ]+}} : memref<2x16x4x4xf32>)
// CHECK-NOT: loop.nest
func.func @depthwise_phases(%dy: memref<2x4x8x8xf32>, %w: memref<4x1x3x3xf32>, %dx: memref<2x4x16x16xf32>, %dys: memref<2x16x2x2xf32>, %ws: memref<16x1x3x3xf32>, %dxs: memref<2x16x4x4xf32>) {
  kernel.launch "graph.conv_backward_input"(%dy, %w) -> (%dx) {backend = "generated", options = {dilations = array<i64: 1, 1>, group = 4 : i64, input_shape = array<i64: 2, 4, 16, 16>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>}} : (memref<2x4x8x8xf32>, memref<4x1x3x3xf32>) -> memref<2x4x16x16xf32>
  kernel.launch "graph.conv_backward_input"(%dys, %ws) -> (%dxs) {backend = "generated", options = {dilations = array<i64: 1, 1>, group = 16 : i64, input_shape = array<i64: 2, 16, 4, 4>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>}} : (memref<2x16x2x2xf32>, memref<16x1x3x3xf32>) -> memref<2x16x4x4xf32>
  return
}

// -----

// argmax: the row maxima in a scratch buffer, then the first position that
// holds the maximum (or a NaN maximum's NaN) as a min-reduction of the
// positions along the axis (10: none yet).
// CHECK-LABEL: func.func private @generated_argmax(%{{.*}}: memref<8x10xf32>, %{{.*}}: memref<8xi64>, %{{.*}}: memref<8xf32>)
// CHECK: arith.maximumf
// CHECK: arith.constant 10 : i64
// CHECK: arith.cmpf oeq
// CHECK: loop.index 1
// CHECK: arith.minsi
func.func @argmax(%x: memref<8x10xf32>, %y: memref<8xi64>) {
  kernel.launch "graph.argmax"(%x) -> (%y) {backend = "generated", options = {axis = 1 : i64, keepdims = false, select_last_index = false}} : (memref<8x10xf32>) -> memref<8xi64>
  return
}

// -----

// A slice keeping the 2x2 live taps of 3x3 weights: rows of 2 (and the
// fill of its gradient, rows of 3) run as scalar loops, not one mostly
// masked vector per row; a 1x1 centre tap keeps its vector schedule.
// CHECK-LABEL: func.func private @generated_slice(
// CHECK: domain = [8, 4, 2, 2] schedule = <parallel = -1, tile = [1, 1, 1, 1], vectorize = false>
// CHECK-LABEL: func.func private @generated_slice_0(
// CHECK: domain = [8, 4, 1, 1] schedule = <parallel = -1, tile = [1, 1, 1, 16], vectorize = true>
// CHECK-LABEL: func.func private @generated_slice_backward(
// CHECK: domain = [8, 4, 3, 3] schedule = <parallel = -1, tile = [1, 1, 1, 1], vectorize = false>
// CHECK: domain = [8, 4, 2, 2] schedule = <parallel = -1, tile = [1, 1, 1, 1], vectorize = false>
func.func @live_taps(%w: memref<8x4x3x3xf32>, %p: memref<8x4x2x2xf32>, %c: memref<8x4x1x1xf32>, %dw: memref<8x4x3x3xf32>) {
  kernel.launch "graph.slice"(%w) -> (%p) {backend = "generated", options = {ends = array<i64: 8, 4, 3, 3>, starts = array<i64: 0, 0, 1, 1>, steps = array<i64: 1, 1, 1, 1>}} : (memref<8x4x3x3xf32>) -> memref<8x4x2x2xf32>
  kernel.launch "graph.slice"(%w) -> (%c) {backend = "generated", options = {ends = array<i64: 8, 4, 2, 2>, starts = array<i64: 0, 0, 1, 1>, steps = array<i64: 1, 1, 1, 1>}} : (memref<8x4x3x3xf32>) -> memref<8x4x1x1xf32>
  kernel.launch "graph.slice_backward"(%p) -> (%dw) {backend = "generated", options = {ends = array<i64: 8, 4, 3, 3>, input_shape = array<i64: 8, 4, 3, 3>, starts = array<i64: 0, 0, 1, 1>, steps = array<i64: 1, 1, 1, 1>}} : (memref<8x4x2x2xf32>) -> memref<8x4x3x3xf32>
  return
}

// -----

// An optimizer update whose gradient is a window of the parameter
// (--trainc-window-updates): seen as [rows, taps], the parameter is
// updated by the flat nest in chunks of rows, each chunk's gradient first
// written into a scratch buffer (seen flat and as [rows, taps]: a view of
// the same alloc) with the window's taps of each row and zeros elsewhere.
// CHECK-DAG: #[[FIRST:.*]] = affine_map<(d0, d1) -> (d0, 0)>
// CHECK-DAG: #[[LAST:.*]] = affine_map<(d0, d1) -> (d0, 3)>
// CHECK-DAG: #[[THIRD_CHUNK:.*]] = affine_map<(d0) -> (d0 + 524286)>
// CHECK-LABEL: func.func @window_updates
// CHECK: %[[PADDED:.*]] = kernel.alloc : memref<288xf32>
// CHECK: %[[ROWS:.*]] = kernel.view %[[PADDED]] : memref<288xf32> to memref<32x9xf32>
// CHECK: kernel.launch "graph.sgd_update"{{.*}} scratch(%[[PADDED]], %[[ROWS]] : memref<288xf32>, memref<32x9xf32>)
// CHECK: %[[CHUNK:.*]] = kernel.alloc : memref<262143xf32>
// CHECK: kernel.view %[[CHUNK]] : memref<262143xf32> to memref<29127x9xf32>
// CHECK-LABEL: func.func private @generated_sgd_update(%{{.*}}: memref<288xf32>, %{{.*}}: memref<32x1xf32>, {{.*}}, %{{.*}}: memref<32x9xf32> {loop.view_of = 7 : i64})
// CHECK: loop.nest ins(%{{.*}} : memref<32x1xf32>) outs(%{{.*}} : memref<32x9xf32>) domain = [32, 9]
// CHECK: %[[TAP:.*]] = loop.index 1
// CHECK: %[[CENTRE:.*]] = arith.cmpi eq, %[[TAP]], %c4
// CHECK: arith.select %[[CENTRE]]
// CHECK: loop.nest {{.*}} domain = [288] schedule = <parallel = -1, tile = [64], vectorize = true>
// CHECK-NOT: loop.nest
// CHECK-LABEL: func.func private @generated_adam_update(%{{.*}}: memref<288xf32>, %{{.*}}: memref<32x4xf32>,
// CHECK: loop.nest {{.*}} domain = [32, 9]
// CHECK-SAME: indexing_maps = [#[[FIRST]], #{{.*}}, #{{.*}}, #[[LAST]], #{{.*}}]
// CHECK-COUNT-4: arith.cmpi eq, %{{.*}}, %c{{[4578]}} : index
// CHECK: loop.nest {{.*}} domain = [288]
// CHECK-NOT: loop.nest
// 589,824 elements: chunks of 29,127 rows of 9 (2^18 elements at most).
// CHECK-LABEL: func.func private @generated_sgd_update_0(
// CHECK: domain = [29127, 9]
// CHECK: domain = [262143]
// CHECK: domain = [29127, 9]
// CHECK: domain = [262143]
// CHECK: domain = [7282, 9]
// CHECK: loop.nest {{.*}} domain = [65538] {{.*}}indexing_maps = [#[[THIRD_CHUNK]],
func.func @window_updates(%w: memref<8x4x3x3xf32>, %g: memref<8x4x1x1xf32>, %lr: memref<f32>, %step: memref<i64>, %m: memref<8x4x3x3xf32>, %h: memref<8x4x2x2xf32>, %v: memref<8x4x3x3xf32>, %big: memref<1024x64x3x3xf32>, %bg: memref<1024x64x1x1xf32>) {
  kernel.launch "graph.sgd_update"(%w, %g, %lr, %step, %m) -> (%w, %m) {backend = "generated", options = {gradient_starts = array<i64: 0, 0, 1, 1>, momentum = 9.000000e-01 : f64}} : (memref<8x4x3x3xf32>, memref<8x4x1x1xf32>, memref<f32>, memref<i64>, memref<8x4x3x3xf32>) -> (memref<8x4x3x3xf32>, memref<8x4x3x3xf32>)
  kernel.launch "graph.adam_update"(%w, %h, %m, %v, %lr, %step) -> (%w, %m, %v) {backend = "generated", options = {gradient_starts = array<i64: 0, 0, 1, 1>}} : (memref<8x4x3x3xf32>, memref<8x4x2x2xf32>, memref<8x4x3x3xf32>, memref<8x4x3x3xf32>, memref<f32>, memref<i64>) -> (memref<8x4x3x3xf32>, memref<8x4x3x3xf32>, memref<8x4x3x3xf32>)
  kernel.launch "graph.sgd_update"(%big, %bg, %lr, %step) -> (%big) {backend = "generated", options = {gradient_starts = array<i64: 0, 0, 1, 1>}} : (memref<1024x64x3x3xf32>, memref<1024x64x1x1xf32>, memref<f32>, memref<i64>) -> (memref<1024x64x3x3xf32>)
  return
}

// -----

// `window_copy` (--trainc-keep-weight-copies): after each chunk's update,
// a nest over the chunk's rows copies the window's taps of the updated
// parameter (the flat output) into the last output, one operand per tap,
// parallel by rows when the update is: here neither (288 elements).
// CHECK-DAG: #[[TAP5:.*]] = affine_map<(d0) -> (d0 * 9 + 5)>
// CHECK-DAG: #[[TAP8:.*]] = affine_map<(d0) -> (d0 * 9 + 8)>
// CHECK-DAG: #[[COPY0:.*]] = affine_map<(d0) -> (d0 * 4)>
// CHECK-DAG: #[[COPY3:.*]] = affine_map<(d0) -> (d0 * 4 + 3)>
// CHECK-LABEL: func.func private @generated_sgd_update(
// CHECK-SAME: %[[PARAM:[a-z0-9]+]]: memref<288xf32>, %[[COPY:[a-z0-9]+]]: memref<128xf32>
// CHECK: loop.nest {{.*}} domain = [32, 9]
// CHECK: loop.nest {{.*}} domain = [288]
// CHECK: loop.nest ins(%[[PARAM]], %[[PARAM]], %[[PARAM]], %[[PARAM]] : {{.*}}) outs(%[[COPY]], %[[COPY]], %[[COPY]], %[[COPY]] : {{.*}}) domain = [32] schedule = <parallel = -1, tile = [{{.*}}], vectorize = false> attributes {indexing_maps = [#{{.*}}, #[[TAP5]], #{{.*}}, #[[TAP8]], #[[COPY0]], #{{.*}}, #{{.*}}, #[[COPY3]]]
// CHECK-NOT: loop.nest
func.func @window_copy(%w: memref<8x4x3x3xf32>, %g: memref<8x4x2x2xf32>, %lr: memref<f32>, %step: memref<i64>, %c: memref<8x4x2x2xf32>) {
  kernel.launch "graph.sgd_update"(%w, %g, %lr, %step) -> (%w, %c) {backend = "generated", options = {gradient_starts = array<i64: 0, 0, 1, 1>, window_copy = true}} : (memref<8x4x3x3xf32>, memref<8x4x2x2xf32>, memref<f32>, memref<i64>) -> (memref<8x4x3x3xf32>, memref<8x4x2x2xf32>)
  return
}

// -----

// A batch norm over planes smaller than a vector (2x2): its passes run
// over [N, C * P] (whole vectors along C * P), a channel's sums (of the
// elements and of their squares, f64, one pass) over N per position then
// over its positions ([C, P]), the per-channel values expanded to [C * P]
// first; below 2^17 elements on one thread.
// CHECK-LABEL: func.func private @generated_batch_norm_training(
// CHECK-SAME: memref<32x1024xf32>
// CHECK: loop.nest ins(%{{.*}} : memref<32x1024xf32>) outs(%{{.*}}, %{{.*}} : memref<1024xf64>, memref<1024xf64>) domain = [32, 1024] schedule = <parallel = -1
// CHECK: loop.nest ins(%{{.*}}, %{{.*}} : memref<256x4xf64>, memref<256x4xf64>) outs(%{{.*}}, %{{.*}} : memref<256xf64>, memref<256xf64>) domain = [256, 4]
// CHECK-NOT: memref<1024xf64>) domain = [32, 1024]
// CHECK: outs(%{{.*}}, %{{.*}}, %{{.*}} : memref<256x4xf32>, memref<256x4xf32>, memref<256x4xf32>) domain = [256, 4]
// CHECK: loop.nest ins(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : memref<32x1024xf32>, memref<1024xf32>, memref<1024xf32>, memref<1024xf32>) outs(%{{.*}} : memref<32x1024xf32>) domain = [32, 1024] schedule = <parallel = -1
// The gradient's sums, sum(dy) and sum(dy * normalized), in f64 as its
// statistics (PyTorch sums them in double across the batch), rounded to
// f32 per channel before the pass that computes dx.
// CHECK-LABEL: func.func private @generated_batch_norm_training_backward(
// CHECK: loop.nest ins(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : memref<32x1024xf32>, memref<32x1024xf32>, memref<1024xf32>, memref<1024xf32>) outs(%{{.*}}, %{{.*}} : memref<1024xf64>, memref<1024xf64>) domain = [32, 1024]
// CHECK: loop.nest ins(%{{.*}}, %{{.*}} : memref<256x4xf64>, memref<256x4xf64>) outs(%{{.*}}, %{{.*}} : memref<256xf64>, memref<256xf64>) domain = [256, 4]
// CHECK: loop.nest ins(%{{.*}}, %{{.*}} : memref<256xf64>, memref<256xf64>) outs(%{{.*}}, %{{.*}} : memref<256xf32>, memref<256xf32>) domain = [256]
// CHECK: loop.nest ins(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : memref<32x1024xf32>, {{.*}}) outs(%{{.*}} : memref<32x1024xf32>) domain = [32, 1024]
// The same over 128x256x2x2 (2^17 elements): on both threads.
// CHECK-LABEL: func.func private @generated_batch_norm_training_0(
// CHECK: domain = [128, 1024] schedule = <parallel = 1
func.func @small_planes(%x: memref<32x256x2x2xf32>, %c: memref<256xf32>, %y: memref<32x256x2x2xf32>, %m: memref<256xf32>, %v: memref<256xf32>, %dx: memref<32x256x2x2xf32>, %big: memref<128x256x2x2xf32>, %ybig: memref<128x256x2x2xf32>) {
  kernel.launch "graph.batch_norm_training"(%x, %c, %c, %c, %c) -> (%y, %m, %v) {backend = "generated", options = {epsilon = 1.0e-05 : f64, momentum = 0.9 : f64}} : (memref<32x256x2x2xf32>, memref<256xf32>, memref<256xf32>, memref<256xf32>, memref<256xf32>) -> (memref<32x256x2x2xf32>, memref<256xf32>, memref<256xf32>)
  kernel.launch "graph.batch_norm_training_backward"(%y, %x, %c) -> (%dx, %m, %v) {backend = "generated", options = {epsilon = 1.0e-05 : f64}} : (memref<32x256x2x2xf32>, memref<32x256x2x2xf32>, memref<256xf32>) -> (memref<32x256x2x2xf32>, memref<256xf32>, memref<256xf32>)
  kernel.launch "graph.batch_norm_training"(%big, %c, %c, %c, %c) -> (%ybig, %m, %v) {backend = "generated", options = {epsilon = 1.0e-05 : f64, momentum = 0.9 : f64}} : (memref<128x256x2x2xf32>, memref<256xf32>, memref<256xf32>, memref<256xf32>, memref<256xf32>) -> (memref<128x256x2x2xf32>, memref<256xf32>, memref<256xf32>)
  return
}

// -----

// A slice with `perm` (--trainc-fold-slice-transposes): a nest over the
// output's dims, the input seen as `source_shape` and read at the window's
// start, permuted; rows of one vector, one at a time.
// CHECK-DAG: #[[WINDOW:.*]] = affine_map<(d0, d1, d2, d3) -> (d2, d0, d1 + 4, d3)>
// CHECK-LABEL: func.func private @generated_slice
// CHECK-SAME: (%[[IN:.*]]: memref<64x16x12x32xf32>, %[[OUT:.*]]: memref<16x4x64x32xf32>)
// CHECK: loop.nest ins(%[[IN]] : memref<64x16x12x32xf32>) outs(%[[OUT]] : memref<16x4x64x32xf32>) domain = [16, 4, 64, 32] schedule = <parallel = 0, tile = [1, 1, 1, 32], vectorize = true> attributes {indexing_maps = [#[[WINDOW]],
func.func @permuted_slice(%y: memref<64x16x384xf32>, %k: memref<64x64x32xf32>) {
  kernel.launch "graph.slice"(%y) -> (%k) {backend = "generated", options = {ends = array<i64: 64, 16, 8, 32>, perm = array<i64: 1, 2, 0, 3>, source_shape = array<i64: 64, 16, 12, 32>, starts = array<i64: 0, 0, 4, 0>, steps = array<i64: 1, 1, 1, 1>}} : (memref<64x16x384xf32>) -> memref<64x64x32xf32>
  return
}

// -----

// Head transposes keeping rows of at most 2 vectors: over 3 dims in blocks
// of 4 input rows x 2 output rows; over 4 dims a row at a time (the blocks
// ran 2-3x slower there).
// CHECK-LABEL: func.func private @generated_transpose(
// CHECK: domain = [64, 64, 32] schedule = <parallel = 0, tile = [4, 2, 32], vectorize = true>
// CHECK-LABEL: func.func private @generated_transpose_0(
// CHECK: domain = [16, 4, 64, 32] schedule = <parallel = 0, tile = [1, 1, 1, 32], vectorize = true>
func.func @head_transposes(%x: memref<64x64x32xf32>, %y: memref<64x64x32xf32>, %a: memref<16x64x4x32xf32>, %b: memref<16x4x64x32xf32>) {
  kernel.launch "graph.transpose"(%x) -> (%y) {backend = "generated", options = {perm = array<i64: 1, 0, 2>}} : (memref<64x64x32xf32>) -> memref<64x64x32xf32>
  kernel.launch "graph.transpose"(%a) -> (%b) {backend = "generated", options = {perm = array<i64: 0, 2, 1, 3>}} : (memref<16x64x4x32xf32>) -> memref<16x4x64x32xf32>
  return
}

// -----

// A depthwise weight gradient over rows of 28 (MobileNet's at 224 px):
// the row of sums is a power of two of whole vectors, 32 (LLVM keeps a
// vector of 28 across the loops in scalars). The nests run over rows of
// 32, reading dy past a row's end as a wrapping input too (channels 0 and
// C-1 from copies of both, between slack planes); the sums past 28 are
// never read. With AVX2, 4 vectors of sums per tap are too many for the
// registers: the sums are whole, one per tap.
// CHECK-LABEL: func.func private @generated_conv_backward_weight(
// CHECK-SAME: %[[DY:[^:]+]]: memref<2x4x3x28xf32>, %[[X:[^:]+]]: memref<2x4x3x28xf32>, %[[DW:[^:]+]]: memref<4x3x3xf32>, %[[ROWS:[^:]+]]: memref<4x3x3x32xf32> {llvm.noalias}, %[[E:[^:]+]]: memref<2x4x3x28xf32>, %[[EDY:[^:]+]]: memref<2x4x3x28xf32>)
// CHECK: loop.nest ins(%[[DY]], %[[X]], {{.*}}) outs(%[[ROWS]], {{.*}}) domain = [2, 2, 3, 32] schedule = <parallel = -1, tile = [1, 1, 1, 32], vectorize = true> attributes {{{.*}}wrapping_inputs = array<i64: 0, 1, 2, 3, 4, 5, 6, 7, 8, 9>}
// CHECK: loop.nest ins(%[[X]] : memref<2x4x3x28xf32>) outs(%[[E]] : memref<2x4x3x28xf32>)
// CHECK: loop.nest ins(%[[DY]] : memref<2x4x3x28xf32>) outs(%[[EDY]] : memref<2x4x3x28xf32>)
// CHECK: loop.nest ins(%[[EDY]], %[[E]], {{.*}}) outs(%[[ROWS]], {{.*}}) domain = [2, 2, 3, 32] {{.*}}wrapping_inputs = array<i64: 0, 1, 2, 3, 4, 5, 6, 7, 8, 9>}
// CHECK: loop.nest ins(%[[ROWS]] : memref<4x3x3x32xf32>) outs(%[[DW]] : memref<4x3x3xf32>) domain = [4, 3, 3, 28] {{.*}}iterators = ["parallel", "parallel", "parallel", "reduction"]
// AVX2-LABEL: func.func private @generated_conv_backward_weight(%{{[^:]+}}: memref<2x4x3x28xf32>,
// AVX2-SAME: %[[X:[^:]+]]: memref<2x4x3x28xf32>, %[[DW:[^:]+]]: memref<4x3x3xf32>, %[[E:[^:]+]]: memref<2x4x3x28xf32>)
// AVX2: loop.nest ins(%{{[^,]+}}, %[[X]], {{.*}}) outs(%[[DW]], {{.*}}) domain = [2, 2, 3, 28] {{.*}}iterators = ["parallel", "reduction", "reduction", "reduction"], wrapping_inputs = array<i64: 1, 2, 3, 4, 5, 6, 7, 8, 9>}
func.func @depthwise_weight_gradient_rows_of_28(%dy: memref<2x4x3x28xf32>, %x: memref<2x4x3x28xf32>, %dw: memref<4x1x3x3xf32>) {
  kernel.launch "graph.conv_backward_weight"(%dy, %x) -> (%dw) {backend = "generated", options = {dilations = array<i64: 1, 1>, group = 4 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>, weight_shape = array<i64: 4, 1, 3, 3>}} : (memref<2x4x3x28xf32>, memref<2x4x3x28xf32>) -> memref<4x1x3x3xf32>
  return
}
