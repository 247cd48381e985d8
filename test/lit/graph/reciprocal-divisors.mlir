// --trainc-reciprocal-divisors: a float division by a one-valued constant
// becomes a multiplication by its reciprocal, rounded once.
// RUN: trainc-opt %s --trainc-reciprocal-divisors | FileCheck %s

// GELU's division by sqrt(2) (a scalar constant, broadcast), and a [1, 4]
// splat of 4 (whose reciprocal is exact).
// CHECK-LABEL: func.func @divisors
// CHECK-SAME: (%[[X:.*]]: tensor<2x4xf32>)
// CHECK-DAG: %[[R:.*]] = graph.constant dense<0.707106769> : tensor<f32>
// CHECK-DAG: %[[Q:.*]] = graph.constant dense<2.500000e-01> : tensor<1x4xf32>
// CHECK-DAG: %[[A:.*]] = graph.mul %[[X]], %[[R]] : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
// CHECK-DAG: %[[B:.*]] = graph.mul %[[X]], %[[Q]] : (tensor<2x4xf32>, tensor<1x4xf32>) -> tensor<2x4xf32>
// CHECK-NOT: graph.div
// CHECK: return %[[A]], %[[B]]
func.func @divisors(%x: tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
  %c = graph.constant dense<1.41421354> : tensor<f32>
  %a = graph.div %x, %c : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  %four = graph.constant dense<4.0> : tensor<1x4xf32>
  %b = graph.div %x, %four : (tensor<2x4xf32>, tensor<1x4xf32>) -> tensor<2x4xf32>
  return %a, %b : tensor<2x4xf32>, tensor<2x4xf32>
}

// Left alone: integer division, a divisor that is not one value, a
// constant dividend, zero and a divisor whose reciprocal is not normal.
// CHECK-LABEL: func.func @kept
// CHECK-COUNT-5: graph.div
// CHECK-NOT: graph.mul
func.func @kept(%i: tensor<4xi64>, %x: tensor<2xf32>, %y: tensor<f32>) -> (tensor<4xi64>, tensor<2xf32>, tensor<2xf32>, tensor<f32>, tensor<f32>) {
  %two = graph.constant dense<2> : tensor<i64>
  %a = graph.div %i, %two : (tensor<4xi64>, tensor<i64>) -> tensor<4xi64>
  %v = graph.constant dense<[2.0, 3.0]> : tensor<2xf32>
  %b = graph.div %x, %v : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %c = graph.div %v, %x : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %zero = graph.constant dense<0.0> : tensor<f32>
  %d = graph.div %y, %zero : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %huge = graph.constant dense<3.0e38> : tensor<f32>
  %e = graph.div %y, %huge : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %a, %b, %c, %d, %e : tensor<4xi64>, tensor<2xf32>, tensor<2xf32>, tensor<f32>, tensor<f32>
}
