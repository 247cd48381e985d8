// --trainc-fuse-elementwise: a generated elementwise kernel whose output
// feeds the next one runs inside it; the intermediate buffer goes when
// nothing else reads it, else the fused kernel writes it too.
// RUN: trainc-opt %s --trainc-kernel-to-loop --trainc-fuse-elementwise -split-input-file | FileCheck %s
// The fused nest is scheduled for the target's vectors (vector-lanes; 16 by
// default, 8 on AVX2):
// RUN: trainc-opt %s --trainc-kernel-to-loop="vector-lanes=8" --trainc-fuse-elementwise="vector-lanes=8" -split-input-file | FileCheck %s --check-prefix=AVX2
// AVX2-LABEL: func.func private @generated_fused
// AVX2-LABEL: func.func private @generated_fused
// AVX2: domain = [2, 3, 4] schedule = <parallel = -1, tile = [1, 1, 8], vectorize = true>

// A ReLU's gradient: where(x > 0, dy, 0), one nest, no mask buffer; the
// zero both read is one operand.
// CHECK-LABEL: func.func @relu_gradient
// CHECK-SAME: (%[[X:.*]]: memref<4x8xf32>, %[[DY:.*]]: memref<4x8xf32>, %[[DX:.*]]: memref<4x8xf32>)
// CHECK-NOT: kernel.alloc
// CHECK: kernel.launch "fused(greater,where)"(%[[X]], %[[ZERO:.*]], %[[DY]]) -> (%[[DX]]) {backend = "generated", callee = @[[K:.*]], options = {}}
// CHECK-NOT: kernel.launch
// CHECK: func.func private @[[K]](%{{.*}}: memref<32xf32>, %{{.*}}: memref<f32>, %{{.*}}: memref<32xf32>, %{{.*}}: memref<32xf32>) attributes {loop.kernel}
// CHECK: loop.nest ins({{.*}}) outs({{.*}}) domain = [32]
// CHECK: ^bb0(%[[XV:.*]]: f32, %[[Z:.*]]: f32, %[[DYV:.*]]: f32, %{{.*}}: f32):
// CHECK: %[[M:.*]] = arith.cmpf ogt, %[[XV]], %[[Z]] : f32
// CHECK: %[[R:.*]] = arith.select %[[M]], %[[DYV]], %[[Z]] : f32
// CHECK: loop.yield %[[R]] : f32
func.func @relu_gradient(%x: memref<4x8xf32>, %dy: memref<4x8xf32>, %dx: memref<4x8xf32>) {
  %zero = kernel.constant dense<0.0> : tensor<f32> : memref<f32>
  %mask = kernel.alloc : memref<4x8xi1>
  kernel.launch "graph.greater"(%x, %zero) -> (%mask) {backend = "generated", options = {}} : (memref<4x8xf32>, memref<f32>) -> memref<4x8xi1>
  kernel.launch "graph.where"(%mask, %dy, %zero) -> (%dx) {backend = "generated", options = {}} : (memref<4x8xi1>, memref<4x8xf32>, memref<f32>) -> memref<4x8xf32>
  return
}

// -----

// A bias add over [N, C, HW] (domain not collapsible) feeding a ReLU (one
// flat domain): the fused nest takes the bias add's domain and sees the
// ReLU's output in it.
// CHECK-LABEL: func.func @bias_relu
// CHECK: kernel.launch "fused(add,relu)"
// CHECK: func.func private @{{.*}}(%{{.*}}: memref<2x3x4xf32>, %{{.*}}: memref<3xf32>, %{{.*}}: memref<2x3x4xf32>)
// CHECK: domain = [2, 3, 4]
func.func @bias_relu(%x: memref<2x3x4xf32>, %b: memref<3x1xf32>, %y: memref<2x3x4xf32>) {
  %s = kernel.alloc : memref<2x3x4xf32>
  kernel.launch "graph.add"(%x, %b) -> (%s) {backend = "generated", options = {}} : (memref<2x3x4xf32>, memref<3x1xf32>) -> memref<2x3x4xf32>
  kernel.launch "graph.relu"(%s) -> (%y) {backend = "generated", options = {}} : (memref<2x3x4xf32>) -> memref<2x3x4xf32>
  return
}

// -----

