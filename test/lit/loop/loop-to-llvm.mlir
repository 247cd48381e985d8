// --trainc-loop-to-llvm: loop kernels to the LLVM dialect; nest functions
// take bare pointers, masked vector accesses become masked loads/stores.
// RUN: trainc-opt %s --trainc-loop-to-llvm | FileCheck %s

// CHECK: #[[NO_UNROLL:.*]] = #llvm.loop_annotation<unroll = #{{.*}}>
// CHECK: llvm.func @relu_nest0(%{{.*}}: i64, %{{.*}}: i64, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr)
// CHECK: llvm.intr.masked.load
// CHECK: llvm.intr.masked.store
// CHECK-NOT: func.func
#id = affine_map<(d0) -> (d0)>
func.func private @relu(%x: memref<100xf32>, %y: memref<100xf32>) attributes {loop.kernel} {
  loop.nest ins(%x : memref<100xf32>) outs(%y : memref<100xf32>)
      domain = [100] schedule = #loop.schedule<parallel = -1, tile = [64], vectorize = true>
      attributes {indexing_maps = [#id, #id], iterators = ["parallel"]} {
  ^bb0(%a: f32, %out: f32):
    %zero = arith.constant 0.0 : f32
    %neg = arith.cmpf olt, %a, %zero : f32
    %r = arith.select %neg, %zero, %a : f32
    loop.yield %r : f32
  }
  return
}

// The unroll budget's annotations (--trainc-lower-loop-nests) reach the
// latch branches, where the translation to LLVM IR makes them !llvm.loop
// metadata: 28 rows of 12 tiles stay loops around a row.
// CHECK: llvm.func @rows_nest0(
// CHECK-COUNT-3: llvm.br {{.*}} {loop_annotation = #[[NO_UNROLL]]}
// CHECK-NOT: loop_annotation
// CHECK: llvm.return
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func private @rows(%x: memref<2x2x7x768xf32>, %y: memref<2x2x7x768xf32>) attributes {loop.kernel} {
  loop.nest ins(%x : memref<2x2x7x768xf32>) outs(%y : memref<2x2x7x768xf32>)
      domain = [2, 2, 7, 768] schedule = #loop.schedule<parallel = -1, tile = [1, 1, 1, 64], vectorize = true>
      attributes {indexing_maps = [#id4, #id4], iterators = ["parallel", "parallel", "parallel", "parallel"]} {
  ^bb0(%a: f32, %out: f32):
    loop.yield %a : f32
  }
  return
}
