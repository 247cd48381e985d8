// Folding a cast of an i1 constant to a wider integer gives 1 for true (ONNX Cast).
// RUN: trainc-opt %s -canonicalize | FileCheck %s
// Bug: CastOp::fold (GraphFolds.cpp) sign-extends, so true becomes -1.

// CHECK-LABEL: func.func @bool_to_int
// CHECK-DAG: %[[I64:.*]] = graph.constant dense<[1, 0]> : tensor<2xi64>
// CHECK-DAG: %[[I8:.*]] = graph.constant dense<[1, 0]> : tensor<2xi8>
// CHECK: return %[[I64]], %[[I8]]
func.func @bool_to_int() -> (tensor<2xi64>, tensor<2xi8>) {
  %mask = graph.constant dense<[true, false]> : tensor<2xi1>
  %0 = graph.cast %mask {to = i64} : (tensor<2xi1>) -> tensor<2xi64>
  %1 = graph.cast %mask {to = i8} : (tensor<2xi1>) -> tensor<2xi8>
  return %0, %1 : tensor<2xi64>, tensor<2xi8>
}