// The intermediate has a later reader: the fused kernel writes it as well
// as the consumer's result. The reduction is not fused.
// CHECK-LABEL: func.func @kept
// CHECK-SAME: (%[[X:.*]]: memref<16xf32>, %[[Y:.*]]: memref<16xf32>, %[[Z:.*]]: memref<f32>)
// CHECK: %[[E:.*]] = kernel.alloc : memref<16xf32>
// CHECK: kernel.launch "fused(exp,neg)"(%[[X]]) -> (%[[E]], %[[Y]])
// CHECK: kernel.launch "graph.reduce_sum"(%[[E]]) -> (%[[Z]])
// CHECK: func.func private @{{.*}}(%{{.*}}: memref<16xf32>, %{{.*}}: memref<16xf32>, %{{.*}}: memref<16xf32>)
// CHECK: ^bb0(%[[XV:.*]]: f32, %{{.*}}: f32, %{{.*}}: f32):
// CHECK: %[[EV:.*]] = math.exp %[[XV]] : f32
// CHECK: %[[NV:.*]] = arith.negf %[[EV]] : f32
// CHECK: loop.yield %[[EV]], %[[NV]] : f32, f32
func.func @kept(%x: memref<16xf32>, %y: memref<16xf32>, %z: memref<f32>) {
  %e = kernel.alloc : memref<16xf32>
  kernel.launch "graph.exp"(%x) -> (%e) {backend = "generated", options = {}} : (memref<16xf32>) -> memref<16xf32>
  kernel.launch "graph.neg"(%e) -> (%y) {backend = "generated", options = {}} : (memref<16xf32>) -> memref<16xf32>
  kernel.launch "graph.reduce_sum"(%e) -> (%z) {backend = "generated", options = {axes = array<i64: 0>, keepdims = false}} : (memref<16xf32>) -> memref<f32>
  return
}

// -----

// GELU's forward as exported by PyTorch (opset < 20): h = x + b,
// y = h * (erf(h / sqrt 2) + 1) * 0.5, with h and erf + 1 kept for the
// backward pass. One kernel writes h, erf + 1 and y.
// CHECK-LABEL: func.func @gelu_chain
// CHECK-SAME: (%[[X:.*]]: memref<4x8xf32>, %[[B:.*]]: memref<8xf32>, %{{.*}}: memref<f32>, %{{.*}}: memref<f32>, %{{.*}}: memref<f32>, %[[Y:.*]]: memref<4x8xf32>, %[[H2:.*]]: memref<4x8xf32>, %[[E2:.*]]: memref<4x8xf32>)
// CHECK: %[[H:.*]] = kernel.alloc : memref<4x8xf32>
// CHECK: %[[E:.*]] = kernel.alloc : memref<4x8xf32>
// CHECK-NOT: kernel.alloc
// CHECK: kernel.launch "fused(add,div,erf,add,mul,mul)"(%[[X]], %[[B]], {{.*}}) -> (%[[H]], %[[E]], %[[Y]])
// CHECK-NEXT: kernel.launch "graph.neg"(%[[H]]) -> (%[[H2]])
// CHECK-NEXT: kernel.launch "graph.neg"(%[[E]]) -> (%[[E2]])
func.func @gelu_chain(%x: memref<4x8xf32>, %b: memref<8xf32>, %sqrt2: memref<f32>, %one: memref<f32>, %half: memref<f32>, %y: memref<4x8xf32>, %h2: memref<4x8xf32>, %e2: memref<4x8xf32>) {
  %h = kernel.alloc : memref<4x8xf32>
  kernel.launch "graph.add"(%x, %b) -> (%h) {backend = "generated", options = {}} : (memref<4x8xf32>, memref<8xf32>) -> memref<4x8xf32>
  %s = kernel.alloc : memref<4x8xf32>
  kernel.launch "graph.div"(%h, %sqrt2) -> (%s) {backend = "generated", options = {}} : (memref<4x8xf32>, memref<f32>) -> memref<4x8xf32>
  %r = kernel.alloc : memref<4x8xf32>
  kernel.launch "graph.erf"(%s) -> (%r) {backend = "generated", options = {}} : (memref<4x8xf32>) -> memref<4x8xf32>
  %e = kernel.alloc : memref<4x8xf32>
  kernel.launch "graph.add"(%r, %one) -> (%e) {backend = "generated", options = {}} : (memref<4x8xf32>, memref<f32>) -> memref<4x8xf32>
  %m = kernel.alloc : memref<4x8xf32>
  kernel.launch "graph.mul"(%h, %e) -> (%m) {backend = "generated", options = {}} : (memref<4x8xf32>, memref<4x8xf32>) -> memref<4x8xf32>
  kernel.launch "graph.mul"(%m, %half) -> (%y) {backend = "generated", options = {}} : (memref<4x8xf32>, memref<f32>) -> memref<4x8xf32>
  kernel.launch "graph.neg"(%h) -> (%h2) {backend = "generated", options = {}} : (memref<4x8xf32>) -> memref<4x8xf32>
  kernel.launch "graph.neg"(%e) -> (%e2) {backend = "generated", options = {}} : (memref<4x8xf32>) -> memref<4x8xf32>
  return
}

