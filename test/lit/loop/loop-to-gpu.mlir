// --trainc-loop-to-gpu: each nest becomes a gpu.func kernel in
// gpu.module @trainc_kernels. A thread per point of the thread dimensions
// (parallel dimensions every output indexes on an axis of its own),
// innermost fastest; loops over the others; outputs indexed by thread
// dimensions only carried in registers; few points with long reductions
// as block reductions; i1 buffers as bytes; loop.index as the point's
// index.
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

// Rows of 8: one thread per row (128: a block of 128), the row's
// accumulator loaded once, carried through the loop over the columns,
// stored once.
// CHECK-LABEL: gpu.func @rows_nest0(
// CHECK-SAME: known_block_size = array<i32: 128, 1, 1>
// CHECK: %[[ROW:.*]] = arith.remui
// CHECK: %[[INIT:.*]] = memref.load %arg1[%[[ROW]]]
// CHECK: %[[SUM:.*]] = scf.for %[[J:.*]] = %c0 to %c8 step %c1 iter_args(%[[ACC:.*]] = %[[INIT]]) -> (f32)
// CHECK: %[[V:.*]] = memref.load %arg0[%[[ROW]], %[[J]]]
// CHECK: %[[NEXT:.*]] = arith.addf %[[ACC]], %[[V]]
// CHECK: scf.yield %[[NEXT]]
// CHECK: memref.store %[[SUM]], %arg1[%[[ROW]]]
func.func private @rows(%x: memref<128x8xf32>, %y: memref<128xf32>) attributes {loop.kernel} {
  loop.nest ins(%x : memref<128x8xf32>) outs(%y : memref<128xf32>)
      domain = [128, 8] schedule = #loop.schedule<parallel = -1, tile = [1, 8], vectorize = true>
      attributes {indexing_maps = [#id, #row], iterators = ["parallel", "reduction"]} {
  ^bb0(%a: f32, %out: f32):
    %s = arith.addf %out, %a : f32
    loop.yield %s : f32
  }
  return
}

// 8 rows of 100: few points, a long reduction, accumulated by addf: a
// block reduction. A block per row, of 64 threads (the warps 100 points
// fill); thread t sums columns t, t + 64, ... from -0, gpu.all_reduce adds
// the threads' sums, thread 0 adds the total to the output.
// CHECK-LABEL: gpu.func @sum_nest0(
// CHECK-SAME: known_block_size = array<i32: 64, 1, 1>
// CHECK: %[[BLOCK:.*]] = gpu.block_id x
// CHECK: %[[ROW:.*]] = arith.remui %[[BLOCK]], %c8
// CHECK: %[[T:.*]] = gpu.thread_id x
// CHECK: %[[ZERO:.*]] = arith.constant -0.000000e+00 : f32
// CHECK: %[[PART:.*]] = scf.for %[[J:.*]] = %[[T]] to %c100 step %c64 iter_args(%[[ACC:.*]] = %[[ZERO]]) -> (f32)
// CHECK: %[[V:.*]] = memref.load %arg0[%[[ROW]], %{{.*}}]
// CHECK: arith.addf %[[ACC]]
// CHECK: %[[TOTAL:.*]] = gpu.all_reduce add %[[PART]] uniform
// CHECK: %[[FIRST:.*]] = arith.cmpi eq, %[[T]], %c0
// CHECK: scf.if %[[FIRST]]
// CHECK: %[[OLD:.*]] = memref.load %arg1[%[[ROW]]]
// CHECK: %[[NEW:.*]] = arith.addf %[[OLD]], %[[TOTAL]]
// CHECK: memref.store %[[NEW]], %arg1[%[[ROW]]]
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

// The maximum of each row: neutral -inf, combined by maximumf.
// CHECK-LABEL: gpu.func @rowmax_nest0(
// CHECK: arith.constant 0xFF800000 : f32
// CHECK: gpu.all_reduce maximumf
// CHECK: arith.maximumf
func.func private @rowmax(%x: memref<8x100xf32>, %y: memref<8xf32>) attributes {loop.kernel} {
  loop.nest ins(%x : memref<8x100xf32>) outs(%y : memref<8xf32>)
      domain = [8, 100] schedule = #loop.schedule<parallel = -1, tile = [1, 64], vectorize = true>
      attributes {indexing_maps = [#id, #row], iterators = ["parallel", "reduction"]} {
  ^bb0(%a: f32, %out: f32):
    %s = arith.maximumf %out, %a : f32
    loop.yield %s : f32
  }
  return
}

// A full reduction has no thread dimension: one block of 256 threads
// over the 800 points.
// CHECK-LABEL: gpu.func @total_nest0(
// CHECK-SAME: known_block_size = array<i32: 256, 1, 1>
// CHECK: scf.for {{.*}} to %c800 step %c256 iter_args
// CHECK: gpu.all_reduce add
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

// A wrapping input (a read one column before its row lands at the end of
// the row before): loaded from the buffer seen flat, at the element's
// row-major offset.
// CHECK-LABEL: gpu.func @wrapping_nest0(
// CHECK: %[[FLAT:.*]] = memref.collapse_shape %arg0 {{\[\[}}0, 1]] : memref<64x10xf32> into memref<640xf32>
// CHECK: %[[ROW:.*]] = arith.muli %{{.*}}, %{{.*}} : index
// CHECK: %[[AT:.*]] = arith.addi %[[ROW]], %{{.*}} : index
// CHECK: %[[OFFSET:.*]] = arith.addi %[[AT]], %{{.*}} : index
// CHECK: memref.load %[[FLAT]][%[[OFFSET]]] : memref<640xf32>
#left = affine_map<(d0, d1) -> (d0 + 1, d1 - 1)>
func.func private @wrapping(%x: memref<64x10xf32>, %y: memref<63x10xf32>) attributes {loop.kernel} {
  loop.nest ins(%x : memref<64x10xf32>) outs(%y : memref<63x10xf32>)
      domain = [63, 10] schedule = #loop.schedule<parallel = 0, tile = [1, 16], vectorize = true>
      attributes {indexing_maps = [#left, #id], iterators = ["parallel", "parallel"], wrapping_inputs = array<i64: 0>} {
  ^bb0(%a: f32, %out: f32):
    loop.yield %a : f32
  }
  return
}
