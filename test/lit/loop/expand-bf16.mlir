// --trainc-expand-bf16: conversions to and from bf16 become integer
// arithmetic (round to nearest even), so no CPU needs a library call for
// them; where the target converts natively (native-narrowing) they are
// left to LLVM (the same bits, but for f32 denormals, flushed to zero).
// RUN: trainc-opt %s --trainc-expand-bf16 | FileCheck %s
// Through the whole lowering and LLVM for an AVX2-only CPU (Zen 3): no call
// to __truncsfbf2, which nothing here would link.
// RUN: trainc-opt %s --trainc-loop-to-llvm | mlir-translate --mlir-to-llvmir \
// RUN:   | llc -O3 -mtriple=x86_64-unknown-linux-gnu -mcpu=znver3 \
// RUN:   | FileCheck %s --check-prefix=ZEN3
// ZEN3-NOT: __truncsfbf2
// ZEN3-NOT: call
// For a CPU with AVX512-BF16 (native-narrowing), the conversions stay
// arith ops, which LLVM narrows with vcvtneps2bf16; bf16 arithmetic is
// still widened to f32.
// RUN: trainc-opt %s --trainc-expand-bf16=native-narrowing=true \
// RUN:   | FileCheck %s --check-prefix=NATIVE
// NATIVE-LABEL: func.func @narrow
// NATIVE: arith.truncf %{{.*}} : vector<8xf32> to vector<8xbf16>
// NATIVE-LABEL: func.func @widen
// NATIVE: arith.extf %{{.*}} : vector<8xbf16> to vector<8xf32>
// The whole lowering told so (--trainc-loop-to-llvm=native-bf16=true, as
// trainc compile does for such a target) leaves LLVM an fptrunc:
// RUN: trainc-opt %s --trainc-loop-to-llvm=native-bf16=true \
// RUN:   | FileCheck %s --check-prefix=WHOLE
// WHOLE-LABEL: llvm.func @narrow
// WHOLE: llvm.fptrunc %{{.*}} : vector<8xf32> to vector<8xbf16>

// CHECK-LABEL: func.func @narrow
// CHECK-NOT: arith.truncf
// CHECK: arith.cmpf une
// CHECK: arith.bitcast %{{.*}} : vector<8xf32> to vector<8xi32>
// CHECK: arith.trunci %{{.*}} : vector<8xi32> to vector<8xi16>
// CHECK: arith.bitcast %{{.*}} : vector<8xi16> to vector<8xbf16>
func.func @narrow(%x: vector<8xf32>) -> vector<8xbf16> {
  %r = arith.truncf %x : vector<8xf32> to vector<8xbf16>
  return %r : vector<8xbf16>
}

// CHECK-LABEL: func.func @widen
// CHECK-NOT: arith.extf
// CHECK: arith.extui %{{.*}} : vector<8xi16> to vector<8xi32>
// CHECK: arith.shli
func.func @widen(%x: vector<8xbf16>) -> vector<8xf32> {
  %r = arith.extf %x : vector<8xbf16> to vector<8xf32>
  return %r : vector<8xf32>
}

// f16 is left to LLVM (F16C converts it on every CPU we ship to).
// CHECK-LABEL: func.func @half
// CHECK: arith.truncf %{{.*}} : f32 to f16
func.func @half(%x: f32) -> f16 {
  %r = arith.truncf %x : f32 to f16
  return %r : f16
}

// Arithmetic on bf16 (a max pooling's maximum) runs in f32 and is rounded
// back, with the rounding expanded too.
// CHECK-LABEL: func.func @max
// CHECK-NOT: arith.truncf
// CHECK: arith.maximumf %{{.*}}, %{{.*}} : vector<8xf32>
// CHECK: arith.trunci %{{.*}} : vector<8xi32> to vector<8xi16>
func.func @max(%x: vector<8xbf16>, %y: vector<8xbf16>) -> vector<8xbf16> {
  %r = arith.maximumf %x, %y : vector<8xbf16>
  return %r : vector<8xbf16>
}
// NATIVE-LABEL: func.func @max
// NATIVE: arith.extf %{{.*}} : vector<8xbf16> to vector<8xf32>
// NATIVE: arith.maximumf %{{.*}}, %{{.*}} : vector<8xf32>
// NATIVE: arith.truncf %{{.*}} : vector<8xf32> to vector<8xbf16>