// -----

// A fused producer whose outputs include a buffer that launches before it
// read (GELU's gradient overwrites the forward's saved value in place):
// those reads are unaffected, so its consumer still fuses with it. A reader
// between the two launches would stop it (@not_fused below).
// CHECK-LABEL: func.func @read_before_producer
// CHECK-SAME: (%[[X:.*]]: memref<16xf32>, %[[S:.*]]: memref<16xf32>, %[[Y:.*]]: memref<16xf32>, %[[Z:.*]]: memref<16xf32>)
// CHECK: kernel.launch "graph.neg"(%[[B:.*]]) -> (%[[Y]])
// CHECK-NEXT: kernel.launch "fused(mul,neg,exp)"(%[[B]], %[[X]]) -> (%[[B]], %[[Z]])
// CHECK-NOT: kernel.launch
func.func @read_before_producer(%x: memref<16xf32>, %s: memref<16xf32>, %y: memref<16xf32>, %z: memref<16xf32>) {
  %b = kernel.alloc : memref<16xf32>
  kernel.launch "graph.neg"(%b) -> (%y) {backend = "generated", options = {}} : (memref<16xf32>) -> memref<16xf32>
  %t = kernel.alloc : memref<16xf32>
  kernel.launch "graph.mul"(%b, %x) -> (%t) {backend = "generated", options = {}} : (memref<16xf32>, memref<16xf32>) -> memref<16xf32>
  kernel.launch "graph.neg"(%t) -> (%b) {backend = "generated", options = {}} : (memref<16xf32>) -> memref<16xf32>
  kernel.launch "graph.exp"(%t) -> (%z) {backend = "generated", options = {}} : (memref<16xf32>) -> memref<16xf32>
  return
}

// -----

// Not fused: the intermediate is read between the two launches (the fused
// kernel would write it too late), and a reduction consumer.
// CHECK-LABEL: func.func @not_fused
// CHECK: kernel.launch "graph.exp"
// CHECK: kernel.launch "graph.reduce_sum"
// CHECK: kernel.launch "graph.neg"
func.func @not_fused(%x: memref<16xf32>, %y: memref<16xf32>, %z: memref<f32>) {
  %e = kernel.alloc : memref<16xf32>
  kernel.launch "graph.exp"(%x) -> (%e) {backend = "generated", options = {}} : (memref<16xf32>) -> memref<16xf32>
  kernel.launch "graph.reduce_sum"(%e) -> (%z) {backend = "generated", options = {axes = array<i64: 0>, keepdims = false}} : (memref<16xf32>) -> memref<f32>
  kernel.launch "graph.neg"(%e) -> (%y) {backend = "generated", options = {}} : (memref<16xf32>) -> memref<16xf32>
  return
}

// -----

// An elementwise producer read only by a reduction (softmax's gradient,
// sum(g * y) per row): the reducing nest computes the product, the fill
// stays, and g * y is never stored.
// CHECK-LABEL: func.func @reduce_of_product
// CHECK-SAME: (%[[G:.*]]: memref<4x8xf32>, %[[Y:.*]]: memref<4x8xf32>, %[[S:.*]]: memref<4x1xf32>)
// CHECK-NOT: kernel.alloc
// CHECK: kernel.launch "fused(mul,reduce_sum)"(%[[G]], %[[Y]]) -> (%[[S]]) {backend = "generated", callee = @[[K:.*]], options = {axes = array<i64: 1>, keepdims = true}}
// CHECK-NOT: kernel.launch
// CHECK: func.func private @[[K]](%[[GA:.*]]: memref<4x8xf32>, %[[YA:.*]]: memref<4x8xf32>, %[[SA:.*]]: memref<4xf32>) attributes {loop.kernel}
// CHECK: loop.nest outs(%[[SA]] : memref<4xf32>)
// CHECK: arith.constant 0.0
// CHECK: loop.nest ins(%[[GA]], %[[YA]] : {{.*}}) outs(%[[SA]] : memref<4xf32>) domain = [4, 8]
// CHECK-SAME: iterators = ["parallel", "reduction"]
// CHECK: ^bb0(%[[GV:.*]]: f32, %[[YV:.*]]: f32, %[[ACC:.*]]: f32):
// CHECK: %[[P:.*]] = arith.mulf %[[GV]], %[[YV]] : f32
// CHECK: arith.addf %[[ACC]], %[[P]] : f32
func.func @reduce_of_product(%g: memref<4x8xf32>, %y: memref<4x8xf32>, %s: memref<4x1xf32>) {
  %gy = kernel.alloc : memref<4x8xf32>
  kernel.launch "graph.mul"(%g, %y) -> (%gy) {backend = "generated", options = {}} : (memref<4x8xf32>, memref<4x8xf32>) -> memref<4x8xf32>
  kernel.launch "graph.reduce_sum"(%gy) -> (%s) {backend = "generated", options = {axes = array<i64: 1>, keepdims = true}} : (memref<4x8xf32>) -> memref<4x1xf32>
  return
}

