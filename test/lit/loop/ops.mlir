// The loop dialect: loop.nest round-trips, and the verifier rejects nests
// whose maps, body or schedule do not fit their buffers.
// RUN: trainc-opt %s -split-input-file -verify-diagnostics | trainc-opt -split-input-file | FileCheck %s

// CHECK-LABEL: func.func @bias_relu
// CHECK: loop.nest ins(%{{.*}}, %{{.*}} : memref<64x10xf32>, memref<10xf32>) outs(%{{.*}} : memref<64x10xf32>) domain = [64, 10] schedule = <parallel = 0, tile = [1, 16], vectorize = true>
// CHECK: loop.yield %{{.*}} : f32
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
func.func @bias_relu(%x: memref<64x10xf32>, %b: memref<10xf32>, %y: memref<64x10xf32>) attributes {loop.kernel} {
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

#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @wrong_extent(%x: memref<64x10xf32>, %y: memref<64x10xf32>) {
  // expected-error @+1 {{operand 0 has size 10 on axis 1 but domain dimension 1 is 12}}
  loop.nest ins(%x : memref<64x10xf32>) outs(%y : memref<64x10xf32>)
      domain = [64, 12] schedule = #loop.schedule<parallel = -1, tile = [1, 16], vectorize = true>
      attributes {indexing_maps = [#id, #id], iterators = ["parallel", "parallel"]} {
  ^bb0(%a: f32, %out: f32):
    loop.yield %a : f32
  }
  return
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @parallel_reduction(%x: memref<64x10xf32>, %y: memref<64xf32>) {
  // expected-error @+1 {{parallel dimension 1 is a reduction}}
  loop.nest ins(%x : memref<64x10xf32>) outs(%y : memref<64xf32>)
      domain = [64, 10] schedule = #loop.schedule<parallel = 1, tile = [1, 16], vectorize = true>
      attributes {indexing_maps = [#id, #row], iterators = ["parallel", "reduction"]} {
  ^bb0(%a: f32, %out: f32):
    %s = arith.addf %a, %out : f32
    loop.yield %s : f32
  }
  return
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
func.func @shared_output(%x: memref<64x10xf32>, %y: memref<10xf32>) {
  // expected-error @+1 {{output 0 does not depend on the parallel dimension 0}}
  loop.nest ins(%x : memref<64x10xf32>) outs(%y : memref<10xf32>)
      domain = [64, 10] schedule = #loop.schedule<parallel = 0, tile = [1, 16], vectorize = true>
      attributes {indexing_maps = [#id, #col], iterators = ["parallel", "parallel"]} {
  ^bb0(%a: f32, %out: f32):
    loop.yield %a : f32
  }
  return
}

// -----

#id = affine_map<(d0) -> (d0)>
func.func @wrong_yield(%x: memref<8xf32>, %y: memref<8xf32>) {
  // expected-error @+1 {{body yields 'i32' for an output of 'f32'}}
  loop.nest ins(%x : memref<8xf32>) outs(%y : memref<8xf32>)
      domain = [8] schedule = #loop.schedule<parallel = -1, tile = [8], vectorize = false>
      attributes {indexing_maps = [#id, #id], iterators = ["parallel"]} {
  ^bb0(%a: f32, %out: f32):
    %i = arith.fptosi %a : f32 to i32
    loop.yield %i : i32
  }
  return
}

// -----

#id = affine_map<(d0) -> (d0)>
func.func @zero_tile(%x: memref<8xf32>, %y: memref<8xf32>) {
  // expected-error @+1 {{tile sizes must be at least 1}}
  loop.nest ins(%x : memref<8xf32>) outs(%y : memref<8xf32>)
      domain = [8] schedule = #loop.schedule<parallel = -1, tile = [0], vectorize = false>
      attributes {indexing_maps = [#id, #id], iterators = ["parallel"]} {
  ^bb0(%a: f32, %out: f32):
    loop.yield %a : f32
  }
  return
}
