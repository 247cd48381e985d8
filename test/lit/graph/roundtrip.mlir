// Every graph op prints and parses back to itself, with its inferred result types.
// RUN: trainc-opt %s | trainc-opt | FileCheck %s

// CHECK-LABEL: func.func @constant
func.func @constant() -> (tensor<3xi64>, tensor<2x2xf32>, tensor<i1>) {
  // CHECK: graph.constant dense<[1, 0, -1]> : tensor<3xi64>
  %0 = graph.constant dense<[1, 0, -1]> : tensor<3xi64>
  // CHECK: graph.constant dense<{{\[\[}}1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00]]> : tensor<2x2xf32>
  %1 = graph.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  // CHECK: graph.constant dense<true> : tensor<i1>
  %2 = graph.constant dense<true> : tensor<i1>
  return %0, %1, %2 : tensor<3xi64>, tensor<2x2xf32>, tensor<i1>
}

// CHECK-LABEL: func.func @unary
func.func @unary(%x: tensor<2x3xf32>, %i: tensor<4xi32>) -> tensor<2x3xf32> {
  // CHECK: graph.identity %{{.*}} : tensor<2x3xf32>
  %0 = graph.identity %x : tensor<2x3xf32>
  // CHECK: graph.neg %{{.*}} : tensor<2x3xf32>
  %1 = graph.neg %0 : tensor<2x3xf32>
  // CHECK: graph.abs %{{.*}} : tensor<4xi32>
  %2 = graph.abs %i : tensor<4xi32>
  // CHECK: graph.sqrt %{{.*}} : tensor<2x3xf32>
  %3 = graph.sqrt %1 : tensor<2x3xf32>
  // CHECK: graph.exp %{{.*}} : tensor<2x3xf32>
  %4 = graph.exp %3 : tensor<2x3xf32>
  // CHECK: graph.log %{{.*}} : tensor<2x3xf32>
  %5 = graph.log %4 : tensor<2x3xf32>
  // CHECK: graph.tanh %{{.*}} : tensor<2x3xf32>
  %6 = graph.tanh %5 : tensor<2x3xf32>
  // CHECK: graph.sigmoid %{{.*}} : tensor<2x3xf32>
  %7 = graph.sigmoid %6 : tensor<2x3xf32>
  // CHECK: graph.relu %{{.*}} : tensor<2x3xf32>
  %8 = graph.relu %7 : tensor<2x3xf32>
  // CHECK: graph.erf %{{.*}} : tensor<2x3xf32>
  %9 = graph.erf %8 : tensor<2x3xf32>
  // CHECK: graph.reciprocal %{{.*}} : tensor<2x3xf32>
  %10 = graph.reciprocal %9 : tensor<2x3xf32>
  // CHECK: graph.sin %{{.*}} : tensor<2x3xf32>
  %11 = graph.sin %10 : tensor<2x3xf32>
  // CHECK: graph.cos %{{.*}} : tensor<2x3xf32>
  %12 = graph.cos %11 : tensor<2x3xf32>
  // CHECK: graph.softplus %{{.*}} : tensor<2x3xf32>
  %13 = graph.softplus %12 : tensor<2x3xf32>
  return %13 : tensor<2x3xf32>
}