// -----

// Not into a reduction: the product is read again later (it would have to
// be written inside the reducing nest).
// CHECK-LABEL: func.func @reduce_of_kept_product
// CHECK: kernel.launch "graph.mul"
// CHECK: kernel.launch "graph.reduce_sum"
func.func @reduce_of_kept_product(%g: memref<4x8xf32>, %y: memref<4x8xf32>, %s: memref<4x1xf32>, %c: memref<4x8xf32>) {
  %gy = kernel.alloc : memref<4x8xf32>
  kernel.launch "graph.mul"(%g, %y) -> (%gy) {backend = "generated", options = {}} : (memref<4x8xf32>, memref<4x8xf32>) -> memref<4x8xf32>
  kernel.launch "graph.reduce_sum"(%gy) -> (%s) {backend = "generated", options = {axes = array<i64: 1>, keepdims = true}} : (memref<4x8xf32>) -> memref<4x1xf32>
  kernel.launch "runtime.copy"(%gy) -> (%c) {backend = "generated", options = {}} : (memref<4x8xf32>) -> memref<4x8xf32>
  return
}

// -----

// A widening cast read by two launches (softmax's gradient under --amp bf16:
// sum(g * y) per row, then y * (g - sum)): each reader computes the cast
// again from the bf16 gradient, so the product fuses into the reduction
// and the f32 copy of g is never stored.
// CHECK-LABEL: func.func @widening_cast_read_twice
// CHECK-SAME: (%[[G:.*]]: memref<4x8xbf16>, %[[Y:.*]]: memref<4x8xf32>, %[[D:.*]]: memref<4x8xbf16>)
// CHECK: kernel.launch "fused(cast,mul,reduce_sum)"(%[[G]], %[[Y]]) -> (%[[S:[0-9a-z_]+]])
// CHECK-NEXT: kernel.launch "fused(cast,sub,mul,cast)"(%[[G]], %[[S]], %[[Y]]) -> (%[[D]])
// CHECK-NOT: kernel.launch
func.func @widening_cast_read_twice(%g: memref<4x8xbf16>, %y: memref<4x8xf32>, %d: memref<4x8xbf16>) {
  %g32 = kernel.alloc : memref<4x8xf32>
  kernel.launch "graph.cast"(%g) -> (%g32) {backend = "generated", options = {to = f32}} : (memref<4x8xbf16>) -> memref<4x8xf32>
  %gy = kernel.alloc : memref<4x8xf32>
  kernel.launch "graph.mul"(%g32, %y) -> (%gy) {backend = "generated", options = {}} : (memref<4x8xf32>, memref<4x8xf32>) -> memref<4x8xf32>
  %s = kernel.alloc : memref<4x1xf32>
  kernel.launch "graph.reduce_sum"(%gy) -> (%s) {backend = "generated", options = {axes = array<i64: 1>, keepdims = true}} : (memref<4x8xf32>) -> memref<4x1xf32>
  %t = kernel.alloc : memref<4x8xf32>
  kernel.launch "graph.sub"(%g32, %s) -> (%t) {backend = "generated", options = {}} : (memref<4x8xf32>, memref<4x1xf32>) -> memref<4x8xf32>
  %u = kernel.alloc : memref<4x8xf32>
  kernel.launch "graph.mul"(%t, %y) -> (%u) {backend = "generated", options = {}} : (memref<4x8xf32>, memref<4x8xf32>) -> memref<4x8xf32>
  kernel.launch "graph.cast"(%u) -> (%d) {backend = "generated", options = {to = bf16}} : (memref<4x8xf32>) -> memref<4x8xbf16>
  return
}

