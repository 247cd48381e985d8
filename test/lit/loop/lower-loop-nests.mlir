// --trainc-lower-loop-nests: each nest becomes @KERNEL_nestN(begin, end,
// buffers...) over one block of its parallel dimension, tiled by
// scf::tileUsingSCF and vectorized with masks; i1 buffers travel as bytes;
// loop.index becomes linalg.index offset by the block. The innermost tile
// loop is peeled: its full tiles need no mask once canonicalized.
// RUN: trainc-opt %s --trainc-lower-loop-nests -split-input-file | FileCheck %s
// RUN: trainc-opt %s --trainc-lower-loop-nests --canonicalize -split-input-file | FileCheck %s --check-prefix=PEEL

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

// -----

// A strided, offset slice x[1:9:2, 3:40] read by a parallel, vectorized
// nest: the slice is a view (offset 1 + 2 * begin rows, row stride 2) in
// which both dimensions are plain, so the vectorizer takes it.
// CHECK-LABEL: func.func @slice_nest0(
// CHECK-SAME: %[[BEGIN:.*]]: index, %{{.*}}: index, %[[X:.*]]: memref<16x40xf32>, %{{.*}}: memref<4x37xf32>)
// CHECK: %[[ROW:.*]] = arith.muli %{{.*}}, %c2 : index
// CHECK: %[[START:.*]] = arith.addi %[[ROW]], %c1{{.*}} : index
// CHECK: memref.subview %[[X]][%[[START]], 3] [%{{.*}}, 37] [2, 1] : memref<16x40xf32> to memref<?x37xf32, strided<[80, 1], offset: ?>>
// CHECK: vector.transfer_read {{.*}} vector<1x64xf32>
#slice = affine_map<(d0, d1) -> (d0 * 2 + 1, d1 + 3)>
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func private @slice(%x: memref<16x40xf32>, %y: memref<4x37xf32>) attributes {loop.kernel} {
  loop.nest ins(%x : memref<16x40xf32>) outs(%y : memref<4x37xf32>)
      domain = [4, 37] schedule = #loop.schedule<parallel = 0, tile = [1, 64], vectorize = true>
      attributes {indexing_maps = [#slice, #id], iterators = ["parallel", "parallel"]} {
  ^bb0(%a: f32, %out: f32):
    loop.yield %a : f32
  }
  return
}

// -----

// A constant result drops its axis (a rank-reducing view of row 2); an
// output written at an offset is a view too (the second part of a
// concatenation).
// CHECK-LABEL: func.func @concat_nest0(
// CHECK: memref.subview %{{.*}}[2, 0] [1, 8] [1, 1] : memref<4x8xf32> to memref<8xf32, strided<[1], offset: 16>>
// CHECK: memref.subview %{{.*}}[3] [8] [1] : memref<11xf32> to memref<8xf32, strided<[1], offset: 3>>
// CHECK: vector.transfer_write {{.*}} : vector<16xf32>
#row = affine_map<(d0) -> (2, d0)>
#shifted = affine_map<(d0) -> (d0 + 3)>
func.func private @concat(%m: memref<4x8xf32>, %z: memref<11xf32>) attributes {loop.kernel} {
  loop.nest ins(%m : memref<4x8xf32>) outs(%z : memref<11xf32>)
      domain = [8] schedule = #loop.schedule<parallel = -1, tile = [16], vectorize = true>
      attributes {indexing_maps = [#row, #shifted], iterators = ["parallel"]} {
  ^bb0(%a: f32, %out: f32):
    loop.yield %a : f32
  }
  return
}

// -----

// A max pool of windows 3 wide, stride 2: the input's columns sum the
// window position and the tap, so the nest runs as scalar loops (tiles of
// one point are the loops themselves, no tiling). The taps appear in no
// other map: a zero-stride view of the output gives linalg their extent.
// CHECK-LABEL: func.func @pool_nest0(
// CHECK: memref.reinterpret_cast %{{.*}} to offset: [0], sizes: [3], strides: [0] : memref<8x4xf32> to memref<3xf32, strided<[0]>>
// CHECK: scf.for %[[N:.*]] =
// CHECK: scf.for %[[O:.*]] =
// CHECK: scf.for %[[K:.*]] =
// CHECK: %[[COL:.*]] = affine.apply #{{.*}}(%[[O]], %[[K]])
// CHECK: memref.load %{{.*}}[%{{.*}}, %[[COL]]] : memref<?x9xf32, strided<[9, 1], offset: ?>>
// CHECK: arith.maximumf
// CHECK-NOT: vector.
#window = affine_map<(d0, d1, d2) -> (d0, d1 * 2 + d2)>
#pos = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func private @pool(%x: memref<8x9xf32>, %y: memref<8x4xf32>) attributes {loop.kernel} {
  loop.nest ins(%x : memref<8x9xf32>) outs(%y : memref<8x4xf32>)
      domain = [8, 4, 3] schedule = #loop.schedule<parallel = 0, tile = [1, 1, 1], vectorize = false>
      attributes {indexing_maps = [#window, #pos], iterators = ["parallel", "parallel", "reduction"]} {
  ^bb0(%a: f32, %out: f32):
    %m = arith.maximumf %a, %out : f32
    loop.yield %m : f32
  }
  return
}

// -----

// Unrolling budget: a copy of 28 rows of 768 floats in tiles of 64 (no
// parallel dimension). The loop over a row's 12 tiles stays LLVM's to
// unroll; fully unrolled, the loops around it would be 336 tiles in one
// block, so they carry unroll-disable annotations (--trainc-loop-to-llvm
// makes them !llvm.loop metadata).
// CHECK: #[[NO_UNROLL:.*]] = #llvm.loop_annotation<unroll = #{{.*}}>
// CHECK-LABEL: func.func @rows_nest0(
// CHECK: scf.for
// CHECK: scf.for
// CHECK: scf.for
// CHECK: scf.for {{.*}} step %c64
// CHECK: vector.transfer_write
// CHECK-NEXT: }
// CHECK-NEXT: } {loop_annotation = #[[NO_UNROLL]]}
// CHECK-NEXT: } {loop_annotation = #[[NO_UNROLL]]}
// CHECK-NEXT: } {loop_annotation = #[[NO_UNROLL]]}
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func private @rows(%x: memref<2x2x7x768xf32>, %y: memref<2x2x7x768xf32>) attributes {loop.kernel} {
  loop.nest ins(%x : memref<2x2x7x768xf32>) outs(%y : memref<2x2x7x768xf32>)
      domain = [2, 2, 7, 768] schedule = #loop.schedule<parallel = -1, tile = [1, 1, 1, 64], vectorize = true>
      attributes {indexing_maps = [#id, #id], iterators = ["parallel", "parallel", "parallel", "parallel"]} {
  ^bb0(%a: f32, %out: f32):
    loop.yield %a : f32
  }
  return
}

// -----

// Within the budget (2 rows of 768), LLVM may unroll everything.
// CHECK-LABEL: func.func @few_rows_nest0(
// CHECK-NOT: loop_annotation
// CHECK: return
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func private @few_rows(%x: memref<2x768xf32>, %y: memref<2x768xf32>) attributes {loop.kernel} {
  loop.nest ins(%x : memref<2x768xf32>) outs(%y : memref<2x768xf32>)
      domain = [2, 768] schedule = #loop.schedule<parallel = -1, tile = [1, 64], vectorize = true>
      attributes {indexing_maps = [#id, #id], iterators = ["parallel", "parallel"]} {
  ^bb0(%a: f32, %out: f32):
    loop.yield %a : f32
  }
  return
}

// -----

// An elementwise nest over one dimension, split across threads in blocks
// of whole tiles: the full tiles of a block run unmasked (one plain vector
// store each: AVX2 has masked stores only as slow vmaskmovps), its last
// partial tile masked.
// PEEL-LABEL: func.func @axpy_nest0(
// PEEL: scf.for
// PEEL-NOT: vector.mask
// PEEL: vector.transfer_write {{.*}} : vector<32xf32>, memref<32xf32
// PEEL: scf.for
// PEEL: vector.create_mask {{.*}} : vector<32xi1>
// PEEL: vector.mask {{.*}} vector.transfer_write
#id = affine_map<(d0) -> (d0)>
func.func private @axpy(%x: memref<1000xf32>, %y: memref<1000xf32>) attributes {loop.kernel} {
  loop.nest ins(%x : memref<1000xf32>) outs(%y : memref<1000xf32>)
      domain = [1000] schedule = #loop.schedule<parallel = 0, tile = [32], vectorize = true>
      attributes {indexing_maps = [#id, #id], iterators = ["parallel"]} {
  ^bb0(%a: f32, %out: f32):
    %s = arith.addf %a, %out : f32
    loop.yield %s : f32
  }
  return
}

// -----

// Sums over the rows of [rows, channels] data stored channels-last, a
// vector of channels per tile (tile [16, 1]: the vector's dimension is not
// the innermost). The tile loop of the channels is the one peeled: its
// full tiles hold the loop over the rows unmasked, in which the sums stay
// in registers, since the accumulator is private scratch: the kernel's
// llvm.noalias reaches the nest function.
// PEEL-LABEL: func.func @channel_sums_nest0(
// PEEL-SAME: %{{[^:]+}}: memref<8x40xf32>, %{{[^:]+}}: memref<40xf32> {llvm.noalias})
// PEEL: scf.for
// PEEL: scf.for
// PEEL-NOT: vector.mask
// PEEL: vector.transfer_write {{.*}} : vector<16xf32>, memref<16xf32
// PEEL: scf.for
// PEEL: vector.create_mask {{.*}} : vector<16xi1>
#rows = affine_map<(d0, d1) -> (d1, d0)>
#sums = affine_map<(d0, d1) -> (d0)>
func.func private @channel_sums(%x: memref<8x40xf32>, %s: memref<40xf32> {llvm.noalias}) attributes {loop.kernel} {
  loop.nest ins(%x : memref<8x40xf32>) outs(%s : memref<40xf32>)
      domain = [40, 8] schedule = #loop.schedule<parallel = 0, tile = [16, 1], vectorize = true>
      attributes {indexing_maps = [#rows, #sums], iterators = ["parallel", "reduction"]} {
  ^bb0(%a: f32, %out: f32):
    %t = arith.addf %out, %a : f32
    loop.yield %t : f32
  }
  return
}

// -----

// A channels-last scale, a vector of channels per tile over domain
// (c, n): linalg computes in the tile's shape, vector<16x1xf32>, which
// LLVM would lower lane by lane; the arithmetic is recast on
// vector<16xf32>.
// CHECK-LABEL: func.func @channel_scale_nest0(
// CHECK-NOT: arith.mulf {{.*}} : vector<16x1xf32>
// CHECK: arith.mulf {{.*}} : vector<16xf32>
#rows_in = affine_map<(d0, d1) -> (d1, d0)>
#scale = affine_map<(d0, d1) -> (d0)>
func.func private @channel_scale(%x: memref<8x48xf32>, %w: memref<48xf32>, %y: memref<8x48xf32>) attributes {loop.kernel} {
  loop.nest ins(%x, %w : memref<8x48xf32>, memref<48xf32>) outs(%y : memref<8x48xf32>)
      domain = [48, 8] schedule = #loop.schedule<parallel = -1, tile = [16, 1], vectorize = true>
      attributes {indexing_maps = [#rows_in, #scale, #rows_in], iterators = ["parallel", "parallel"]} {
  ^bb0(%a: f32, %s: f32, %out: f32):
    %t = arith.mulf %a, %s : f32
    loop.yield %t : f32
  }
  return
}

// -----

// A tile written transposed (a strided depthwise input gradient's two
// phases of 16 positions, interleaved along the output's rows): the tile
// is transposed in registers and stored as one contiguous vector, not
// row by row (rows of 2).
// CHECK-LABEL: func.func @interleave_phases_nest0(
// CHECK: vector.transpose {{.*}} : vector<2x16xf32> to vector<16x2xf32>
// CHECK: vector.shape_cast {{.*}} : vector<16x2xf32> to vector<32xf32>
// CHECK: vector.transfer_write {{.*}} : vector<32xf32>, memref<1x32xf32
// CHECK-NOT: vector.transfer_write
#phase_in = affine_map<(d0, d1, d2) -> (d0, d2)>
#phase_w = affine_map<(d0, d1, d2) -> (d1)>
#phase_out = affine_map<(d0, d1, d2) -> (d0, d2, d1)>
func.func private @interleave_phases(%x: memref<4x16xf32>, %w: memref<2xf32>, %y: memref<4x16x2xf32>) attributes {loop.kernel} {
  loop.nest ins(%x, %w : memref<4x16xf32>, memref<2xf32>) outs(%y : memref<4x16x2xf32>)
      domain = [4, 2, 16] schedule = #loop.schedule<parallel = -1, tile = [1, 2, 16], vectorize = true>
      attributes {indexing_maps = [#phase_in, #phase_w, #phase_out], iterators = ["parallel", "parallel", "parallel"]} {
  ^bb0(%a: f32, %s: f32, %out: f32):
    %t = arith.mulf %a, %s : f32
    loop.yield %t : f32
  }
  return
}

// -----

// A tile read transposed whose rows are the buffer's whole rows (a strided
// input split into its two phases of 16 positions): one contiguous load of
// the row, then the transpose in registers, not a load per element.
// CHECK-LABEL: func.func @deinterleave_phases_nest0(
// CHECK: vector.transfer_read {{.*}} : memref<1x32xf32{{.*}}>, vector<32xf32>
// CHECK: vector.shape_cast {{.*}} : vector<32xf32> to vector<16x2xf32>
// CHECK: vector.transpose {{.*}} : vector<16x2xf32> to vector<2x16xf32>
// CHECK: vector.transfer_write {{.*}} : vector<1x2x16xf32>, memref<1x2x16xf32
#split_in = affine_map<(d0, d1, d2) -> (d0, d2, d1)>
#split_out = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func private @deinterleave_phases(%x: memref<4x16x2xf32>, %y: memref<4x2x16xf32>) attributes {loop.kernel} {
  loop.nest ins(%x : memref<4x16x2xf32>) outs(%y : memref<4x2x16xf32>)
      domain = [4, 2, 16] schedule = #loop.schedule<parallel = -1, tile = [1, 2, 16], vectorize = true>
      attributes {indexing_maps = [#split_in, #split_out], iterators = ["parallel", "parallel", "parallel"]} {
  ^bb0(%a: f32, %out: f32):
    loop.yield %a : f32
  }
  return
}

// -----

// A wrapping input: its reads may leave an axis (column -1 of a row is the
// last of the row before), so its view is a memref.reinterpret_cast of
// the whole buffer, not a subview (which may not start before an axis):
// from row begin + 1, column -1, a row-major offset of begin * 10 + 9.
// CHECK-LABEL: func.func @wrapping_nest0(
// CHECK-SAME: %[[BEGIN:[^:]+]]: index, %{{[^:]+}}: index, %[[X:[^:]+]]: memref<64x10xf32>
// CHECK: %[[ROWS:.*]] = arith.muli %{{.*}}, %c10 : index
// CHECK: %[[OFFSET:.*]] = arith.addi %[[ROWS]], %c9 : index
// CHECK: memref.reinterpret_cast %[[X]] to offset: [%[[OFFSET]]], sizes: [%{{.*}}, 10], strides: [10, 1] : memref<64x10xf32> to memref<?x10xf32, strided<[10, 1], offset: ?>>
#left = affine_map<(d0, d1) -> (d0 + 1, d1 - 1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @wrapping(%x: memref<64x10xf32>, %y: memref<63x10xf32>) attributes {loop.kernel} {
  loop.nest ins(%x : memref<64x10xf32>) outs(%y : memref<63x10xf32>)
      domain = [63, 10] schedule = #loop.schedule<parallel = 0, tile = [1, 16], vectorize = true>
      attributes {indexing_maps = [#left, #id], iterators = ["parallel", "parallel"], wrapping_inputs = array<i64: 0>} {
  ^bb0(%a: f32, %out: f32):
    loop.yield %a : f32
  }
  return
}
