// The loop dialect: loop.nest, loop.index and #loop.check round-trip, and
// the verifiers reject nests whose maps, body or schedule do not fit their
// buffers (a wrapping input's on its row-major offsets), indices outside
// the domain and checks without a status.
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

// Affine maps: a 3x3 window with stride 2 over a padded image (sums of
// dimensions), a strided slice read backwards, a fixed row, and an output
// written at an offset (the second part of a concatenation).
// CHECK-LABEL: func.func @affine_maps
// CHECK: domain = [3, 3, 3, 3]
// CHECK: domain = [4]
#window = affine_map<(d0, d1, d2, d3) -> (d0 * 2 + d2, d1 * 2 + d3)>
#taps = affine_map<(d0, d1, d2, d3) -> (d2, d3)>
#pos = affine_map<(d0, d1, d2, d3) -> (d0, d1)>
#back = affine_map<(d0) -> (2, d0 * -2 + 7)>
#shifted = affine_map<(d0) -> (d0 + 3)>
func.func @affine_maps(%x: memref<7x7xf32>, %w: memref<3x3xf32>, %y: memref<3x3xf32>,
                       %m: memref<4x8xf32>, %z: memref<7xf32>) attributes {loop.kernel} {
  loop.nest ins(%x, %w : memref<7x7xf32>, memref<3x3xf32>) outs(%y : memref<3x3xf32>)
      domain = [3, 3, 3, 3] schedule = #loop.schedule<parallel = -1, tile = [1, 1, 1, 1], vectorize = false>
      attributes {indexing_maps = [#window, #taps, #pos],
                  iterators = ["parallel", "parallel", "reduction", "reduction"]} {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %p, %out : f32
    loop.yield %s : f32
  }
  loop.nest ins(%m : memref<4x8xf32>) outs(%z : memref<7xf32>)
      domain = [4] schedule = #loop.schedule<parallel = -1, tile = [1], vectorize = false>
      attributes {indexing_maps = [#back, #shifted], iterators = ["parallel"]} {
  ^bb0(%a: f32, %out: f32):
    loop.yield %a : f32
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

// A wrapping input: reads that leave an axis but stay in the buffer (its
// row-major offsets are 9 to 636 of 640) are in bounds.
// CHECK-LABEL: func.func @wrapping_row
// CHECK: wrapping_inputs = array<i64: 0>
#left = affine_map<(d0, d1) -> (d0 + 1, d1 - 1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @wrapping_row(%x: memref<64x10xf32>, %y: memref<63x10xf32>) {
  loop.nest ins(%x : memref<64x10xf32>) outs(%y : memref<63x10xf32>)
      domain = [63, 10] schedule = #loop.schedule<parallel = 0, tile = [1, 16], vectorize = true>
      attributes {indexing_maps = [#left, #id], iterators = ["parallel", "parallel"], wrapping_inputs = array<i64: 0>} {
  ^bb0(%a: f32, %out: f32):
    loop.yield %a : f32
  }
  return
}

// -----

#left = affine_map<(d0, d1) -> (d0, d1 - 1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @wrapping_before_the_buffer(%x: memref<64x10xf32>, %y: memref<64x10xf32>) {
  // expected-error @+1 {{wrapping input 0 has 640 elements but the nest reaches offsets [-1, 638]}}
  loop.nest ins(%x : memref<64x10xf32>) outs(%y : memref<64x10xf32>)
      domain = [64, 10] schedule = #loop.schedule<parallel = -1, tile = [1, 16], vectorize = true>
      attributes {indexing_maps = [#left, #id], iterators = ["parallel", "parallel"], wrapping_inputs = array<i64: 0>} {
  ^bb0(%a: f32, %out: f32):
    loop.yield %a : f32
  }
  return
}

// -----

#window = affine_map<(d0, d1) -> (d0, d0 + d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @wrapping_window(%x: memref<64x10xf32>, %y: memref<4x4xf32>) {
  // expected-error @+1 {{wrapping input 0 result 1 must be a dimension times a positive step, plus an offset, or a constant}}
  loop.nest ins(%x : memref<64x10xf32>) outs(%y : memref<4x4xf32>)
      domain = [4, 4] schedule = #loop.schedule<parallel = -1, tile = [1, 4], vectorize = true>
      attributes {indexing_maps = [#window, #id], iterators = ["parallel", "parallel"], wrapping_inputs = array<i64: 0>} {
  ^bb0(%a: f32, %out: f32):
    loop.yield %a : f32
  }
  return
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @wrapping_output(%x: memref<64x10xf32>, %y: memref<64x10xf32>) {
  // expected-error @+1 {{wrapping input 1 is not an input, or is listed twice}}
  loop.nest ins(%x : memref<64x10xf32>) outs(%y : memref<64x10xf32>)
      domain = [64, 10] schedule = #loop.schedule<parallel = -1, tile = [1, 16], vectorize = true>
      attributes {indexing_maps = [#id, #id], iterators = ["parallel", "parallel"], wrapping_inputs = array<i64: 1>} {
  ^bb0(%a: f32, %out: f32):
    loop.yield %a : f32
  }
  return
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @wrong_extent(%x: memref<64x10xf32>, %y: memref<64x10xf32>) {
  // expected-error @+1 {{operand 0 has size 10 on axis 1 but the nest reaches [0, 11] there}}
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

// -----

// A window read past the padded input's end: (3 - 1) * 2 + (3 - 1) = 6.
#window = affine_map<(d0, d1) -> (d0 * 2 + d1)>
#out = affine_map<(d0, d1) -> (d0)>
func.func @window_out_of_bounds(%x: memref<6xf32>, %y: memref<3xf32>) {
  // expected-error @+1 {{operand 0 has size 6 on axis 0 but the nest reaches [0, 6] there}}
  loop.nest ins(%x : memref<6xf32>) outs(%y : memref<3xf32>)
      domain = [3, 3] schedule = #loop.schedule<parallel = -1, tile = [1, 1], vectorize = false>
      attributes {indexing_maps = [#window, #out], iterators = ["parallel", "reduction"]} {
  ^bb0(%a: f32, %out: f32):
    %s = arith.addf %a, %out : f32
    loop.yield %s : f32
  }
  return
}

// -----

// A step backwards that starts before the buffer: 2 - d0 for d0 in [0, 4).
#back = affine_map<(d0) -> (-d0 + 2)>
#id = affine_map<(d0) -> (d0)>
func.func @reversed_out_of_bounds(%x: memref<4xf32>, %y: memref<4xf32>) {
  // expected-error @+1 {{operand 0 has size 4 on axis 0 but the nest reaches [-1, 2] there}}
  loop.nest ins(%x : memref<4xf32>) outs(%y : memref<4xf32>)
      domain = [4] schedule = #loop.schedule<parallel = -1, tile = [1], vectorize = false>
      attributes {indexing_maps = [#back, #id], iterators = ["parallel"]} {
  ^bb0(%a: f32, %out: f32):
    loop.yield %a : f32
  }
  return
}

// -----

#mod = affine_map<(d0) -> (d0 mod 2)>
#id = affine_map<(d0) -> (d0)>
func.func @not_linear(%x: memref<2xf32>, %y: memref<4xf32>) {
  // expected-error @+1 {{indexing map 0 result 0 is not a linear function of the dimensions}}
  loop.nest ins(%x : memref<2xf32>) outs(%y : memref<4xf32>)
      domain = [4] schedule = #loop.schedule<parallel = -1, tile = [1], vectorize = false>
      attributes {indexing_maps = [#mod, #id], iterators = ["parallel"]} {
  ^bb0(%a: f32, %out: f32):
    loop.yield %a : f32
  }
  return
}

// -----

// Two points of parallel dimensions writing one element: outputs index
// each axis by a dimension of its own (or sum reductions, a scatter).
#id = affine_map<(d0, d1) -> (d0, d1)>
#sum = affine_map<(d0, d1) -> (d0 + d1)>
func.func @output_sums(%x: memref<3x3xf32>, %y: memref<5xf32>) {
  // expected-error @+1 {{output map 0 must index each axis by its own dimension (times a non-zero step, plus an offset) or by a sum of reduction dimensions}}
  loop.nest ins(%x : memref<3x3xf32>) outs(%y : memref<5xf32>)
      domain = [3, 3] schedule = #loop.schedule<parallel = -1, tile = [1, 1], vectorize = false>
      attributes {indexing_maps = [#id, #sum], iterators = ["parallel", "parallel"]} {
  ^bb0(%a: f32, %out: f32):
    loop.yield %a : f32
  }
  return
}

// -----

#window = affine_map<(d0, d1) -> (d0 + d1)>
#out = affine_map<(d0, d1) -> (d0)>
func.func @vectorized_window(%x: memref<10xf32>, %y: memref<8xf32>) {
  // expected-error @+1 {{cannot vectorize a nest whose indexing maps sum dimensions}}
  loop.nest ins(%x : memref<10xf32>) outs(%y : memref<8xf32>)
      domain = [8, 3] schedule = #loop.schedule<parallel = -1, tile = [1, 16], vectorize = true>
      attributes {indexing_maps = [#window, #out], iterators = ["parallel", "reduction"]} {
  ^bb0(%a: f32, %out: f32):
    %s = arith.addf %a, %out : f32
    loop.yield %s : f32
  }
  return
}

// -----

// Threads split the rows of the output, but the input's rows are summed
// with the window taps: a block's reads would not be a block of the input.
#window = affine_map<(d0, d1) -> (d0 + d1)>
#out = affine_map<(d0, d1) -> (d0)>
func.func @parallel_window(%x: memref<10xf32>, %y: memref<8xf32>) {
  // expected-error @+1 {{parallel dimension 0 is summed with others in indexing map 0}}
  loop.nest ins(%x : memref<10xf32>) outs(%y : memref<8xf32>)
      domain = [8, 3] schedule = #loop.schedule<parallel = 0, tile = [1, 1], vectorize = false>
      attributes {indexing_maps = [#window, #out], iterators = ["parallel", "reduction"]} {
  ^bb0(%a: f32, %out: f32):
    %s = arith.addf %a, %out : f32
    loop.yield %s : f32
  }
  return
}

// -----

// Threads split a dimension that one buffer walks backwards (a reversed
// slice): a block would not be a forward view of it.
#back = affine_map<(d0) -> (-d0 + 7)>
#id = affine_map<(d0) -> (d0)>
func.func @parallel_backwards(%x: memref<8xf32>, %y: memref<8xf32>) {
  // expected-error @+1 {{parallel dimension 0 steps backwards in indexing map 0}}
  loop.nest ins(%x : memref<8xf32>) outs(%y : memref<8xf32>)
      domain = [8] schedule = #loop.schedule<parallel = 0, tile = [1], vectorize = false>
      attributes {indexing_maps = [#back, #id], iterators = ["parallel"]} {
  ^bb0(%a: f32, %out: f32):
    loop.yield %a : f32
  }
  return
}
