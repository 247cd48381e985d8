// --trainc-approximate-math: f32 exp/tanh/erf on vectors become polynomials
// (no libm calls per lane).
// RUN: trainc-opt %s --trainc-approximate-math | FileCheck %s

// CHECK-LABEL: func.func @gelu_parts
// CHECK-NOT: math.exp
// CHECK-NOT: math.tanh
// CHECK-NOT: math.erf
// CHECK: math.fma
// CHECK: return
func.func @gelu_parts(%x: vector<16xf32>) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>) {
  %e = math.exp %x : vector<16xf32>
  %t = math.tanh %x : vector<16xf32>
  %r = math.erf %x : vector<16xf32>
  return %e, %t, %r : vector<16xf32>, vector<16xf32>, vector<16xf32>
}
