// --trainc-dispatch: OpenBLAS for f32 GEMMs and convolutions, generated
// loop nests for f32 elementwise ops, the reference kernels for the rest;
// overrides, and overrides that cannot be honoured.
// RUN: trainc-opt %s --trainc-dispatch -split-input-file | FileCheck %s
// RUN: trainc-opt %s --trainc-dispatch="overrides=gemm=reference" -split-input-file | FileCheck %s --check-prefix=FORCED
// RUN: not trainc-opt %s --trainc-dispatch="overrides=graph.gemm=dnnl" -split-input-file 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: trainc-opt %s --trainc-dispatch="overrides=*=reference" -split-input-file | FileCheck %s --check-prefix=ALLREF
// RUN: trainc-opt %s --trainc-dispatch="overrides=*=openblas" -split-input-file | FileCheck %s --check-prefix=ALLBLAS

// CHECK: kernel.launch "graph.gemm"{{.*}}backend = "openblas"
// CHECK: kernel.launch "graph.relu"{{.*}}backend = "generated"
// FORCED: kernel.launch "graph.gemm"{{.*}}backend = "reference"
// FORCED: kernel.launch "graph.relu"{{.*}}backend = "generated"
// ALLREF: kernel.launch "graph.gemm"{{.*}}backend = "reference"
// ALLREF: kernel.launch "graph.relu"{{.*}}backend = "reference"
// ALLREF: kernel.launch "graph.gemm"{{.*}}backend = "reference"
// ALLREF: kernel.launch "graph.relu"{{.*}}backend = "reference"
// ALLBLAS: kernel.launch "graph.gemm"{{.*}}backend = "openblas"
// ALLBLAS: kernel.launch "graph.relu"{{.*}}backend = "generated"
// ALLBLAS: kernel.launch "graph.gemm"{{.*}}backend = "reference"
// ALLBLAS: kernel.launch "graph.relu"{{.*}}backend = "reference"
// UNKNOWN: no backend 'dnnl' for graph.gemm (available: openblas, reference)
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

// -----

// f64 elementwise ops stay on the reference kernels; forcing the generated
// backend says why it cannot.
// RUN: not trainc-opt %s --trainc-dispatch="overrides=relu=generated" -split-input-file 2>&1 | FileCheck %s --check-prefix=NOGEN
// CHECK: kernel.launch "graph.relu"{{.*}}backend = "reference"
// NOGEN: backend 'generated' cannot run graph.relu here: it handles f32 tensors (and i1 masks) only
func.func @h(%a: memref<8xf64>, %b: memref<8xf64>) {
  kernel.launch "graph.relu"(%a) -> (%b) {options = {}} : (memref<8xf64>) -> memref<8xf64>
  return
}
