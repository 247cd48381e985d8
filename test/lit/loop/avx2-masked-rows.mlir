// A zero fill of 3x40x40 floats (a convolution's input gradient) with rows
// of 40 in masked tiles: the geometry whose kernel once took LLVM minutes
// to compile for an AVX2 CPU. LLVM's O3 *without* the target's cost models
// unrolled both loops into 120 straight-line masked stores of <48 x float>,
// whose masks cover whole 8-lane vectors on AVX2; x86 instruction
// selection grows as the cube of such stores in one block (60: 3 s, 120:
// 27 s, llc-22 -mcpu=znver3; docs/PERFORMANCE.md, "Compile time on AVX2").
// trainc runs O3 with the target's cost models (lib/Codegen,
// optimizeForCpu), which keeps the rows a loop: a handful of masked
// stores, for the AVX-512 schedule (48-wide tiles) and the AVX2 one (32).
// RUN: trainc-opt %s --trainc-loop-to-llvm | mlir-translate --mlir-to-llvmir \
// RUN:   | opt -O3 -mtriple=x86_64-unknown-linux-gnu -mcpu=znver3 -S \
// RUN:   | grep -c "call void @llvm.masked.store" | FileCheck %s
// RUN: sed -e 's/tile = \[1, 1, 48\]/tile = [1, 1, 32]/' %s \
// RUN:   | trainc-opt --trainc-loop-to-llvm | mlir-translate --mlir-to-llvmir \
// RUN:   | opt -O3 -mtriple=x86_64-unknown-linux-gnu -mcpu=znver3 -S \
// RUN:   | grep -c "call void @llvm.masked.store" | FileCheck %s

// CHECK: {{^[1-8]$}}
#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func private @zero_fill(%dx: memref<3x40x40xf32>) attributes {loop.kernel} {
  loop.nest outs(%dx : memref<3x40x40xf32>)
      domain = [3, 40, 40] schedule = #loop.schedule<parallel = -1, tile = [1, 1, 48], vectorize = true>
      attributes {indexing_maps = [#id], iterators = ["parallel", "parallel", "parallel"]} {
  ^bb0(%out: f32):
    %zero = arith.constant 0.0 : f32
    loop.yield %zero : f32
  }
  return
}
