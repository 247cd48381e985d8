// --trainc-lower-loop-nests: each nest becomes @KERNEL_nestN(begin, end,
// buffers...) over one block of its parallel dimension, tiled by
// scf::tileUsingSCF and vectorized with masks; i1 buffers travel as bytes.
// RUN: trainc-opt %s --trainc-lower-loop-nests -split-input-file | FileCheck %s

// A parallel, vectorized elementwise nest: the block [begin*1, end*1) of
// rows, tiles of 1x16, masked vectors at the row's tail (10 of 16 lanes).
// CHECK-LABEL: func.func @k_nest0(
// CHECK-SAME: %[[BEGIN:.*]]: index, %[[END:.*]]: index, %{{.*}}: memref<64x10xf32>, %{{.*}}: memref<10xf32>, %{{.*}}: memref<64x10xf32>)
// CHECK: arith.minsi
// CHECK: memref.subview {{.*}} to memref<?x10xf32, strided<[10, 1], offset: ?>>
// CHECK: scf.for
// CHECK: vector.create_mask {{.*}} : vector<1x16xi1>
// CHECK: vector.mask {{.*}} vector.transfer_read
// CHECK: arith.addf {{.*}} : vector<1x16xf32>
// CHECK: vector.mask {{.*}} vector.transfer_write
// CHECK-NOT: func.func private @k(
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
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

// -----

// A row reduction: the accumulator is read, reduced with the tile and
// written back (vector.multi_reduction under a mask).
// CHECK-LABEL: func.func @sum_nest0(
// CHECK: vector.multi_reduction <add>
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func private @sum(%x: memref<8x100xf32>, %y: memref<8xf32>) attributes {loop.kernel} {
  loop.nest ins(%x : memref<8x100xf32>) outs(%y : memref<8xf32>)
      domain = [8, 100] schedule = #loop.schedule<parallel = -1, tile = [1, 64], vectorize = true>
      attributes {indexing_maps = [#id, #row], iterators = ["parallel", "reduction"]} {
  ^bb0(%a: f32, %out: f32):
    %s = arith.addf %a, %out : f32
    loop.yield %s : f32
  }
  return
}

// -----

// A transpose is not vectorized (strided reads): scalar loops. Booleans are
// bytes at the boundary, narrowed inside.
// CHECK-LABEL: func.func @flip_nest0(
// CHECK-SAME: memref<3x4xi8>, %{{.*}}: memref<4x3xi8>)
// CHECK: memref.load {{.*}} : memref<{{.*}}xi8
// CHECK-NOT: vector.
// CHECK: memref.store {{.*}} : memref<{{.*}}xi8
#id = affine_map<(d0, d1) -> (d0, d1)>
#t = affine_map<(d0, d1) -> (d1, d0)>
func.func private @flip(%x: memref<3x4xi1>, %y: memref<4x3xi1>) attributes {loop.kernel} {
  loop.nest ins(%x : memref<3x4xi1>) outs(%y : memref<4x3xi1>)
      domain = [4, 3] schedule = #loop.schedule<parallel = -1, tile = [1, 16], vectorize = false>
      attributes {indexing_maps = [#t, #id], iterators = ["parallel", "parallel"]} {
  ^bb0(%a: i1, %out: i1):
    %n = arith.xori %a, %a : i1
    loop.yield %a : i1
  }
  return
}
