// --trainc-unmask-reductions: a masked vector reduction becomes a select of
// the neutral element and an unmasked reduction (which lowers to a tree);
// kinds without a float neutral element stay masked.
// RUN: trainc-opt %s --trainc-unmask-reductions | FileCheck %s

// CHECK-LABEL: func.func @row_sum
// CHECK-SAME: (%[[X:.*]]: vector<1x64xf32>, %[[ACC:.*]]: vector<1xf32>, %[[M:.*]]: vector<1x64xi1>)
// CHECK: %[[ZERO:.*]] = arith.constant dense<-0.000000e+00> : vector<1x64xf32>
// CHECK: %[[S:.*]] = arith.select %[[M]], %[[X]], %[[ZERO]] : vector<1x64xi1>, vector<1x64xf32>
// CHECK-NOT: vector.mask
// CHECK: vector.multi_reduction <add>, %[[S]], %[[ACC]] [1] : vector<1x64xf32> to vector<1xf32>
func.func @row_sum(%x: vector<1x64xf32>, %acc: vector<1xf32>, %m: vector<1x64xi1>) -> vector<1xf32> {
  %r = vector.mask %m { vector.multi_reduction <add>, %x, %acc [1] : vector<1x64xf32> to vector<1xf32> } : vector<1x64xi1> -> vector<1xf32>
  return %r : vector<1xf32>
}

// CHECK-LABEL: func.func @row_max
// CHECK: arith.constant dense<0xFF800000> : vector<64xf32>
// CHECK: arith.select
// CHECK: vector.multi_reduction <maxnumf>
func.func @row_max(%x: vector<64xf32>, %acc: f32, %m: vector<64xi1>) -> f32 {
  %r = vector.mask %m { vector.multi_reduction <maxnumf>, %x, %acc [0] : vector<64xf32> to f32 } : vector<64xi1> -> f32
  return %r : f32
}

// CHECK-LABEL: func.func @integer_sum
// CHECK: vector.mask
func.func @integer_sum(%x: vector<64xi32>, %acc: i32, %m: vector<64xi1>) -> i32 {
  %r = vector.mask %m { vector.multi_reduction <add>, %x, %acc [0] : vector<64xi32> to i32 } : vector<64xi1> -> i32
  return %r : i32
}
