// --trainc-masked-bf16-as-i16: masked loads and stores of bf16 vectors
// become the same accesses of i16 vectors, bitcast around them.
// RUN: trainc-opt %s --trainc-masked-bf16-as-i16 | FileCheck %s
// For an AVX2-only CPU (Zen 3), LLVM splits such accesses lane by lane;
// with bf16 lanes each store called __truncsfbf2, which nothing links.
// RUN: trainc-opt %s --trainc-masked-bf16-as-i16 | mlir-translate --mlir-to-llvmir \
// RUN:   | llc -O3 -mtriple=x86_64-unknown-linux-gnu -mcpu=znver3 \
// RUN:   | FileCheck %s --check-prefix=ZEN3
// ZEN3-NOT: __truncsfbf2

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