// -----

// A widening cast that a library launch reads too stays for it; the
// elementwise reader computes it again and no f32 copy is written twice.
// CHECK-LABEL: func.func @widening_cast_kept_for_library
// CHECK: kernel.launch "graph.cast"(%[[G:[0-9a-z_]+]]) -> (%[[G32:[0-9a-z_]+]])
// CHECK-NEXT: kernel.launch "fused(cast,neg)"(%[[G]]) -> (%{{.*}})
// CHECK-NEXT: kernel.launch "graph.matmul"(%[[G32]]
func.func @widening_cast_kept_for_library(%g: memref<4x4xbf16>, %n: memref<4x4xf32>, %m: memref<4x4xf32>) {
  %g32 = kernel.alloc : memref<4x4xf32>
  kernel.launch "graph.cast"(%g) -> (%g32) {backend = "generated", options = {to = f32}} : (memref<4x4xbf16>) -> memref<4x4xf32>
  kernel.launch "graph.neg"(%g32) -> (%n) {backend = "generated", options = {}} : (memref<4x4xf32>) -> memref<4x4xf32>
  kernel.launch "graph.matmul"(%g32, %g32) -> (%m) {backend = "dnnl", options = {}} : (memref<4x4xf32>, memref<4x4xf32>) -> memref<4x4xf32>
  return
}

// -----

// A widening cast read only by a kernel of several nests that read it
// (softmax: the row maximum, then the exponentials): each of them widens
// the bf16 input itself, and the launch keeps its scratch buffers.
// CHECK-LABEL: func.func @softmax_of_widened
// CHECK-SAME: (%[[X:.*]]: memref<4x16xbf16>, %[[Y:.*]]: memref<4x16xf32>)
// CHECK-NOT: kernel.launch "graph.cast"
// CHECK: kernel.launch "fused(cast,softmax)"(%[[X]]) -> (%[[Y]]) scratch(
// CHECK-NOT: kernel.launch
// CHECK: func.func private @[[K:.*]](%[[XA:.*]]: memref<4x16xbf16>, %{{.*}}: memref<4x16xf32>, %{{.*}}: memref<4xf32>, %{{.*}}: memref<4xf32>) attributes {loop.kernel}
// CHECK: loop.nest ins(%[[XA]] : memref<4x16xbf16>)
// CHECK: arith.extf
// CHECK: arith.maximumf
// CHECK: loop.nest ins(%[[XA]], %{{.*}} : memref<4x16xbf16>, memref<4xf32>)
// CHECK: arith.extf
// CHECK: math.exp
func.func @softmax_of_widened(%x: memref<4x16xbf16>, %y: memref<4x16xf32>) {
  %x32 = kernel.alloc : memref<4x16xf32>
  kernel.launch "graph.cast"(%x) -> (%x32) {backend = "generated", options = {to = f32}} : (memref<4x16xbf16>) -> memref<4x16xf32>
  kernel.launch "graph.softmax"(%x32) -> (%y) {backend = "generated", options = {axis = 1 : i64}} : (memref<4x16xf32>) -> memref<4x16xf32>
  return
}

// -----

// Not fused: a producer other than a widening cast, which two of the
// softmax's nests read (it would be computed twice).
// CHECK-LABEL: func.func @softmax_of_scaled
// CHECK: kernel.launch "graph.mul"
// CHECK: kernel.launch "graph.softmax"
func.func @softmax_of_scaled(%x: memref<4x16xf32>, %c: memref<f32>, %y: memref<4x16xf32>) {
  %t = kernel.alloc : memref<4x16xf32>
  kernel.launch "graph.mul"(%x, %c) -> (%t) {backend = "generated", options = {}} : (memref<4x16xf32>, memref<f32>) -> memref<4x16xf32>
  kernel.launch "graph.softmax"(%t) -> (%y) {backend = "generated", options = {axis = 1 : i64}} : (memref<4x16xf32>) -> memref<4x16xf32>
  return
}

// -----

