// --trainc-lower-loop-nests: each nest becomes @KERNEL_nestN(begin, end,
// buffers...) over one block of its parallel dimension, tiled by
// scf::tileUsingSCF and vectorized with masks; i1 buffers travel as bytes;
// loop.index becomes linalg.index offset by the block.
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

// -----

// loop.index counts over the whole domain: along the parallel dimension the
// block's start is added to linalg.index, and tiling adds each tile's
// start (scalar loops here: linalg.index becomes the loop variables).
// CHECK-LABEL: func.func @positions_nest0(
// CHECK-SAME: %[[BEGIN:.*]]: index, %[[END:.*]]: index,
// CHECK: %[[START:.*]] = arith.muli %[[BEGIN]], %c4
// CHECK: scf.for %[[TILE_ROW:.*]] = {{.*}} step %c4
// CHECK: scf.for %[[TILE_COL:.*]] = {{.*}} step %c16
// CHECK: scf.for %[[ROW:.*]] =
// CHECK: scf.for %[[COL:.*]] =
// CHECK: %[[IN_BLOCK:.*]] = affine.apply #{{.*}}(%[[TILE_ROW]])[%[[ROW]]]
// CHECK: %[[R:.*]] = arith.addi %[[IN_BLOCK]], %[[START]]
// CHECK: %[[C:.*]] = affine.apply #{{.*}}(%[[TILE_COL]])[%[[COL]]]
// CHECK: arith.addi %[[R]], %[[C]]
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func private @positions(%y: memref<64x10xi64>) attributes {loop.kernel} {
  loop.nest outs(%y : memref<64x10xi64>)
      domain = [64, 10] schedule = #loop.schedule<parallel = 0, tile = [4, 16], vectorize = false>
      attributes {indexing_maps = [#id], iterators = ["parallel", "parallel"]} {
  ^bb0(%out: i64):
    %r = loop.index 0 : index
    %c = loop.index 1 : index
    %s = arith.addi %r, %c : index
    %si = arith.index_cast %s : index to i64
    loop.yield %si : i64
  }
  return
}

// -----

// Vectorized, a class index is a vector.step plus the tile's start, compared
// with the row's label broadcast along the classes.
// CHECK-LABEL: func.func @label_score_nest0(
// CHECK: scf.for
// CHECK: scf.for %[[TILE:.*]] = {{.*}} step %c16
// CHECK: %[[LABEL:.*]] = vector.transfer_read {{.*}} : memref<1xi64, {{.*}}>, vector<1x16xi64>
// CHECK: %[[STEP:.*]] = vector.step : vector<16xindex>
// CHECK: %[[START:.*]] = vector.broadcast %[[TILE]] : index to vector<16xindex>
// CHECK: %[[CLASS:.*]] = arith.addi %[[START]], %[[STEP]]
// CHECK: %[[CLASS64:.*]] = arith.index_cast %[[CLASS]] : vector<16xindex> to vector<16xi64>
// CHECK: %[[CLASSES:.*]] = vector.broadcast %[[CLASS64]] : vector<16xi64> to vector<1x16xi64>
// CHECK: %[[HIT:.*]] = arith.cmpi eq, %[[CLASSES]], %[[LABEL]]
// CHECK: arith.select %[[HIT]]
// CHECK: vector.multi_reduction <add>
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func private @label_score(%x: memref<64x10xf32>, %labels: memref<64xi64>, %y: memref<64xf32>) attributes {loop.kernel} {
  loop.nest ins(%x, %labels : memref<64x10xf32>, memref<64xi64>) outs(%y : memref<64xf32>)
      domain = [64, 10] schedule = #loop.schedule<parallel = -1, tile = [1, 16], vectorize = true>
      attributes {indexing_maps = [#id, #row, #row], iterators = ["parallel", "reduction"]} {
  ^bb0(%a: f32, %label: i64, %out: f32):
    %c = loop.index 1 : index
    %ci = arith.index_cast %c : index to i64
    %hit = arith.cmpi eq, %ci, %label : i64
    %zero = arith.constant 0.0 : f32
    %picked = arith.select %hit, %a, %zero : f32
    %s = arith.addf %out, %picked : f32
    loop.yield %s : f32
  }
  return
}