// Attributes equal to their default are not printed.
// CHECK-LABEL: func.func @unary_with_attributes
func.func @unary_with_attributes(%x: tensor<8xbf16>) -> tensor<8xbf16> {
  // CHECK: graph.leaky_relu %{{.*}} : tensor<8xbf16>
  %0 = graph.leaky_relu %x : tensor<8xbf16>
  // CHECK: graph.leaky_relu %{{.*}} {alpha = 2.000000e-01 : f64} : tensor<8xbf16>
  %1 = graph.leaky_relu %0 {alpha = 0.2} : tensor<8xbf16>
  // CHECK: graph.gelu %{{.*}} : tensor<8xbf16>
  %2 = graph.gelu %1 : tensor<8xbf16>
  // CHECK: graph.gelu %{{.*}} {tanh_approximation = true} : tensor<8xbf16>
  %3 = graph.gelu %2 {tanh_approximation = true} : tensor<8xbf16>
  // CHECK: graph.clip %{{.*}} {max = 6.000000e+00 : f64, min = 0.000000e+00 : f64} : tensor<8xbf16>
  %4 = graph.clip %3 {min = 0.0, max = 6.0} : tensor<8xbf16>
  // CHECK: graph.clip %{{.*}} {max = 1.000000e+00 : f64} : tensor<8xbf16>
  %5 = graph.clip %4 {max = 1.0} : tensor<8xbf16>
  // CHECK: graph.dropout %{{.*}} {ratio = 1.000000e-01 : f64} : tensor<8xbf16>
  %6 = graph.dropout %5 {ratio = 0.1} : tensor<8xbf16>
  return %6 : tensor<8xbf16>
}

// CHECK-LABEL: func.func @cast
func.func @cast(%x: tensor<2x?xf32>, %b: tensor<3xi1>) -> (tensor<2x?xi64>, tensor<3xf16>) {
  // CHECK: graph.cast %{{.*}} {to = i64} : (tensor<2x?xf32>) -> tensor<2x?xi64>
  %0 = graph.cast %x {to = i64} : (tensor<2x?xf32>) -> tensor<2x?xi64>
  // CHECK: graph.cast %{{.*}} {to = f16} : (tensor<3xi1>) -> tensor<3xf16>
  %1 = graph.cast %b {to = f16} : (tensor<3xi1>) -> tensor<3xf16>
  return %0, %1 : tensor<2x?xi64>, tensor<3xf16>
}

// Multidirectional broadcasting: dims align from the right, 1 stretches.
// CHECK-LABEL: func.func @arithmetic
func.func @arithmetic(%a: tensor<4x1x3xf32>, %b: tensor<5x1xf32>, %s: tensor<f32>,
                      %d: tensor<?x3xf32>, %e: tensor<i32>) -> tensor<4x5x3xf32> {
  // CHECK: graph.add %{{.*}}, %{{.*}} : (tensor<4x1x3xf32>, tensor<5x1xf32>) -> tensor<4x5x3xf32>
  %0 = graph.add %a, %b : (tensor<4x1x3xf32>, tensor<5x1xf32>) -> tensor<4x5x3xf32>
  // CHECK: graph.sub %{{.*}}, %{{.*}} : (tensor<4x5x3xf32>, tensor<f32>) -> tensor<4x5x3xf32>
  %1 = graph.sub %0, %s : (tensor<4x5x3xf32>, tensor<f32>) -> tensor<4x5x3xf32>
  // CHECK: graph.mul %{{.*}}, %{{.*}} : (tensor<f32>, tensor<4x5x3xf32>) -> tensor<4x5x3xf32>
  %2 = graph.mul %s, %1 : (tensor<f32>, tensor<4x5x3xf32>) -> tensor<4x5x3xf32>
  // CHECK: graph.div %{{.*}}, %{{.*}} : (tensor<4x5x3xf32>, tensor<5x1xf32>) -> tensor<4x5x3xf32>
  %3 = graph.div %2, %b : (tensor<4x5x3xf32>, tensor<5x1xf32>) -> tensor<4x5x3xf32>
  // A dynamic dim broadcasts against a static one.
  // CHECK: graph.add %{{.*}}, %{{.*}} : (tensor<?x3xf32>, tensor<5x1xf32>) -> tensor<5x3xf32>
  %4 = graph.add %d, %b : (tensor<?x3xf32>, tensor<5x1xf32>) -> tensor<5x3xf32>
  // The exponent may have another element type; the result follows the base.
  // CHECK: graph.pow %{{.*}}, %{{.*}} : (tensor<4x5x3xf32>, tensor<i32>) -> tensor<4x5x3xf32>
  %5 = graph.pow %3, %e : (tensor<4x5x3xf32>, tensor<i32>) -> tensor<4x5x3xf32>
  return %5 : tensor<4x5x3xf32>
}