// Not a slice from the start of each axis (a ViT class token's gradient,
// issue 26): its nest reads the larger buffer with an identity map over
// the slice's domain, which is not the whole buffer, so it cannot be
// viewed in the reduction's domain (that read the first 20 floats of
// 4x4x5: batch element 0's share, and others' tokens, not each element's).
// CHECK-LABEL: func.func @reduce_of_leading_slice
// CHECK: kernel.launch "graph.slice"
// CHECK: kernel.launch "graph.reduce_sum"
func.func @reduce_of_leading_slice(%g: memref<4x4x5xf32>, %s: memref<1x1x5xf32>) {
  %t = kernel.alloc : memref<4x1x5xf32>
  kernel.launch "graph.slice"(%g) -> (%t) {backend = "generated", options = {ends = array<i64: 4, 1, 5>, starts = array<i64: 0, 0, 0>, steps = array<i64: 1, 1, 1>}} : (memref<4x4x5xf32>) -> memref<4x1x5xf32>
  kernel.launch "graph.reduce_sum"(%t) -> (%s) {backend = "generated", options = {axes = array<i64: 0>, keepdims = true}} : (memref<4x1x5xf32>) -> memref<1x1x5xf32>
  return
}

// -----

// Nor into an elementwise consumer over another domain of as many points.
// CHECK-LABEL: func.func @relu_of_leading_slice
// CHECK: kernel.launch "graph.slice"
// CHECK: kernel.launch "graph.relu"
func.func @relu_of_leading_slice(%g: memref<4x4x5xf32>, %r: memref<20xf32>) {
  %t = kernel.alloc : memref<4x1x5xf32>
  kernel.launch "graph.slice"(%g) -> (%t) {backend = "generated", options = {ends = array<i64: 4, 1, 5>, starts = array<i64: 0, 0, 0>, steps = array<i64: 1, 1, 1>}} : (memref<4x4x5xf32>) -> memref<4x1x5xf32>
  %v = kernel.view %t : memref<4x1x5xf32> to memref<20xf32>
  kernel.launch "graph.relu"(%v) -> (%r) {backend = "generated", options = {}} : (memref<20xf32>) -> memref<20xf32>
  return
}

// -----

// A one-element slice feeding a kernel over no dimensions (its unit dims
// dropped; found by test/difftest, seed 72): the fused nest runs over the
// slice's domain [1] and writes the scalar as a one-element view, not as a
// value broadcast over the domain (which could not be vectorized).
// CHECK-LABEL: func.func @tanh_of_last_element
// CHECK: kernel.launch "fused(slice,tanh)"
// CHECK: func.func private @{{.*}}(%{{.*}}: memref<5xf32>, %[[Y:.*]]: memref<1xf32>)
// CHECK: loop.nest ins(%{{.*}} : memref<5xf32>) outs(%[[Y]] : memref<1xf32>) domain = [1]
// RUN: trainc-opt %s --trainc-kernel-to-loop --trainc-fuse-elementwise -split-input-file \
// RUN:   | trainc-opt --trainc-loop-to-llvm -split-input-file > /dev/null
func.func @tanh_of_last_element(%x: memref<5xf32>, %y: memref<1xf32>) {
  %s = kernel.alloc : memref<1xf32>
  kernel.launch "graph.slice"(%x) -> (%s) {backend = "generated", options = {ends = array<i64: 5>, starts = array<i64: 4>, steps = array<i64: 1>}} : (memref<5xf32>) -> memref<1xf32>
  kernel.launch "graph.tanh"(%s) -> (%y) {backend = "generated", options = {}} : (memref<1xf32>) -> memref<1xf32>
  return
}

// -----

