// --trainc-expand-views: a view (here a tile's subview of a row-major
// buffer, and a collapse_shape) becomes a reinterpret_cast of its source's
// strided metadata, its offset an affine.apply of the tile's start.
// RUN: trainc-opt %s --trainc-expand-views | FileCheck %s

// CHECK-LABEL: func.func @tile_row(
// CHECK-SAME: %[[X:.*]]: memref<8x64xf32>, %[[I:.*]]: index, %[[J:.*]]: index
// CHECK: %[[BASE:.*]], %{{.*}}, %{{.*}}:2, %{{.*}}:2 = memref.extract_strided_metadata %[[X]]
// CHECK: %[[OFFSET:.*]] = affine.apply #{{.*}}()[%[[I]], %[[J]]]
// CHECK: %[[TILE:.*]] = memref.reinterpret_cast %[[BASE]] to offset: [%[[OFFSET]]], sizes: [1, 16], strides: [64, 1]
// CHECK: vector.load %[[TILE]]
// CHECK-NOT: memref.subview
func.func @tile_row(%x: memref<8x64xf32>, %i: index, %j: index) -> vector<16xf32> {
  %c0 = arith.constant 0 : index
  %tile = memref.subview %x[%i, %j] [1, 16] [1, 1]
      : memref<8x64xf32> to memref<1x16xf32, strided<[64, 1], offset: ?>>
  %v = vector.load %tile[%c0, %c0] : memref<1x16xf32, strided<[64, 1], offset: ?>>, vector<16xf32>
  return %v : vector<16xf32>
}

// CHECK-LABEL: func.func @flat(
// CHECK: memref.reinterpret_cast %{{.*}} to offset: [0], sizes: [512], strides: [1]
// CHECK-NOT: memref.collapse_shape
func.func @flat(%x: memref<8x64xf32>) -> memref<512xf32> {
  %f = memref.collapse_shape %x [[0, 1]] : memref<8x64xf32> into memref<512xf32>
  return %f : memref<512xf32>
}