// CHECK-LABEL: func.func @compare_and_select
func.func @compare_and_select(%a: tensor<2x3xi64>, %b: tensor<3xi64>, %x: tensor<2x1xf32>,
                              %y: tensor<1x3xf32>) -> tensor<2x3xf32> {
  // CHECK: graph.equal %{{.*}}, %{{.*}} : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi1>
  %0 = graph.equal %a, %b : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi1>
  // CHECK: graph.less %{{.*}}, %{{.*}} : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi1>
  %1 = graph.less %a, %b : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi1>
  // CHECK: graph.greater %{{.*}}, %{{.*}} : (tensor<3xi64>, tensor<2x3xi64>) -> tensor<2x3xi1>
  %2 = graph.greater %b, %a : (tensor<3xi64>, tensor<2x3xi64>) -> tensor<2x3xi1>
  // CHECK: graph.less_equal %{{.*}}, %{{.*}} : (tensor<2x1xf32>, tensor<1x3xf32>) -> tensor<2x3xi1>
  %3 = graph.less_equal %x, %y : (tensor<2x1xf32>, tensor<1x3xf32>) -> tensor<2x3xi1>
  // CHECK: graph.greater_equal %{{.*}}, %{{.*}} : (tensor<2x1xf32>, tensor<1x3xf32>) -> tensor<2x3xi1>
  %4 = graph.greater_equal %x, %y : (tensor<2x1xf32>, tensor<1x3xf32>) -> tensor<2x3xi1>
  // CHECK: graph.not %{{.*}} : tensor<2x3xi1>
  %5 = graph.not %4 : tensor<2x3xi1>
  // The condition, lhs and rhs broadcast together.
  // CHECK: graph.where %{{.*}}, %{{.*}}, %{{.*}} : (tensor<2x3xi1>, tensor<2x1xf32>, tensor<1x3xf32>) -> tensor<2x3xf32>
  %6 = graph.where %5, %x, %y : (tensor<2x3xi1>, tensor<2x1xf32>, tensor<1x3xf32>) -> tensor<2x3xf32>
  return %6 : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @reductions
func.func @reductions(%x: tensor<2x3x4xf32>) -> (tensor<2x1x1xf32>, tensor<3xf32>, tensor<2x4xf32>, tensor<f32>) {
  // CHECK: graph.reduce_sum %{{.*}} {axes = array<i64: 1, 2>} : (tensor<2x3x4xf32>) -> tensor<2x1x1xf32>
  %0 = graph.reduce_sum %x {axes = array<i64: 1, 2>, keepdims = true} : (tensor<2x3x4xf32>) -> tensor<2x1x1xf32>
  // CHECK: graph.reduce_mean %{{.*}} {axes = array<i64: 0, 2>, keepdims = false} : (tensor<2x3x4xf32>) -> tensor<3xf32>
  %1 = graph.reduce_mean %x {axes = array<i64: 0, 2>, keepdims = false} : (tensor<2x3x4xf32>) -> tensor<3xf32>
  // CHECK: graph.reduce_max %{{.*}} {axes = array<i64: 1>, keepdims = false} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
  %2 = graph.reduce_max %x {axes = array<i64: 1>, keepdims = false} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
  // CHECK: graph.argmax %{{.*}} {axis = 2 : i64, keepdims = false, select_last_index = true} : (tensor<2x3x4xf32>) -> tensor<2x3xi64>
  %argmax = graph.argmax %x {axis = 2 : i64, keepdims = false, select_last_index = true} : (tensor<2x3x4xf32>) -> tensor<2x3xi64>
  // Reducing every axis without keepdims gives a scalar.
  // CHECK: graph.reduce_sum %{{.*}} {axes = array<i64: 0, 1, 2>, keepdims = false} : (tensor<2x3x4xf32>) -> tensor<f32>
  %3 = graph.reduce_sum %x {axes = array<i64: 0, 1, 2>, keepdims = false} : (tensor<2x3x4xf32>) -> tensor<f32>
  return %0, %1, %2, %3 : tensor<2x1x1xf32>, tensor<3xf32>, tensor<2x4xf32>, tensor<f32>
}

// CHECK-LABEL: func.func @softmax
func.func @softmax(%x: tensor<2x10xf32>) -> tensor<2x10xf32> {
  // CHECK: graph.softmax %{{.*}} {axis = 1 : i64} : tensor<2x10xf32>
  %0 = graph.softmax %x {axis = 1} : tensor<2x10xf32>
  // CHECK: graph.log_softmax %{{.*}} {axis = 0 : i64} : tensor<2x10xf32>
  %1 = graph.log_softmax %0 {axis = 0} : tensor<2x10xf32>
  return %1 : tensor<2x10xf32>
}

// 0 copies the input dim at the same index, -1 takes the remaining elements.
// CHECK-LABEL: func.func @reshape
func.func @reshape(%x: tensor<2x3x4xf32>, %d: tensor<?x3x4xf32>) -> (tensor<2x12xf32>, tensor<2x3x2x2xf32>, tensor<24xf32>, tensor<?x12xf32>, tensor<?x3x4xf32>) {
  // CHECK: graph.reshape %{{.*}} {shape = array<i64: 0, -1>} : (tensor<2x3x4xf32>) -> tensor<2x12xf32>
  %0 = graph.reshape %x {shape = array<i64: 0, -1>} : (tensor<2x3x4xf32>) -> tensor<2x12xf32>
  // CHECK: graph.reshape %{{.*}} {shape = array<i64: 0, 0, 2, -1>} : (tensor<2x3x4xf32>) -> tensor<2x3x2x2xf32>
  %1 = graph.reshape %x {shape = array<i64: 0, 0, 2, -1>} : (tensor<2x3x4xf32>) -> tensor<2x3x2x2xf32>
  // CHECK: graph.reshape %{{.*}} {shape = array<i64: 24>} : (tensor<2x3x4xf32>) -> tensor<24xf32>
  %2 = graph.reshape %x {shape = array<i64: 24>} : (tensor<2x3x4xf32>) -> tensor<24xf32>
  // A batch-relative 0 keeps a dynamic batch dynamic.
  // CHECK: graph.reshape %{{.*}} {shape = array<i64: 0, 12>} : (tensor<?x3x4xf32>) -> tensor<?x12xf32>
  %3 = graph.reshape %d {shape = array<i64: 0, 12>} : (tensor<?x3x4xf32>) -> tensor<?x12xf32>
  // CHECK: graph.reshape %{{.*}} {shape = array<i64: -1, 3, 4>} : (tensor<?x12xf32>) -> tensor<?x3x4xf32>
  %4 = graph.reshape %3 {shape = array<i64: -1, 3, 4>} : (tensor<?x12xf32>) -> tensor<?x3x4xf32>
  return %0, %1, %2, %3, %4 : tensor<2x12xf32>, tensor<2x3x2x2xf32>, tensor<24xf32>, tensor<?x12xf32>, tensor<?x3x4xf32>
}

// CHECK-LABEL: func.func @transpose
func.func @transpose(%x: tensor<2x3x4xf32>) -> tensor<4x2x3xf32> {
  // CHECK: graph.transpose %{{.*}} {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  %0 = graph.transpose %x {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  return %0 : tensor<4x2x3xf32>
}

// The result is the broadcast of the input shape and `shape`.
// CHECK-LABEL: func.func @expand
func.func @expand(%x: tensor<3x1xf32>) -> (tensor<2x3x4xf32>, tensor<3x5xf32>) {
  // CHECK: graph.expand %{{.*}} {shape = array<i64: 2, 1, 4>} : (tensor<3x1xf32>) -> tensor<2x3x4xf32>
  %0 = graph.expand %x {shape = array<i64: 2, 1, 4>} : (tensor<3x1xf32>) -> tensor<2x3x4xf32>
  // CHECK: graph.expand %{{.*}} {shape = array<i64: 5>} : (tensor<3x1xf32>) -> tensor<3x5xf32>
  %1 = graph.expand %x {shape = array<i64: 5>} : (tensor<3x1xf32>) -> tensor<3x5xf32>
  return %0, %1 : tensor<2x3x4xf32>, tensor<3x5xf32>
}

// CHECK-LABEL: func.func @concat
func.func @concat(%a: tensor<2x3xf32>, %b: tensor<2x5xf32>, %c: tensor<2x1xf32>, %d: tensor<?x3xf32>) -> (tensor<2x9xf32>, tensor<?x3xf32>) {
  // CHECK: graph.concat %{{.*}}, %{{.*}}, %{{.*}} {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x5xf32>, tensor<2x1xf32>) -> tensor<2x9xf32>
  %0 = graph.concat %a, %b, %c {axis = 1} : (tensor<2x3xf32>, tensor<2x5xf32>, tensor<2x1xf32>) -> tensor<2x9xf32>
  // A dynamic size along the axis makes the result dynamic.
  // CHECK: graph.concat %{{.*}}, %{{.*}} {axis = 0 : i64} : (tensor<2x3xf32>, tensor<?x3xf32>) -> tensor<?x3xf32>
  %1 = graph.concat %a, %d {axis = 0} : (tensor<2x3xf32>, tensor<?x3xf32>) -> tensor<?x3xf32>
  return %0, %1 : tensor<2x9xf32>, tensor<?x3xf32>
}

// Result dim = ceil((end - start) / step); negative steps walk backwards.
// CHECK-LABEL: func.func @slice
func.func @slice(%x: tensor<5x6x7xf32>) -> (tensor<5x3x3xf32>, tensor<2x0x3xf32>) {
  // CHECK: graph.slice %{{.*}} {ends = array<i64: -1, 6, 0>, starts = array<i64: 4, 0, 5>, steps = array<i64: -1, 2, -2>} : (tensor<5x6x7xf32>) -> tensor<5x3x3xf32>
  %0 = graph.slice %x {starts = array<i64: 4, 0, 5>, ends = array<i64: -1, 6, 0>, steps = array<i64: -1, 2, -2>} : (tensor<5x6x7xf32>) -> tensor<5x3x3xf32>
  // CHECK: graph.slice %{{.*}} {ends = array<i64: 3, 2, 7>, starts = array<i64: 1, 4, 0>, steps = array<i64: 1, 1, 3>} : (tensor<5x6x7xf32>) -> tensor<2x0x3xf32>
  %1 = graph.slice %x {starts = array<i64: 1, 4, 0>, ends = array<i64: 3, 2, 7>, steps = array<i64: 1, 1, 3>} : (tensor<5x6x7xf32>) -> tensor<2x0x3xf32>
  return %0, %1 : tensor<5x3x3xf32>, tensor<2x0x3xf32>
}

// Result shape: data.shape[:axis] + indices.shape + data.shape[axis+1:].
// CHECK-LABEL: func.func @gather
func.func @gather(%table: tensor<10x4xf32>, %ids: tensor<2x3xi64>, %x: tensor<3x4x6xf32>,
                  %cols: tensor<5xi32>, %one: tensor<i64>) -> (tensor<2x3x4xf32>, tensor<3x5x6xf32>, tensor<3x4xf32>) {
  // CHECK: graph.gather %{{.*}}, %{{.*}} {axis = 0 : i64} : (tensor<10x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>
  %0 = graph.gather %table, %ids {axis = 0} : (tensor<10x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>
  // CHECK: graph.gather %{{.*}}, %{{.*}} {axis = 1 : i64} : (tensor<3x4x6xf32>, tensor<5xi32>) -> tensor<3x5x6xf32>
  %1 = graph.gather %x, %cols {axis = 1} : (tensor<3x4x6xf32>, tensor<5xi32>) -> tensor<3x5x6xf32>
  // A scalar index removes the gathered dim.
  // CHECK: graph.gather %{{.*}}, %{{.*}} {axis = 2 : i64} : (tensor<3x4x6xf32>, tensor<i64>) -> tensor<3x4xf32>
  %2 = graph.gather %x, %one {axis = 2} : (tensor<3x4x6xf32>, tensor<i64>) -> tensor<3x4xf32>
  return %0, %1, %2 : tensor<2x3x4xf32>, tensor<3x5x6xf32>, tensor<3x4xf32>
}

// numpy matmul: batch dims broadcast; a 1-D operand is promoted, and the
// promoted dim is dropped from the result.
// CHECK-LABEL: func.func @matmul
func.func @matmul(%a: tensor<2x1x3x4xf32>, %b: tensor<5x4x6xf32>, %v: tensor<4xf32>,
                  %m: tensor<3x4xf32>) -> (tensor<2x5x3x6xf32>, tensor<5x6xf32>, tensor<3xf32>, tensor<f32>, tensor<2x1x3xf32>) {
  // CHECK: graph.matmul %{{.*}}, %{{.*}} : (tensor<2x1x3x4xf32>, tensor<5x4x6xf32>) -> tensor<2x5x3x6xf32>
  %0 = graph.matmul %a, %b : (tensor<2x1x3x4xf32>, tensor<5x4x6xf32>) -> tensor<2x5x3x6xf32>
  // CHECK: graph.matmul %{{.*}}, %{{.*}} : (tensor<4xf32>, tensor<5x4x6xf32>) -> tensor<5x6xf32>
  %1 = graph.matmul %v, %b : (tensor<4xf32>, tensor<5x4x6xf32>) -> tensor<5x6xf32>
  // CHECK: graph.matmul %{{.*}}, %{{.*}} : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3xf32>
  %2 = graph.matmul %m, %v : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3xf32>
  // CHECK: graph.matmul %{{.*}}, %{{.*}} : (tensor<4xf32>, tensor<4xf32>) -> tensor<f32>
  %3 = graph.matmul %v, %v : (tensor<4xf32>, tensor<4xf32>) -> tensor<f32>
  // CHECK: graph.matmul %{{.*}}, %{{.*}} : (tensor<2x1x3x4xf32>, tensor<4xf32>) -> tensor<2x1x3xf32>
  %4 = graph.matmul %a, %v : (tensor<2x1x3x4xf32>, tensor<4xf32>) -> tensor<2x1x3xf32>
  return %0, %1, %2, %3, %4 : tensor<2x5x3x6xf32>, tensor<5x6xf32>, tensor<3xf32>, tensor<f32>, tensor<2x1x3xf32>
}

// CHECK-LABEL: func.func @gemm
func.func @gemm(%a: tensor<8x3xf32>, %b: tensor<5x8xf32>, %c: tensor<5xf32>, %w: tensor<8x5xf32>) -> (tensor<3x5xf32>, tensor<8x5xf32>) {
  // CHECK: graph.gemm %{{.*}}, %{{.*}}, %{{.*}} {alpha = 5.000000e-01 : f64, beta = 2.000000e+00 : f64, trans_a = true, trans_b = true} : (tensor<8x3xf32>, tensor<5x8xf32>, tensor<5xf32>) -> tensor<3x5xf32>
  %0 = graph.gemm %a, %b, %c {alpha = 0.5, beta = 2.0, trans_a = true, trans_b = true} : (tensor<8x3xf32>, tensor<5x8xf32>, tensor<5xf32>) -> tensor<3x5xf32>
  // Without c; default attributes are not printed.
  // CHECK: graph.gemm %{{.*}}, %{{.*}} : (tensor<8x3xf32>, tensor<3x5xf32>) -> tensor<8x5xf32>
  %1 = graph.gemm %a, %0 {alpha = 1.0, trans_a = false} : (tensor<8x3xf32>, tensor<3x5xf32>) -> tensor<8x5xf32>
  return %0, %1 : tensor<3x5xf32>, tensor<8x5xf32>
}

// CHECK-LABEL: func.func @conv
func.func @conv(%x: tensor<1x4x9x9xf32>, %w: tensor<8x2x3x3xf32>, %bias: tensor<8xf32>,
                %s: tensor<2x3x16xf32>, %k: tensor<6x3x5xf32>) -> (tensor<1x8x4x4xf32>, tensor<2x6x12xf32>) {
  // Effective kernel 2 * (3 - 1) + 1 = 5: (9 + 1 + 1 - 5) / 2 + 1 = 4.
  // CHECK: graph.conv %{{.*}}, %{{.*}}, %{{.*}} {dilations = array<i64: 2, 2>, group = 2 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x4x9x9xf32>, tensor<8x2x3x3xf32>, tensor<8xf32>) -> tensor<1x8x4x4xf32>
  %0 = graph.conv %x, %w, %bias {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 2, 2>, group = 2} : (tensor<1x4x9x9xf32>, tensor<8x2x3x3xf32>, tensor<8xf32>) -> tensor<1x8x4x4xf32>
  // 1-D, no bias, no padding.
  // CHECK: graph.conv %{{.*}}, %{{.*}} {dilations = array<i64: 1>, group = 1 : i64, pads = array<i64: 0, 0>, strides = array<i64: 1>} : (tensor<2x3x16xf32>, tensor<6x3x5xf32>) -> tensor<2x6x12xf32>
  %1 = graph.conv %s, %k {strides = array<i64: 1>, pads = array<i64: 0, 0>, dilations = array<i64: 1>, group = 1} : (tensor<2x3x16xf32>, tensor<6x3x5xf32>) -> tensor<2x6x12xf32>
  return %0, %1 : tensor<1x8x4x4xf32>, tensor<2x6x12xf32>
}

// CHECK-LABEL: func.func @pooling
func.func @pooling(%x: tensor<1x3x7x5xf32>) -> (tensor<1x3x3x2xf32>, tensor<1x3x4x2xf32>, tensor<1x3x4x2xf32>, tensor<1x3x1x1xf32>) {
  // Floor: (7 - 2) / 2 + 1 = 3; (5 + 2 - 3) / 3 + 1 = 2.
  // CHECK: graph.max_pool %{{.*}} {dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 3>, pads = array<i64: 0, 1, 0, 1>, strides = array<i64: 2, 3>} : (tensor<1x3x7x5xf32>) -> tensor<1x3x3x2xf32>
  %0 = graph.max_pool %x {kernel_shape = array<i64: 2, 3>, strides = array<i64: 2, 3>, pads = array<i64: 0, 1, 0, 1>, dilations = array<i64: 1, 1>} : (tensor<1x3x7x5xf32>) -> tensor<1x3x3x2xf32>
  // Ceil: ceil((7 - 2) / 2) + 1 = 4; along the second dim a third window
  // would start in the end padding and is dropped, leaving 2.
  // CHECK: graph.max_pool %{{.*}} {ceil_mode = true, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 3>, pads = array<i64: 0, 1, 0, 1>, strides = array<i64: 2, 3>} : (tensor<1x3x7x5xf32>) -> tensor<1x3x4x2xf32>
  %1 = graph.max_pool %x {kernel_shape = array<i64: 2, 3>, strides = array<i64: 2, 3>, pads = array<i64: 0, 1, 0, 1>, dilations = array<i64: 1, 1>, ceil_mode = true} : (tensor<1x3x7x5xf32>) -> tensor<1x3x4x2xf32>
  // CHECK: graph.avg_pool %{{.*}} {ceil_mode = true, count_include_pad = true, kernel_shape = array<i64: 2, 3>, pads = array<i64: 0, 1, 0, 1>, strides = array<i64: 2, 3>} : (tensor<1x3x7x5xf32>) -> tensor<1x3x4x2xf32>
  %2 = graph.avg_pool %x {kernel_shape = array<i64: 2, 3>, strides = array<i64: 2, 3>, pads = array<i64: 0, 1, 0, 1>, count_include_pad = true, ceil_mode = true} : (tensor<1x3x7x5xf32>) -> tensor<1x3x4x2xf32>
  // CHECK: graph.global_avg_pool %{{.*}} : (tensor<1x3x7x5xf32>) -> tensor<1x3x1x1xf32>
  %3 = graph.global_avg_pool %x : (tensor<1x3x7x5xf32>) -> tensor<1x3x1x1xf32>
  return %0, %1, %2, %3 : tensor<1x3x3x2xf32>, tensor<1x3x4x2xf32>, tensor<1x3x4x2xf32>, tensor<1x3x1x1xf32>
}

// CHECK-LABEL: func.func @normalization
func.func @normalization(%x: tensor<4x3x8x8xf32>, %c: tensor<3xf32>, %t: tensor<2x5x16xf32>,
                         %g: tensor<16xf32>, %h: tensor<5x16xf32>) -> (tensor<4x3x8x8xf32>, tensor<3xf32>, tensor<3xf32>, tensor<4x3x8x8xf32>, tensor<2x5x16xf32>, tensor<2x5x16xf32>) {
  // Training mode also returns the updated running mean and variance.
  // CHECK: %[[OUT:.*]], %[[MEAN:.*]], %[[VAR:.*]] = graph.batch_norm_training %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {epsilon = 1.000000e-05 : f64, momentum = 9.000000e-01 : f64} : (tensor<4x3x8x8xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<4x3x8x8xf32>, tensor<3xf32>, tensor<3xf32>)
  %0:3 = graph.batch_norm_training %x, %c, %c, %c, %c {epsilon = 1.0e-5, momentum = 0.9} : (tensor<4x3x8x8xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<4x3x8x8xf32>, tensor<3xf32>, tensor<3xf32>)
  // CHECK: graph.batch_norm_inference %{{.*}}, %{{.*}}, %{{.*}}, %[[MEAN]], %[[VAR]] {epsilon = 1.000000e-05 : f64} : (tensor<4x3x8x8xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<4x3x8x8xf32>
  %1 = graph.batch_norm_inference %x, %c, %c, %0#1, %0#2 {epsilon = 1.0e-5} : (tensor<4x3x8x8xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<4x3x8x8xf32>
  // CHECK: graph.layer_norm %{{.*}}, %{{.*}}, %{{.*}} {axis = 2 : i64, epsilon = 9.9999999999999995E-7 : f64} : (tensor<2x5x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<2x5x16xf32>
  %2 = graph.layer_norm %t, %g, %g {axis = 2, epsilon = 1.0e-6} : (tensor<2x5x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<2x5x16xf32>
  // Without bias, normalizing the last two dims.
  // CHECK: graph.layer_norm %{{.*}}, %{{.*}} {axis = 1 : i64, epsilon = 1.000000e-05 : f64} : (tensor<2x5x16xf32>, tensor<5x16xf32>) -> tensor<2x5x16xf32>
  %3 = graph.layer_norm %t, %h {axis = 1, epsilon = 1.0e-5} : (tensor<2x5x16xf32>, tensor<5x16xf32>) -> tensor<2x5x16xf32>
  // CHECK: return %[[OUT]], %[[MEAN]], %[[VAR]],
  return %0#0, %0#1, %0#2, %1, %2, %3 : tensor<4x3x8x8xf32>, tensor<3xf32>, tensor<3xf32>, tensor<4x3x8x8xf32>, tensor<2x5x16xf32>, tensor<2x5x16xf32>
}
