// --trainc-remat-elementwise: a cheap elementwise value that the backward
// pass reads is recomputed next to its reader from values that are there
// anyway, so the forward kernel need not store it.
// RUN: trainc-opt %s --trainc-remat-elementwise -split-input-file | FileCheck %s
// RUN: trainc-opt %s --trainc-remat-elementwise=functions=true -split-input-file | FileCheck %s --check-prefix=FN
// RUN: trainc-opt %s --trainc-remat-elementwise=parameters=true -split-input-file | FileCheck %s --check-prefix=PARAM

// GELU as PyTorch exports it, then a product, then its gradient. h comes
// from a product, so it stays stored (the gradient reads it); s = h / sqrt 2
// is recomputed from h right before its reader; e = erf(s) + 1 stays
// stored (erf is not recomputed).
// CHECK-LABEL: func.func @gelu
// CHECK: %[[H:.*]] = graph.add %{{.*}}, %arg1
// CHECK: %[[S:.*]] = graph.div %[[H]], %[[C:.*]] :
// CHECK: %[[E:.*]] = graph.add
// CHECK: %[[Y:.*]] = graph.mul {{.*}} : (tensor<4x8xf32>, tensor<f32>)
// CHECK: %[[DY:.*]] = graph.matmul %[[Y]], %arg2
// CHECK-NEXT: %[[DE:.*]] = graph.mul %[[DY]], %[[E]]
// CHECK-NEXT: %[[S2:.*]] = graph.div %[[H]], %[[C]] :
// CHECK-NEXT: %[[SS:.*]] = graph.mul %[[S2]], %[[S2]]
// CHECK-NEXT: graph.mul %[[SS]], %[[H]]
// With functions=true (--memory-budget, once the budget binds), e is
// recomputed from h too, erf and all, right before the gradient reads it.
// FN-LABEL: func.func @gelu
// FN: %[[H:.*]] = graph.add %{{.*}}, %arg1
// FN: %[[DY:.*]] = graph.matmul
// FN-NEXT: %[[S2:.*]] = graph.div %[[H]], %{{.*}} :
// FN-NEXT: %[[R2:.*]] = graph.erf %[[S2]]
// FN-NEXT: %[[E2:.*]] = graph.add %[[R2]]
// FN-NEXT: graph.mul %[[DY]], %[[E2]]
func.func @gelu(%x: tensor<4x8xf32>, %b: tensor<8xf32>, %w: tensor<8x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %c = graph.constant dense<1.41421354> : tensor<f32>
  %one = graph.constant dense<1.0> : tensor<f32>
  %half = graph.constant dense<0.5> : tensor<f32>
  %p = graph.matmul %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %h = graph.add %p, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %s = graph.div %h, %c : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %r = graph.erf %s : tensor<4x8xf32>
  %e = graph.add %r, %one : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %m = graph.mul %h, %e : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = graph.mul %m, %half : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %dy = graph.matmul %y, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %de = graph.mul %dy, %e : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %ss = graph.mul %s, %s : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %g = graph.mul %ss, %h : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %dx = graph.add %de, %g : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %y, %dx : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Not recomputed: the reader is near (nothing but elementwise ops in
// between: one fused kernel either way); the value's operand would have
// to live longer (t = p * p of a product p nobody reads later); the reader
// is not elementwise.
// CHECK-LABEL: func.func @kept
// CHECK-COUNT-1: graph.mul %0, %0
// CHECK-COUNT-1: graph.neg
// CHECK-NOT: graph.mul %0, %0
// CHECK-NOT: graph.neg
func.func @kept(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %p = graph.matmul %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %t = graph.mul %p, %p : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %n = graph.neg %t : tensor<4x8xf32>
  %q = graph.matmul %n, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %u = graph.mul %q, %t : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %v = graph.matmul %n, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  return %u, %v, %n : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// --amp's f32 copy of a bf16 value (erf runs in f32) is recomputed like
// arithmetic: erf's gradient reads s = cast(h) after a product, where h
// is read anyway, so the forward pass stores no f32 copy.
// CHECK-LABEL: func.func @cast_copy
// CHECK: %[[H:.*]] = graph.matmul
// CHECK-NEXT: %[[S:.*]] = graph.cast %[[H]] {to = f32}
// CHECK-NEXT: graph.erf %[[S]]
// CHECK: %[[Q:.*]] = graph.matmul
// CHECK-NEXT: graph.mul %[[Q]], %[[H]]
// CHECK: %[[S2:.*]] = graph.cast %[[H]] {to = f32}
// CHECK-NEXT: graph.mul %[[S2]], %[[S2]]
func.func @cast_copy(%x: tensor<4x8xbf16>, %w: tensor<8x8xbf16>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %h = graph.matmul %x, %w : (tensor<4x8xbf16>, tensor<8x8xbf16>) -> tensor<4x8xbf16>
  %s = graph.cast %h {to = f32} : (tensor<4x8xbf16>) -> tensor<4x8xf32>
  %e = graph.erf %s : tensor<4x8xf32>
  %eb = graph.cast %e {to = bf16} : (tensor<4x8xf32>) -> tensor<4x8xbf16>
  %q = graph.matmul %eb, %w : (tensor<4x8xbf16>, tensor<8x8xbf16>) -> tensor<4x8xbf16>
  %hq = graph.mul %q, %h : (tensor<4x8xbf16>, tensor<4x8xbf16>) -> tensor<4x8xbf16>
  %hq32 = graph.cast %hq {to = f32} : (tensor<4x8xbf16>) -> tensor<4x8xf32>
  %ss = graph.mul %s, %s : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %g = graph.mul %hq32, %ss : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %e, %g : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// --amp bf16-storage: a product reads the f32 widening of a stored bf16
// activation in the forward pass and again in the backward one (its weight
// gradient). The widening is recomputed right before the far product,
// where the bf16 value is read anyway, so no f32 copy is stored between.
// CHECK-LABEL: func.func @widened_for_product
// CHECK: %[[S:.*]] = graph.cast %arg0 {to = f32}
// CHECK-NEXT: %[[P:.*]] = graph.matmul %[[S]], %arg1
// CHECK: %[[S2:.*]] = graph.cast %arg0 {to = f32}
// CHECK-NEXT: graph.matmul %{{.*}}, %[[S2]]
func.func @widened_for_product(%h: tensor<4x8xbf16>, %w: tensor<8x8xf32>, %dy: tensor<8x4xf32>) -> (tensor<4x8xf32>, tensor<8x8xf32>, tensor<4x8xbf16>) {
  %s = graph.cast %h {to = f32} : (tensor<4x8xbf16>) -> tensor<4x8xf32>
  %p = graph.matmul %s, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %q = graph.matmul %p, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %dw = graph.matmul %dy, %s : (tensor<8x4xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  %m = graph.mul %h, %h : (tensor<4x8xbf16>, tensor<4x8xbf16>) -> tensor<4x8xbf16>
  return %q, %dw, %m : tensor<4x8xf32>, tensor<8x8xf32>, tensor<4x8xbf16>
}

// -----

// A weight's live-tap slice (--trainc-drop-dead-taps) and its bf16 copy
// (--amp), read by the forward convolution and by its input gradient.
// With parameters=true the input gradient gets its own copies, read
// again from the weight, so none is kept from one to the other; without
// it (and for the widening rule: the cast narrows) the copy is shared.
// CHECK-LABEL: func.func @weight_copy
// CHECK: %[[W:.*]] = graph.slice %arg1
// CHECK-NEXT: %[[B:.*]] = graph.cast %[[W]]
// CHECK-NOT: graph.slice
// CHECK: graph.conv_backward_input %arg2, %[[B]]
// PARAM-LABEL: func.func @weight_copy
// PARAM: %[[W:.*]] = graph.slice %arg1
// PARAM-NEXT: %[[B:.*]] = graph.cast %[[W]]
// PARAM-NEXT: graph.conv %arg0, %[[B]]
// PARAM-NEXT: %[[W2:.*]] = graph.slice %arg1
// PARAM-NEXT: %[[B2:.*]] = graph.cast %[[W2]]
// PARAM-NEXT: graph.conv_backward_input %arg2, %[[B2]]
func.func @weight_copy(%x: tensor<2x4x1x1xbf16>, %w: tensor<8x4x3x3xf32>, %dy: tensor<2x8x1x1xbf16>) -> (tensor<2x8x1x1xbf16>, tensor<2x4x1x1xbf16>) {
  %ws = graph.slice %w {ends = array<i64: 8, 4, 2, 2>, starts = array<i64: 0, 0, 1, 1>, steps = array<i64: 1, 1, 1, 1>} : (tensor<8x4x3x3xf32>) -> tensor<8x4x1x1xf32>
  %wb = graph.cast %ws {to = bf16} : (tensor<8x4x1x1xf32>) -> tensor<8x4x1x1xbf16>
  %y = graph.conv %x, %wb {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1} : (tensor<2x4x1x1xbf16>, tensor<8x4x1x1xbf16>) -> tensor<2x8x1x1xbf16>
  %dx = graph.conv_backward_input %dy, %wb {input_shape = array<i64: 2, 4, 1, 1>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1} : (tensor<2x8x1x1xbf16>, tensor<8x4x1x1xbf16>) -> tensor<2x4x1x1xbf16>
  return %y, %dx : tensor<2x8x1x1xbf16>, tensor<2x4x1x1xbf16>
}
