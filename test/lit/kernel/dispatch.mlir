// --trainc-dispatch: OpenBLAS for f32 GEMMs and convolutions, the reference
// kernels for the rest; overrides, and overrides that cannot be honoured.
// RUN: trainc-opt %s --trainc-dispatch -split-input-file | FileCheck %s
// RUN: trainc-opt %s --trainc-dispatch="overrides=gemm=reference" -split-input-file | FileCheck %s --check-prefix=FORCED
// RUN: not trainc-opt %s --trainc-dispatch="overrides=graph.gemm=cudnn" -split-input-file 2>&1 | FileCheck %s --check-prefix=UNKNOWN

// CHECK: kernel.launch "graph.gemm"{{.*}}backend = "openblas"
// CHECK: kernel.launch "graph.relu"{{.*}}backend = "reference"
// FORCED: kernel.launch "graph.gemm"{{.*}}backend = "reference"
// UNKNOWN: no backend 'cudnn' for graph.gemm (available: openblas, dnnl, reference)
func.func @f(%a: memref<2x3xf32>, %b: memref<3x4xf32>, %c: memref<2x4xf32>, %d: memref<2x4xf32>) {
  kernel.launch "graph.gemm"(%a, %b) -> (%c) {options = {}} : (memref<2x3xf32>, memref<3x4xf32>) -> memref<2x4xf32>
  kernel.launch "graph.relu"(%c) -> (%d) {options = {}} : (memref<2x4xf32>) -> memref<2x4xf32>
  return
}

// -----

// f64 GEMMs cannot use sgemm: the reference kernel runs them, and forcing
// OpenBLAS says why not.
// CHECK: kernel.launch "graph.gemm"{{.*}}backend = "reference"
func.func @g(%a: memref<2x3xf64>, %b: memref<3x4xf64>, %c: memref<2x4xf64>) {
  kernel.launch "graph.gemm"(%a, %b) -> (%c) {options = {}} : (memref<2x3xf64>, memref<3x4xf64>) -> memref<2x4xf64>
  return
}
