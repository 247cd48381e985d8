// --trainc-bf16-accesses-as-i16: loads and stores of bf16 vectors, masked
// or not, become the same accesses of i16 vectors, bitcast around them.
// RUN: trainc-opt %s --trainc-bf16-accesses-as-i16 | FileCheck %s
// For an AVX2-only CPU (Zen 3), LLVM splits masked accesses of bf16 lane by
// lane (each store called __truncsfbf2, which nothing links), and a select
// of bf16 vectors (instcombine moves the bitcast of a narrowing's NaN
// select before it when the store is of bf16) into a compare and branch
// per lane.
// RUN: trainc-opt %s --trainc-bf16-accesses-as-i16 | mlir-translate --mlir-to-llvmir \
// RUN:   | opt -O3 -mtriple=x86_64-unknown-linux-gnu -mcpu=znver3 \
// RUN:   | llc -O3 -mtriple=x86_64-unknown-linux-gnu -mcpu=znver3 \
// RUN:   | FileCheck %s --check-prefix=ZEN3
// ZEN3-NOT: __truncsfbf2
// ZEN3-LABEL: narrow_row:
// ZEN3-NOT: ucomiss
// ZEN3: vpblendvb
// ZEN3-NOT: ucomiss
// ZEN3: ret

// CHECK-LABEL: llvm.func @copy_row_tail
// CHECK: %[[PASS:.*]] = llvm.bitcast %{{.*}} : vector<16xbf16> to vector<16xi16>
// CHECK: %[[BITS:.*]] = llvm.intr.masked.load %{{.*}}, %{{.*}}, %[[PASS]] {alignment = 2 : i32} : (!llvm.ptr, vector<16xi1>, vector<16xi16>) -> vector<16xi16>
// CHECK: %[[LOADED:.*]] = llvm.bitcast %[[BITS]] : vector<16xi16> to vector<16xbf16>
// CHECK: %[[STORED:.*]] = llvm.bitcast %[[LOADED]] : vector<16xbf16> to vector<16xi16>
// CHECK: llvm.intr.masked.store %[[STORED]], %{{.*}}, %{{.*}} {alignment = 2 : i32} : vector<16xi16>, vector<16xi1> into !llvm.ptr
llvm.func @copy_row_tail(%from: !llvm.ptr, %to: !llvm.ptr, %mask: vector<16xi1>) {
  %zero = llvm.mlir.zero : vector<16xbf16>
  %v = llvm.intr.masked.load %from, %mask, %zero {alignment = 2 : i32} : (!llvm.ptr, vector<16xi1>, vector<16xbf16>) -> vector<16xbf16>
  llvm.intr.masked.store %v, %to, %mask {alignment = 2 : i32} : vector<16xbf16>, vector<16xi1> into !llvm.ptr
  llvm.return
}

// f32 accesses are left alone.
// CHECK-LABEL: llvm.func @f32_row_tail
// CHECK-NOT: llvm.bitcast
// CHECK: llvm.intr.masked.store %{{.*}} : vector<16xf32>, vector<16xi1> into !llvm.ptr
llvm.func @f32_row_tail(%to: !llvm.ptr, %v: vector<16xf32>, %mask: vector<16xi1>) {
  llvm.intr.masked.store %v, %to, %mask {alignment = 4 : i32} : vector<16xf32>, vector<16xi1> into !llvm.ptr
  llvm.return
}

// f32 -> bf16 as --trainc-expand-bf16 narrows on AVX2 (round to nearest
// even, NaN made quiet by a select of i16 values), stored as bf16.
// CHECK-LABEL: llvm.func @narrow_row
// CHECK: %[[BITS:.*]] = llvm.bitcast %{{.*}} : vector<16xbf16> to vector<16xi16>
// CHECK: llvm.store %[[BITS]], %{{.*}} : vector<16xi16>, !llvm.ptr
llvm.func @narrow_row(%from: !llvm.ptr, %to: !llvm.ptr) {
  %x = llvm.load %from {alignment = 4 : i64} : !llvm.ptr -> vector<16xf32>
  %bits = llvm.bitcast %x : vector<16xf32> to vector<16xi32>
  %c16 = llvm.mlir.constant(dense<16> : vector<16xi32>) : vector<16xi32>
  %c1 = llvm.mlir.constant(dense<1> : vector<16xi32>) : vector<16xi32>
  %bias = llvm.mlir.constant(dense<32767> : vector<16xi32>) : vector<16xi32>
  %nan = llvm.mlir.constant(dense<32704> : vector<16xi16>) : vector<16xi16>
  %high = llvm.lshr %bits, %c16 : vector<16xi32>
  %odd = llvm.and %high, %c1 : vector<16xi32>
  %biased = llvm.add %bits, %bias : vector<16xi32>
  %rounded = llvm.add %biased, %odd : vector<16xi32>
  %top = llvm.lshr %rounded, %c16 : vector<16xi32>
  %narrow = llvm.trunc %top : vector<16xi32> to vector<16xi16>
  %isnan = llvm.fcmp "uno" %x, %x : vector<16xf32>
  %chosen = llvm.select %isnan, %nan, %narrow : vector<16xi1>, vector<16xi16>
  %y = llvm.bitcast %chosen : vector<16xi16> to vector<16xbf16>
  llvm.store %y, %to {alignment = 2 : i64} : vector<16xbf16>, !llvm.ptr
  llvm.return
}

// A bf16 vector loaded whole is read as i16 bits.
// CHECK-LABEL: llvm.func @load_row
// CHECK: %[[BITS:.*]] = llvm.load %{{.*}} {alignment = 2 : i64} : !llvm.ptr -> vector<16xi16>
// CHECK: llvm.bitcast %[[BITS]] : vector<16xi16> to vector<16xbf16>
llvm.func @load_row(%from: !llvm.ptr) -> vector<16xbf16> {
  %v = llvm.load %from {alignment = 2 : i64} : !llvm.ptr -> vector<16xbf16>
  llvm.return %v : vector<16xbf16>
}