// An optimizer update writes its parameter in place and the next launch
// casts the parameter into its low-precision copy
// (--trainc-keep-weight-copies): one kernel updates the weight and its
// momentum and writes the copy of the new weight. With a launch between
// them (the next case) nothing is fused.
// CHECK-LABEL: func.func @update_then_copy
// CHECK-SAME: (%[[W:.*]]: memref<64xf32>, %[[G:.*]]: memref<64xf32>, %[[M:.*]]: memref<64xf32>, %[[LR:.*]]: memref<f32>, %[[S:.*]]: memref<i64>, %[[C:.*]]: memref<64xbf16>)
// CHECK-NEXT: kernel.launch "fused(sgd_update,cast)"(%[[W]], %[[G]], %[[LR]], %[[S]], %[[M]]) -> (%[[W]], %[[M]], %[[C]])
// CHECK-NEXT: return
// CHECK: func.func private @{{.*}}(%{{.*}}: memref<64xf32>, %{{.*}}: memref<64xf32>, %{{.*}}: memref<f32>, %{{.*}}: memref<i64>, %{{.*}}: memref<64xf32>, %{{.*}}: memref<64xf32>, %{{.*}}: memref<64xf32>, %{{.*}}: memref<64xbf16>)
// CHECK: arith.truncf
// CHECK: loop.yield %[[NW:[0-9a-z]+]], %{{.*}}, %{{.*}} : f32, f32, bf16
func.func @update_then_copy(%w: memref<64xf32>, %g: memref<64xf32>, %m: memref<64xf32>, %lr: memref<f32>, %step: memref<i64>, %c: memref<64xbf16>) {
  kernel.launch "graph.sgd_update"(%w, %g, %lr, %step, %m) -> (%w, %m) {backend = "generated", options = {momentum = 9.000000e-01 : f64}} : (memref<64xf32>, memref<64xf32>, memref<f32>, memref<i64>, memref<64xf32>) -> (memref<64xf32>, memref<64xf32>)
  kernel.launch "graph.cast"(%w) -> (%c) {backend = "generated", options = {to = bf16}} : (memref<64xf32>) -> memref<64xbf16>
  return
}

// -----

// CHECK-LABEL: func.func @update_then_read_then_copy
// CHECK: kernel.launch "graph.sgd_update"
// CHECK: kernel.launch "graph.neg"
// CHECK: kernel.launch "graph.cast"
func.func @update_then_read_then_copy(%w: memref<64xf32>, %g: memref<64xf32>, %lr: memref<f32>, %step: memref<i64>, %n: memref<64xf32>, %c: memref<64xbf16>) {
  kernel.launch "graph.sgd_update"(%w, %g, %lr, %step) -> (%w) {backend = "generated", options = {}} : (memref<64xf32>, memref<64xf32>, memref<f32>, memref<i64>) -> memref<64xf32>
  kernel.launch "graph.neg"(%g) -> (%n) {backend = "generated", options = {}} : (memref<64xf32>) -> memref<64xf32>
  kernel.launch "graph.cast"(%w) -> (%c) {backend = "generated", options = {to = bf16}} : (memref<64xf32>) -> memref<64xbf16>
  return
}

// -----

// A batch norm (statistics, then one elementwise nest that normalizes)
// and the ReLU launched right after it: the normalizing nest applies the
// ReLU too; the other nests stay. Only the ReLU read the normalized
// values, so they are never stored; the running statistics, updated in
// place, and the scratch stay the launch's.
// CHECK-LABEL: func.func @batch_norm_relu
// CHECK-SAME: (%[[X:[^:]+]]: memref<2x3x4x4xf32>, %[[G:[^:]+]]: memref<3xf32>, %[[B:[^:]+]]: memref<3xf32>, %[[RM:[^:]+]]: memref<3xf32>, %[[RV:[^:]+]]: memref<3xf32>, %[[Y:[^:]+]]: memref<2x3x4x4xf32>)
// CHECK-NOT: memref<2x3x4x4xf32>
// CHECK: kernel.launch "fused(batch_norm_training,relu)"(%[[X]], %[[G]], %[[B]], %[[RM]], %[[RV]]) -> (%[[RM]], %[[RV]], %[[Y]]) scratch({{.*}}) {backend = "generated", callee = @[[K:[^,]+]], options = {epsilon
// CHECK-NOT: kernel.launch
// CHECK: func.func private @[[K]]({{.*}}, %[[YA:[^:]+]]: memref<2x3x16xf32>, %{{[^:]+}}: memref<3xf32>, %{{[^:]+}}: memref<3xf64>, %{{[^:]+}}: memref<3xf64>, %{{[^:]+}}: memref<3xf32>)
// CHECK-COUNT-3: loop.nest
// CHECK: loop.nest ins({{.*}}) outs(%[[YA]] : memref<2x3x16xf32>) domain = [2, 3, 16] schedule = <parallel = -1, tile = [1, 1, 16], vectorize = true> {{.*}}iterators = ["parallel", "parallel", "parallel"]
// CHECK: %[[N:.*]] = arith.addf
// CHECK: %[[NEG:.*]] = arith.cmpf olt, %[[N]]
// CHECK: %[[R:.*]] = arith.select %[[NEG]], %{{.*}}, %[[N]] : f32
// CHECK: loop.yield %[[R]] : f32
func.func @batch_norm_relu(%x: memref<2x3x4x4xf32>, %g: memref<3xf32>, %b: memref<3xf32>, %rm: memref<3xf32>, %rv: memref<3xf32>, %y: memref<2x3x4x4xf32>) {
  %n = kernel.alloc : memref<2x3x4x4xf32>
  kernel.launch "graph.batch_norm_training"(%x, %g, %b, %rm, %rv) -> (%n, %rm, %rv) {backend = "generated", options = {epsilon = 1.0e-05 : f64, momentum = 9.0e-01 : f64}} : (memref<2x3x4x4xf32>, memref<3xf32>, memref<3xf32>, memref<3xf32>, memref<3xf32>) -> (memref<2x3x4x4xf32>, memref<3xf32>, memref<3xf32>)
  kernel.launch "graph.relu"(%n) -> (%y) {backend = "generated", options = {}} : (memref<2x3x4x4xf32>) -> memref<2x3x4x4xf32>
  return
}

