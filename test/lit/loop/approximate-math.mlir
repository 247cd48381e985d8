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

// erf: x P(x^2) inside |x| < 1, sign(x) (1 - Q(min(|x|, 4) - 2.5)) beyond,
// both computed and one selected by an ordered compare (NaN stays NaN); no
// division, no interval blends of coefficients.
// CHECK-LABEL: func.func @erf
// CHECK-SAME: (%[[X:.*]]: vector<16xf32>)
// CHECK: %[[ABS:.*]] = math.absf %[[X]]
// CHECK: %[[SQ:.*]] = arith.mulf %[[X]], %[[X]]
// CHECK-COUNT-6: math.fma %[[SQ]]
// CHECK: %[[SMALL:.*]] = arith.mulf %[[X]]
// CHECK: %[[OVER:.*]] = arith.cmpf ogt, %[[ABS]]
// CHECK: %[[CLAMPED:.*]] = arith.select %[[OVER]], %{{.*}}, %[[ABS]]
// CHECK: %[[U:.*]] = arith.subf %[[CLAMPED]]
// CHECK-COUNT-12: math.fma %[[U]]
// CHECK: %[[ONE_MINUS:.*]] = arith.subf
// CHECK: %[[TAIL:.*]] = math.copysign %[[ONE_MINUS]], %[[X]]
// CHECK: %[[INNER:.*]] = arith.cmpf olt, %[[ABS]]
// CHECK: %[[R:.*]] = arith.select %[[INNER]], %[[SMALL]], %[[TAIL]]
// CHECK-NOT: arith.divf
// CHECK: return %[[R]]
func.func @erf(%x: vector<16xf32>) -> vector<16xf32> {
  %r = math.erf %x : vector<16xf32>
  return %r : vector<16xf32>
}
