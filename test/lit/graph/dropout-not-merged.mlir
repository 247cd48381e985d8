// Two dropouts of the same value draw different masks, so CSE must keep both.
// RUN: trainc-opt %s -cse | FileCheck %s
// Bug: Graph_UnaryOp (GraphBase.td) adds Pure to every unary op, dropout included,
// so CSE merges the two dropouts below into one.

// CHECK-LABEL: func.func @two_masks
// CHECK: %[[FIRST:.*]] = graph.dropout %{{.*}} {ratio = 5.000000e-01 : f64}
// CHECK: %[[SECOND:.*]] = graph.dropout %{{.*}} {ratio = 5.000000e-01 : f64}
// CHECK: graph.add %[[FIRST]], %[[SECOND]]
func.func @two_masks(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = graph.dropout %x {ratio = 0.5} : tensor<4x8xf32>
  %1 = graph.dropout %x {ratio = 0.5} : tensor<4x8xf32>
  %2 = graph.add %0, %1 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %2 : tensor<4x8xf32>
}