// -----

// A clip's gradient reads the clip's input: the normalized values are
// written by the fused nest as well as clipped.
// CHECK-LABEL: func.func @batch_norm_clip_kept
// CHECK: %[[N:.*]] = kernel.alloc : memref<2x3x4x4xf32>
// CHECK: kernel.launch "fused(batch_norm_training,clip)"({{.*}}) -> (%[[N]], %{{[^,]+}}, %{{[^,]+}}, %{{[^)]+}}) scratch
// CHECK: kernel.launch "runtime.copy"(%[[N]])
// CHECK: loop.nest {{.*}}iterators = ["parallel", "parallel", "parallel"]
// CHECK: loop.yield %[[NV:[^,]+]], %{{.*}} : f32, f32
func.func @batch_norm_clip_kept(%x: memref<2x3x4x4xf32>, %g: memref<3xf32>, %b: memref<3xf32>, %rm: memref<3xf32>, %rv: memref<3xf32>, %y: memref<2x3x4x4xf32>, %c: memref<2x3x4x4xf32>) {
  %n = kernel.alloc : memref<2x3x4x4xf32>
  kernel.launch "graph.batch_norm_training"(%x, %g, %b, %rm, %rv) -> (%n, %rm, %rv) {backend = "generated", options = {epsilon = 1.0e-05 : f64, momentum = 9.0e-01 : f64}} : (memref<2x3x4x4xf32>, memref<3xf32>, memref<3xf32>, memref<3xf32>, memref<3xf32>) -> (memref<2x3x4x4xf32>, memref<3xf32>, memref<3xf32>)
  kernel.launch "graph.clip"(%n) -> (%y) {backend = "generated", options = {min = 0.0 : f64, max = 6.0 : f64}} : (memref<2x3x4x4xf32>) -> memref<2x3x4x4xf32>
  kernel.launch "runtime.copy"(%n) -> (%c) {backend = "generated", options = {}} : (memref<2x3x4x4xf32>) -> memref<2x3x4x4xf32>
  return
}

// -----

// Not fused: a launch runs between the batch norm and the ReLU (the fused
// launch would move one of them past it).
// CHECK-LABEL: func.func @batch_norm_then_other
// CHECK: kernel.launch "graph.batch_norm_training"
// CHECK: kernel.launch "graph.neg"
// CHECK: kernel.launch "graph.relu"
func.func @batch_norm_then_other(%x: memref<2x3x4x4xf32>, %g: memref<3xf32>, %b: memref<3xf32>, %rm: memref<3xf32>, %rv: memref<3xf32>, %y: memref<2x3x4x4xf32>, %u: memref<3xf32>, %v: memref<3xf32>) {
  %n = kernel.alloc : memref<2x3x4x4xf32>
  kernel.launch "graph.batch_norm_training"(%x, %g, %b, %rm, %rv) -> (%n, %rm, %rv) {backend = "generated", options = {epsilon = 1.0e-05 : f64, momentum = 9.0e-01 : f64}} : (memref<2x3x4x4xf32>, memref<3xf32>, memref<3xf32>, memref<3xf32>, memref<3xf32>) -> (memref<2x3x4x4xf32>, memref<3xf32>, memref<3xf32>)
  kernel.launch "graph.neg"(%u) -> (%v) {backend = "generated", options = {}} : (memref<3xf32>) -> memref<3xf32>
  kernel.launch "graph.relu"(%n) -> (%y) {backend = "generated", options = {}} : (memref<2x3x4x4xf32>) -> memref<2x3x4x4xf32>
  return
}
