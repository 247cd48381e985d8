// --trainc-loop-to-gpu: each nest becomes a gpu.func kernel in
// gpu.module @trainc_kernels. A thread per point of the thread dimensions
// (parallel dimensions every output indexes on an axis of its own),
// innermost fastest; loops over the others; outputs indexed by thread
// dimensions only carried in registers; i1 buffers as bytes; loop.index
// as the point's index.
// RUN: trainc-opt %s --trainc-loop-to-gpu | FileCheck %s

// CHECK: module attributes {gpu.container_module}
// CHECK: gpu.module @trainc_kernels

// Elementwise with a broadcast: 640 points on blocks of 256; d1 (10) is
// the innermost, fastest-varying thread coordinate.
// CHECK-LABEL: gpu.func @k_nest0(
// CHECK-SAME: memref<64x10xf32>, %{{.*}}: memref<10xf32>, %{{.*}}: memref<64x10xf32>) kernel
// CHECK-SAME: known_block_size = array<i32: 256, 1, 1>
// CHECK: %[[TID:.*]] = gpu.thread_id x
// CHECK: %[[BID:.*]] = gpu.block_id x
// CHECK: %[[BASE:.*]] = arith.muli %[[BID]], %c256
// CHECK: %[[LIN:.*]] = arith.addi %[[BASE]], %[[TID]]
// CHECK: %[[IN:.*]] = arith.cmpi ult, %[[LIN]], %c640
// CHECK: scf.if %[[IN]]
// CHECK: %[[D1:.*]] = arith.remui %[[LIN]], %c10
// CHECK: %[[REST:.*]] = arith.divui %[[LIN]], %c10
// CHECK: %[[D0:.*]] = arith.remui %[[REST]], %c64
// CHECK: %[[X:.*]] = memref.load %arg0[%[[D0]], %[[D1]]]
// CHECK: %[[B:.*]] = memref.load %arg1[%[[D1]]]
// CHECK: %[[S:.*]] = arith.addf %[[X]], %[[B]]
// CHECK: memref.store %[[S]], %arg2[%[[D0]], %[[D1]]]
// CHECK: gpu.return
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#row = affine_map<(d0, d1) -> (d0)>
#scalar = affine_map<(d0, d1) -> ()>
#t = affine_map<(d0, d1) -> (d1, d0)>
func.func private @k(%x: memref<64x10xf32>, %b: memref<10xf32>, %y: memref<64x10xf32>) attributes {loop.kernel} {
  loop.nest ins(%x, %b : memref<64x10xf32>, memref<10xf32>) outs(%y : memref<64x10xf32>)
      domain = [64, 10] schedule = #loop.schedule<parallel = 0, tile = [1, 16], vectorize = true>
      attributes {indexing_maps = [#id, #col, #id], iterators = ["parallel", "parallel"]} {
  ^bb0(%a: f32, %c: f32, %out: f32):
    %s = arith.addf %a, %c : f32
    loop.yield %s : f32
  }
  return
}

// A row sum: one thread per row (8: a block of 8), the row's accumulator
// loaded once, carried through the loop over the 100 columns, stored once.
// CHECK-LABEL: gpu.func @sum_nest0(
// CHECK-SAME: known_block_size = array<i32: 8, 1, 1>
// CHECK: %[[ROW:.*]] = arith.remui
// CHECK: %[[INIT:.*]] = memref.load %arg1[%[[ROW]]]
// CHECK: %[[SUM:.*]] = scf.for %[[J:.*]] = %c0 to %c100 step %c1 iter_args(%[[ACC:.*]] = %[[INIT]]) -> (f32)
// CHECK: %[[V:.*]] = memref.load %arg0[%[[ROW]], %[[J]]]
// CHECK: %[[NEXT:.*]] = arith.addf %[[ACC]], %[[V]]
// CHECK: scf.yield %[[NEXT]]
// CHECK: memref.store %[[SUM]], %arg1[%[[ROW]]]
func.func private @sum(%x: memref<8x100xf32>, %y: memref<8xf32>) attributes {loop.kernel} {
  loop.nest ins(%x : memref<8x100xf32>) outs(%y : memref<8xf32>)
      domain = [8, 100] schedule = #loop.schedule<parallel = -1, tile = [1, 64], vectorize = true>
      attributes {indexing_maps = [#id, #row], iterators = ["parallel", "reduction"]} {
  ^bb0(%a: f32, %out: f32):
    %s = arith.addf %out, %a : f32
    loop.yield %s : f32
  }
  return
}

// A full reduction has no thread dimension: one thread, two loops.
// CHECK-LABEL: gpu.func @total_nest0(
// CHECK-SAME: known_block_size = array<i32: 1, 1, 1>
// CHECK: scf.for {{.*}} iter_args
// CHECK: scf.for {{.*}} iter_args
func.func private @total(%x: memref<8x100xf32>, %y: memref<f32>) attributes {loop.kernel} {
  loop.nest ins(%x : memref<8x100xf32>) outs(%y : memref<f32>)
      domain = [8, 100] schedule = #loop.schedule<parallel = -1, tile = [1, 64], vectorize = true>
      attributes {indexing_maps = [#id, #scalar], iterators = ["reduction", "reduction"]} {
  ^bb0(%a: f32, %out: f32):
    %s = arith.addf %out, %a : f32
    loop.yield %s : f32
  }
  return
}

// An i1 output is stored as a byte; loop.index 1 is the thread's column.
// CHECK-LABEL: gpu.func @mask_nest0(
// CHECK-SAME: memref<4x8xi8>) kernel
// CHECK: %[[COL:.*]] = arith.remui %{{.*}}, %c8
// CHECK: arith.index_cast %[[COL]] : index to i64
// CHECK: %[[P:.*]] = arith.cmpf ogt
// CHECK: %[[BYTE:.*]] = arith.extui %[[P]] : i1 to i8
// CHECK: memref.store %[[BYTE]], %arg1
func.func private @mask(%x: memref<4x8xf32>, %m: memref<4x8xi1>) attributes {loop.kernel} {
  loop.nest ins(%x : memref<4x8xf32>) outs(%m : memref<4x8xi1>)
      domain = [4, 8] schedule = #loop.schedule<parallel = -1, tile = [1, 8], vectorize = false>
      attributes {indexing_maps = [#id, #id], iterators = ["parallel", "parallel"]} {
  ^bb0(%a: f32, %out: i1):
    %i = loop.index 1 : index
    %c = arith.index_cast %i : index to i64
    %f = arith.sitofp %c : i64 to f32
    %p = arith.cmpf ogt, %a, %f : f32
    loop.yield %p : i1
  }
  return
}

// An output read through another map (a transpose in place): no thread
// may read what another writes, so one thread walks the domain in order.
// CHECK-LABEL: gpu.func @inplace_nest0(
// CHECK-SAME: known_block_size = array<i32: 1, 1, 1>
// CHECK: scf.for %[[I:.*]] =
// CHECK: scf.for %[[J:.*]] =
// CHECK: %[[V:.*]] = memref.load %arg0[%[[J]], %[[I]]]
// CHECK: memref.store %[[V]], %arg0[%[[I]], %[[J]]]
// CHECK-NOT: func.func
func.func private @inplace(%x: memref<8x8xf32>) attributes {loop.kernel} {
  loop.nest ins(%x : memref<8x8xf32>) outs(%x : memref<8x8xf32>)
      domain = [8, 8] schedule = #loop.schedule<parallel = -1, tile = [1, 8], vectorize = false>
      attributes {indexing_maps = [#t, #id], iterators = ["parallel", "parallel"]} {
  ^bb0(%a: f32, %out: f32):
    loop.yield %a : f32
  }
  return
}
