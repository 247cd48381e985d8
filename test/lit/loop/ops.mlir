// The loop dialect: loop.nest, loop.index and #loop.check round-trip, and
// the verifiers reject nests whose maps, body or schedule do not fit their
// buffers, indices outside the domain and checks without a status.
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

// The label's score of each row: a sum over the classes of
// select(class == label, x, 0). A rank-0 nest (its tile list is empty)
// sets the row sums first; the kernel checks its labels.
// CHECK-LABEL: func.func @label_score
// CHECK-SAME: loop.check = #loop.check<status = 3, message = "label {} is not a class index in [0, 10)">
// CHECK: domain = [] schedule = <parallel = -1, tile = [], vectorize = false>
// CHECK: %[[C:.*]] = loop.index 1 : index
// CHECK: arith.index_cast %[[C]] : index to i64
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#scalar = affine_map<() -> ()>
func.func @label_score(%x: memref<64x10xf32>, %labels: memref<64xi64>, %y: memref<64xf32>, %status: memref<i64>)
    attributes {loop.kernel, loop.check = #loop.check<status = 3, message = "label {} is not a class index in [0, 10)">} {
  loop.nest outs(%status : memref<i64>) domain = [] schedule = #loop.schedule<parallel = -1, tile = [], vectorize = false>
      attributes {indexing_maps = [#scalar], iterators = []} {
  ^bb0(%out: i64):
    %zero = arith.constant 0 : i64
    loop.yield %zero : i64
  }
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

#id = affine_map<(d0) -> (d0)>
func.func @index_outside_domain(%x: memref<8xf32>, %y: memref<8xf32>) {
  loop.nest ins(%x : memref<8xf32>) outs(%y : memref<8xf32>)
      domain = [8] schedule = #loop.schedule<parallel = -1, tile = [8], vectorize = false>
      attributes {indexing_maps = [#id, #id], iterators = ["parallel"]} {
  ^bb0(%a: f32, %out: f32):
    // expected-error @+1 {{'loop.index' op dimension 1 is not a dimension of the domain (rank 1)}}
    %i = loop.index 1 : index
    loop.yield %a : f32
  }
  return
}

// -----

func.func @index_outside_nest() -> index {
  // expected-error @+1 {{'loop.index' op expects parent op 'loop.nest'}}
  %i = loop.index 0 : index
  return %i : index
}

// -----

// expected-error @+1 {{the status of loop.check must be a memref<i64> argument}}
func.func @check_without_status(%x: memref<8xf32>, %status: memref<i32>)
    attributes {loop.kernel, loop.check = #loop.check<status = 1, message = "bad {}">} {
  return
}

// -----

// expected-error @+1 {{loop.check must be a #loop.check on a loop kernel}}
func.func @check_outside_kernel(%status: memref<i64>)
    attributes {loop.check = #loop.check<status = 0, message = "bad {}">} {
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
