// --trainc-dispatch target=cuda: the GPU's backends only, cuBLAS for f32
// products (whose gemm bias is a row, a column or the whole output) and
// cuDNN for f32 convolutions, generated kernels for the rest; the CPU never
// chooses cuBLAS or cuDNN.
// RUN: trainc-opt %s --trainc-dispatch="target=cuda" -split-input-file -verify-diagnostics | FileCheck %s
// RUN: trainc-opt %s --trainc-dispatch="target=cuda overrides=gemm=generated" -split-input-file -verify-diagnostics | FileCheck %s --check-prefix=FORCED
// RUN: not trainc-opt %s --trainc-dispatch="target=cuda overrides=gemm=dnnl" -split-input-file 2>&1 | FileCheck %s --check-prefix=CPUBACKEND
// RUN: not trainc-opt %s --trainc-dispatch="overrides=gemm=cublas" -split-input-file 2>&1 | FileCheck %s --check-prefix=ONCPU
// RUN: not trainc-opt %s --trainc-dispatch="target=tpu" 2>&1 | FileCheck %s --check-prefix=TARGET

// CHECK: module attributes {kernel.target = "cuda"
// CHECK: kernel.launch "graph.gemm"{{.*}}backend = "cublas"
// CHECK: kernel.launch "graph.matmul"{{.*}}backend = "cublas"
// CHECK: kernel.launch "graph.relu"{{.*}}backend = "generated"
// FORCED: kernel.launch "graph.gemm"{{.*}}backend = "generated"
// FORCED: kernel.launch "graph.matmul"{{.*}}backend = "cublas"
// CPUBACKEND: backend 'dnnl' cannot run graph.gemm here: it does not run on the cuda target
// ONCPU: backend 'cublas' cannot run graph.gemm here: it does not run on the cpu target
// TARGET: --trainc-dispatch: unknown target 'tpu' (cpu or cuda)
func.func @f(%a: memref<2x3xf32>, %b: memref<3x4xf32>, %c: memref<2x4xf32>, %d: memref<2x4xf32>,
             %x: memref<5x2x3xf32>, %y: memref<5x2x4xf32>) {
  kernel.launch "graph.gemm"(%a, %b) -> (%c) {options = {}} : (memref<2x3xf32>, memref<3x4xf32>) -> memref<2x4xf32>
  kernel.launch "graph.matmul"(%x, %b) -> (%y) {options = {}} : (memref<5x2x3xf32>, memref<3x4xf32>) -> memref<5x2x4xf32>
  kernel.launch "graph.relu"(%c) -> (%d) {options = {}} : (memref<2x4xf32>) -> memref<2x4xf32>
  return
}

// Convolutions and their gradients on cuDNN, f32 or bf16 (--amp bf16);
// one whose pads differ at the two ends of a dim (cuDNN's descriptors hold
// one pad per dim) or with an empty tensor stays a generated kernel, as
// does an empty product.
// CHECK-LABEL: func.func @convolutions
// CHECK: kernel.launch "graph.conv"{{.*}}backend = "cudnn"
// CHECK: kernel.launch "graph.conv_backward_input"{{.*}}backend = "cudnn"
// CHECK: kernel.launch "graph.conv_backward_weight"{{.*}}backend = "cudnn"
// CHECK: kernel.launch "graph.conv"{{.*}}backend = "generated"
// CHECK: kernel.launch "graph.conv"{{.*}}backend = "cudnn"{{.*}}bf16
// CHECK: kernel.launch "graph.conv"{{.*}}backend = "generated"{{.*}}0x3x8x8xf32
// CHECK: kernel.launch "graph.matmul"{{.*}}backend = "generated"{{.*}}2x0xf32
func.func @convolutions(%x: memref<2x3x8x8xf32>, %w: memref<4x3x3x3xf32>, %y: memref<2x4x8x8xf32>,
                        %dx: memref<2x3x8x8xf32>, %dw: memref<4x3x3x3xf32>, %z: memref<2x4x7x7xf32>,
                        %xl: memref<2x3x8x8xbf16>, %wl: memref<4x3x3x3xbf16>, %yl: memref<2x4x8x8xbf16>,
                        %xe: memref<0x3x8x8xf32>, %ye: memref<0x4x8x8xf32>,
                        %a: memref<2x0xf32>, %b: memref<0x4xf32>, %c: memref<2x4xf32>) {
  kernel.launch "graph.conv"(%x, %w) -> (%y) {options = {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>}} : (memref<2x3x8x8xf32>, memref<4x3x3x3xf32>) -> memref<2x4x8x8xf32>
  kernel.launch "graph.conv_backward_input"(%y, %w) -> (%dx) {options = {dilations = array<i64: 1, 1>, group = 1 : i64, input_shape = array<i64: 2, 3, 8, 8>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>}} : (memref<2x4x8x8xf32>, memref<4x3x3x3xf32>) -> memref<2x3x8x8xf32>
  kernel.launch "graph.conv_backward_weight"(%y, %x) -> (%dw) {options = {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>, weight_shape = array<i64: 4, 3, 3, 3>}} : (memref<2x4x8x8xf32>, memref<2x3x8x8xf32>) -> memref<4x3x3x3xf32>
  kernel.launch "graph.conv"(%x, %w) -> (%z) {options = {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 1, 1>, strides = array<i64: 1, 1>}} : (memref<2x3x8x8xf32>, memref<4x3x3x3xf32>) -> memref<2x4x7x7xf32>
  kernel.launch "graph.conv"(%xl, %wl) -> (%yl) {options = {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>}} : (memref<2x3x8x8xbf16>, memref<4x3x3x3xbf16>) -> memref<2x4x8x8xbf16>
  kernel.launch "graph.conv"(%xe, %w) -> (%ye) {options = {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>}} : (memref<0x3x8x8xf32>, memref<4x3x3x3xf32>) -> memref<0x4x8x8xf32>
  kernel.launch "graph.matmul"(%a, %b) -> (%c) {options = {}} : (memref<2x0xf32>, memref<0x4xf32>) -> memref<2x4xf32>
  return
}

// -----

// A gemm whose c is a scalar: cuBLAS's kernel does not broadcast it, the
// generated one does.
// CHECK: kernel.launch "graph.gemm"{{.*}}backend = "generated"
func.func @scalar_bias(%a: memref<2x3xf32>, %b: memref<3x4xf32>, %s: memref<f32>, %c: memref<2x4xf32>) {
  kernel.launch "graph.gemm"(%a, %b, %s) -> (%c) {options = {}} : (memref<2x3xf32>, memref<3x4xf32>, memref<f32>) -> memref<2x4xf32>
  return
}

