// --trainc-widen-low-floats: bf16 and f16 elements are widened once where
// they enter a nest's body, computed in f32, and rounded once where they
// are stored; a rounding the body states (a cast to bf16) stays.
// RUN: trainc-opt %s --trainc-widen-low-floats | FileCheck %s
// RUN: trainc-opt %s --trainc-widen-low-floats --trainc-lower-loop-nests --canonicalize | FileCheck %s --check-prefix=LOWERED

// A fused add + ReLU on bf16: one extf per input, f32 arithmetic (the
// constant too), one truncf before the yield.
// CHECK-LABEL: func.func @add_relu
// CHECK: ^bb0(%[[A:.*]]: bf16, %[[B:.*]]: bf16, %{{.*}}: bf16):
// CHECK-NEXT: %[[A32:.*]] = arith.extf %[[A]] : bf16 to f32
// CHECK-NEXT: %[[B32:.*]] = arith.extf %[[B]] : bf16 to f32
// CHECK-NEXT: %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: %[[S:.*]] = arith.addf %[[A32]], %[[B32]] : f32
// CHECK-NEXT: %[[R:.*]] = arith.maximumf %[[S]], %[[Z]] : f32
// CHECK-NEXT: %[[R16:.*]] = arith.truncf %[[R]] : f32 to bf16
// CHECK-NEXT: loop.yield %[[R16]] : bf16
// LOWERED-LABEL: func.func @add_relu_nest0
// LOWERED: vector.transfer_read {{.*}} : memref<16xbf16, {{.*}}>, vector<16xbf16>
// LOWERED: arith.extf {{.*}} : vector<16xbf16> to vector<16xf32>
// LOWERED: arith.addf {{.*}} : vector<16xf32>
// LOWERED: arith.truncf {{.*}} : vector<16xf32> to vector<16xbf16>
func.func @add_relu(%a: memref<64xbf16>, %b: memref<64xbf16>, %y: memref<64xbf16>) attributes {loop.kernel} {
  loop.nest ins(%a, %b : memref<64xbf16>, memref<64xbf16>) outs(%y : memref<64xbf16>) domain = [64] schedule = #loop.schedule<parallel = -1, tile = [16], vectorize = true> attributes {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterators = ["parallel"]} {
  ^bb0(%x0: bf16, %x1: bf16, %out: bf16):
    %zero = arith.constant 0.0 : bf16
    %s = arith.addf %x0, %x1 : bf16
    %r = arith.maximumf %s, %zero : bf16
    loop.yield %r : bf16
  }
  return
}

// A cast to bf16 fused between f32 ops keeps its rounding; the product
// after it reads the rounded value widened again and stores f32.
// CHECK-LABEL: func.func @rounding_kept
// CHECK: ^bb0(%[[X:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[H:.*]] = arith.truncf %[[X]] : f32 to bf16
// CHECK-NEXT: %[[H32:.*]] = arith.extf %[[H]] : bf16 to f32
// CHECK-NEXT: %[[P:.*]] = arith.mulf %[[H32]], %[[H32]] : f32
// CHECK-NEXT: loop.yield %[[P]] : f32
func.func @rounding_kept(%x: memref<64xf32>, %y: memref<64xf32>) attributes {loop.kernel} {
  loop.nest ins(%x : memref<64xf32>) outs(%y : memref<64xf32>) domain = [64] schedule = #loop.schedule<parallel = -1, tile = [16], vectorize = true> attributes {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterators = ["parallel"]} {
  ^bb0(%x0: f32, %out: f32):
    %h = arith.truncf %x0 : f32 to bf16
    %p = arith.mulf %h, %h : bf16
    %w = arith.extf %p : bf16 to f32
    loop.yield %w : f32
  }
  return
}

// f32 nests are left alone.
// CHECK-LABEL: func.func @f32_only
// CHECK-NOT: arith.extf
// CHECK-NOT: arith.truncf
// CHECK: return
func.func @f32_only(%x: memref<8xf32>, %y: memref<8xf32>) attributes {loop.kernel} {
  loop.nest ins(%x : memref<8xf32>) outs(%y : memref<8xf32>) domain = [8] schedule = #loop.schedule<parallel = -1, tile = [8], vectorize = true> attributes {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterators = ["parallel"]} {
  ^bb0(%x0: f32, %out: f32):
    %n = arith.negf %x0 : f32
    loop.yield %n : f32
  }
  return
}

// Bits reinterpreted (a max pooling's pairs of bf16 taps, an i32 each):
// the bf16 a bitcast makes is widened for the maximum like any element,
// and the bitcast back to bits reads the rounded bf16, not its widening.
// CHECK-LABEL: func.func @pair_bits
// CHECK: %[[LO:.*]] = arith.bitcast %{{.*}} : i16 to bf16
// CHECK-NEXT: %[[LO32:.*]] = arith.extf %[[LO]] : bf16 to f32
// CHECK: %[[M:.*]] = arith.maximumf %[[LO32]], %{{.*}} : f32
// CHECK-NEXT: %[[M16:.*]] = arith.truncf %[[M]] : f32 to bf16
// CHECK: arith.bitcast %[[M16]] : bf16 to i16
func.func @pair_bits(%a: memref<64xi32>, %y: memref<64xi16>) attributes {loop.kernel} {
  loop.nest ins(%a : memref<64xi32>) outs(%y : memref<64xi16>) domain = [64] schedule = #loop.schedule<parallel = -1, tile = [16], vectorize = true> attributes {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterators = ["parallel"]} {
  ^bb0(%pair: i32, %out: i16):
    %c16 = arith.constant 16 : i32
    %high = arith.shrui %pair, %c16 : i32
    %lo_bits = arith.trunci %pair : i32 to i16
    %hi_bits = arith.trunci %high : i32 to i16
    %lo = arith.bitcast %lo_bits : i16 to bf16
    %hi = arith.bitcast %hi_bits : i16 to bf16
    %m = arith.maximumf %lo, %hi : bf16
    %bits = arith.bitcast %m : bf16 to i16
    loop.yield %bits : i16
  }
  return
}
