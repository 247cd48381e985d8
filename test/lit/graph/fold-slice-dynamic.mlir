// A unit-step slice of a dynamic dim is not a no-op: its type says nothing about its bounds.
// RUN: trainc-opt %s -canonicalize | FileCheck %s
// Bug: SliceOp::fold (GraphFolds.cpp) returns the input whenever the types match and
// all steps are 1; with a dynamic dim, ?x8 -> ?x8 matches for any start and end.

// CHECK-LABEL: func.func @slice_of_dynamic_batch
// CHECK: %[[SLICE:.*]] = graph.slice %{{.*}} {ends = array<i64: 3, 8>, starts = array<i64: 1, 0>, steps = array<i64: 1, 1>} : (tensor<?x8xf32>) -> tensor<?x8xf32>
// CHECK: return %[[SLICE]]
func.func @slice_of_dynamic_batch(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %0 = graph.slice %x {starts = array<i64: 1, 0>, ends = array<i64: 3, 8>, steps = array<i64: 1, 1>} : (tensor<?x8xf32>) -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}
