// --trainc-dispatch: oneDNN for f32 GEMMs, convolutions and pooling (but
// generated loop nests for max pooling and its gradient where the windows
// tile the input, and OpenBLAS for some convolutions over output planes of
// at most 4 positions), then OpenBLAS, generated loop nests for f32 elementwise ops,
// reductions, normalizations, losses and optimizer updates (and for f32
// GEMMs when forced), the reference
// kernels for the rest; overrides (KERNEL=BACKEND, and *=BACKEND wherever BACKEND can
// run), and overrides that cannot be honoured.
// RUN: trainc-opt %s --trainc-dispatch -split-input-file | FileCheck %s
// The AVX2 run stops at the native-bf16 case at the end (no AVX2 backend
// runs a bf16 convolution, which --amp bf16 makes only for AVX-512 targets).
// RUN: sed -e '/^\/\/ NATIVE-BF16-ONLY/,$d' %s | trainc-opt --trainc-dispatch="vector-lanes=8" -split-input-file | FileCheck %s --check-prefix=AVX2
// RUN: trainc-opt %s --trainc-dispatch="overrides=gemm=reference" -split-input-file | FileCheck %s --check-prefix=FORCED
// RUN: not trainc-opt %s --trainc-dispatch="overrides=gemm=generated" -split-input-file 2>&1 | FileCheck %s --check-prefix=LOOPS
// RUN: not trainc-opt %s --trainc-dispatch="overrides=graph.gemm=cudnn" -split-input-file 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not trainc-opt %s --trainc-dispatch="overrides=graph.gemm=dnnl" -split-input-file 2>&1 | FileCheck %s --check-prefix=GEMM
// RUN: trainc-opt %s --trainc-dispatch="overrides=*=reference" -split-input-file | FileCheck %s --check-prefix=ALLREF
// RUN: trainc-opt %s --trainc-dispatch="overrides=*=openblas" -split-input-file | FileCheck %s --check-prefix=ALLBLAS
// RUN: not trainc-opt %s --trainc-dispatch="overrides=relu=generated" -split-input-file 2>&1 | FileCheck %s --check-prefix=NOGEN
// RUN: not trainc-opt %s --trainc-dispatch="overrides=nll_loss=generated" -split-input-file 2>&1 | FileCheck %s --check-prefix=LOSS
// RUN: not trainc-opt %s --trainc-dispatch="overrides=max_pool=dnnl,avg_pool=dnnl,conv=dnnl,batch_norm_inference=dnnl" -split-input-file 2>&1 | FileCheck %s --check-prefix=WHYNOT
// RUN: not trainc-opt %s --trainc-dispatch="overrides=batch_norm_training=generated" -split-input-file 2>&1 | FileCheck %s --check-prefix=ONEVALUE
// RUN: not trainc-opt %s --trainc-dispatch="overrides=max_pool_backward=generated" -split-input-file 2>&1 | FileCheck %s --check-prefix=POOLGEN

// CHECK: kernel.launch "graph.gemm"{{.*}}backend = "dnnl"
// CHECK: kernel.launch "graph.relu"{{.*}}backend = "generated"
// FORCED: kernel.launch "graph.gemm"{{.*}}backend = "reference"
// LOOPS-DAG: kernel.launch "graph.gemm"{{.*}}backend = "generated"
// UNKNOWN: no backend 'cudnn' for graph.gemm (available: dnnl, openblas, generated, reference)
func.func @f(%a: memref<2x3xf32>, %b: memref<3x4xf32>, %c: memref<2x4xf32>, %d: memref<2x4xf32>) {
  kernel.launch "graph.gemm"(%a, %b) -> (%c) {options = {}} : (memref<2x3xf32>, memref<3x4xf32>) -> memref<2x4xf32>
  kernel.launch "graph.relu"(%c) -> (%d) {options = {}} : (memref<2x4xf32>) -> memref<2x4xf32>
  return
}

// -----

// f64 GEMMs need neither sgemm nor oneDNN: the reference kernel runs them,
// and forcing a library says why not.
// CHECK: kernel.launch "graph.gemm"{{.*}}backend = "reference"
// GEMM: backend 'dnnl' cannot run graph.gemm here: it handles all-f32 or all-bf16 buffers only
// LOOPS-DAG: backend 'generated' cannot run graph.gemm here: it handles f32 buffers only
func.func @g(%a: memref<2x3xf64>, %b: memref<3x4xf64>, %c: memref<2x4xf64>) {
  kernel.launch "graph.gemm"(%a, %b) -> (%c) {options = {}} : (memref<2x3xf64>, memref<3x4xf64>) -> memref<2x4xf64>
  return
}

// -----

// Pooling: oneDNN unless a window lies in the padding only, or an average
// that counts the padding crosses the end padding (ceil_mode).
// CHECK-LABEL: func.func @pool
// CHECK: kernel.launch "graph.max_pool"{{.*}}backend = "dnnl"
// CHECK: kernel.launch "graph.max_pool"{{.*}}backend = "reference"
// CHECK: kernel.launch "graph.avg_pool"{{.*}}backend = "reference"
// WHYNOT: backend 'dnnl' cannot run graph.max_pool here: a window lies entirely in the padding
func.func @pool(%x: memref<1x1x3x3xf32>, %y: memref<1x1x2x2xf32>, %z: memref<1x1x6x6xf32>, %p: memref<1x1x6x6xf32>, %q: memref<1x1x3x3xf32>) {
  kernel.launch "graph.max_pool"(%x) -> (%y) {options = {ceil_mode = false, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>}} : (memref<1x1x3x3xf32>) -> memref<1x1x2x2xf32>
  kernel.launch "graph.max_pool"(%x) -> (%z) {options = {ceil_mode = false, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 2, 2, 2, 2>, strides = array<i64: 1, 1>}} : (memref<1x1x3x3xf32>) -> memref<1x1x6x6xf32>
  kernel.launch "graph.avg_pool"(%p) -> (%q) {options = {ceil_mode = true, count_include_pad = true, kernel_shape = array<i64: 3, 3>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>}} : (memref<1x1x6x6xf32>) -> memref<1x1x3x3xf32>
  return
}

// -----

// Max pooling and its gradient: generated where the f32 windows tile the
// input and are at most 2 wide along the last dim (2x2/2 on 28x28, 3x1/3x1
// on 9x4), oneDNN for wider windows (3x3/3), overlapping windows (3x3/2) or
// a remainder (19 = 2 * 9 + 1), the reference kernel for f64. Forcing the
// generated backend works for any f32 window (scalar window nests where
// the windows do not tile the input), not for f64.
// CHECK-LABEL: func.func @pool_backward
// CHECK: kernel.launch "graph.max_pool"{{.*}}backend = "generated"
// CHECK: kernel.launch "graph.max_pool"{{.*}}backend = "dnnl"
// CHECK: kernel.launch "graph.max_pool_backward"{{.*}}backend = "generated"
// CHECK: kernel.launch "graph.max_pool_backward"{{.*}}backend = "generated"
// CHECK: kernel.launch "graph.max_pool_backward"{{.*}}backend = "dnnl"
// CHECK: kernel.launch "graph.max_pool_backward"{{.*}}backend = "dnnl"
// CHECK: kernel.launch "graph.max_pool_backward"{{.*}}backend = "dnnl"
// CHECK: kernel.launch "graph.max_pool_backward"{{.*}}backend = "reference"
// POOLGEN: backend 'generated' cannot run graph.max_pool_backward here: it handles all-f32, all-bf16 or all-f16 buffers only
func.func @pool_backward(%dy: memref<2x3x14x14xf32>, %x: memref<2x3x28x28xf32>, %dx: memref<2x3x28x28xf32>, %dy2: memref<1x2x3x4xf32>, %x2: memref<1x2x9x4xf32>, %dx2: memref<1x2x9x4xf32>, %dy3: memref<2x3x9x9xf32>, %x3: memref<2x3x27x27xf32>, %dx3: memref<2x3x27x27xf32>, %dy4: memref<2x3x13x13xf32>, %dy5: memref<2x3x9x9xf32>, %x5: memref<2x3x19x19xf32>, %dx5: memref<2x3x19x19xf32>, %dy64: memref<2x3x14x14xf64>, %x64: memref<2x3x28x28xf64>, %dx64: memref<2x3x28x28xf64>) {
  kernel.launch "graph.max_pool"(%x) -> (%dy) {options = {ceil_mode = false, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>}} : (memref<2x3x28x28xf32>) -> memref<2x3x14x14xf32>
  kernel.launch "graph.max_pool"(%x3) -> (%dy3) {options = {ceil_mode = false, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 3, 3>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 3, 3>}} : (memref<2x3x27x27xf32>) -> memref<2x3x9x9xf32>
  kernel.launch "graph.max_pool_backward"(%dy, %x) -> (%dx) {options = {ceil_mode = false, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>}} : (memref<2x3x14x14xf32>, memref<2x3x28x28xf32>) -> memref<2x3x28x28xf32>
  kernel.launch "graph.max_pool_backward"(%dy2, %x2) -> (%dx2) {options = {ceil_mode = false, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 3, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 3, 1>}} : (memref<1x2x3x4xf32>, memref<1x2x9x4xf32>) -> memref<1x2x9x4xf32>
  kernel.launch "graph.max_pool_backward"(%dy3, %x3) -> (%dx3) {options = {ceil_mode = false, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 3, 3>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 3, 3>}} : (memref<2x3x9x9xf32>, memref<2x3x27x27xf32>) -> memref<2x3x27x27xf32>
  kernel.launch "graph.max_pool_backward"(%dy4, %x) -> (%dx) {options = {ceil_mode = false, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 3, 3>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>}} : (memref<2x3x13x13xf32>, memref<2x3x28x28xf32>) -> memref<2x3x28x28xf32>
  kernel.launch "graph.max_pool_backward"(%dy5, %x5) -> (%dx5) {options = {ceil_mode = false, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>}} : (memref<2x3x9x9xf32>, memref<2x3x19x19xf32>) -> memref<2x3x19x19xf32>
  kernel.launch "graph.max_pool_backward"(%dy64, %x64) -> (%dx64) {options = {ceil_mode = false, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>}} : (memref<2x3x14x14xf64>, memref<2x3x28x28xf64>) -> memref<2x3x28x28xf64>
  return
}

// -----

// CHECK-LABEL: func.func @pool_backward_wide
// CHECK: kernel.launch "graph.max_pool_backward"{{.*}}backend = "dnnl"
// POOLGEN-LABEL: func.func @pool_backward_wide
// POOLGEN: kernel.launch "graph.max_pool_backward"{{.*}}backend = "generated"
func.func @pool_backward_wide(%dy: memref<2x3x9x9xf32>, %x: memref<2x3x27x27xf32>, %dx: memref<2x3x27x27xf32>) {
  kernel.launch "graph.max_pool_backward"(%dy, %x) -> (%dx) {options = {ceil_mode = false, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 3, 3>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 3, 3>}} : (memref<2x3x9x9xf32>, memref<2x3x27x27xf32>) -> memref<2x3x27x27xf32>
  return
}

// -----

// Convolutions in 1 to 3 spatial dims go to oneDNN, others to OpenBLAS.
// CHECK-LABEL: func.func @conv
// CHECK: kernel.launch "graph.conv"{{.*}}backend = "dnnl"
// CHECK: kernel.launch "graph.conv"{{.*}}backend = "openblas"
// WHYNOT: backend 'dnnl' cannot run graph.conv here: it handles 1 to 3 spatial dims
func.func @conv(%x: memref<1x2x5x5xf32>, %w: memref<3x2x3x3xf32>, %y: memref<1x3x3x3xf32>, %x4: memref<1x2x2x2x2x2xf32>, %w4: memref<3x2x1x1x1x1xf32>, %y4: memref<1x3x2x2x2x2xf32>) {
  kernel.launch "graph.conv"(%x, %w) -> (%y) {options = {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>}} : (memref<1x2x5x5xf32>, memref<3x2x3x3xf32>) -> memref<1x3x3x3xf32>
  kernel.launch "graph.conv"(%x4, %w4) -> (%y4) {options = {dilations = array<i64: 1, 1, 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0, 0, 0, 0, 0>, strides = array<i64: 1, 1, 1, 1>}} : (memref<1x2x2x2x2x2xf32>, memref<3x2x1x1x1x1xf32>) -> memref<1x3x2x2x2x2xf32>
  return
}

// -----

// Depthwise convolutions (one input and one output channel per group):
// input gradients on the generated kernels; weight gradients there too,
// except for 3x3 windows over planes of at least 3x3 that the generated
// kernel cannot read unpadded (oneDNN's were faster: strided, or rows
// shorter than 8 on AVX-512 and 56 on AVX2), so a 5x5 window and a 2x2
// plane go generated; forward convolutions generated where they read the
// input unpadded (stride 1, up to 9 taps, rows of at least 8; their fused
// multiply-adds give oneDNN's bits), on every target, and on oneDNN
// otherwise (strided, 5x5). A channel multiplier of 2 (6 outputs from 3
// channels in 3 groups) is not depthwise: oneDNN.
// CHECK-LABEL: func.func @depthwise_conv
// CHECK: kernel.launch "graph.conv"{{.*}}backend = "generated"
// CHECK: kernel.launch "graph.conv_backward_input"{{.*}}backend = "generated"
// CHECK: kernel.launch "graph.conv_backward_weight"{{.*}}backend = "generated"
// CHECK: kernel.launch "graph.conv_backward_weight"{{.*}}backend = "generated"
// CHECK: kernel.launch "graph.conv_backward_weight"{{.*}}backend = "generated"
// CHECK: kernel.launch "graph.conv_backward_input"{{.*}}backend = "dnnl"
// bf16 (--amp): every depthwise weight gradient is generated (summed in
// f32), as are the input gradients.
// CHECK: kernel.launch "graph.conv_backward_weight"{{.*}}backend = "generated"
// CHECK: kernel.launch "graph.conv_backward_input"{{.*}}backend = "generated"
// Planes of 56 columns or more without strides: the forward convolution
// and the 3x3 weight gradient are generated too (on AVX2 as well, read unpadded).
// CHECK: kernel.launch "graph.conv"{{.*}}backend = "generated"
// CHECK: kernel.launch "graph.conv_backward_weight"{{.*}}backend = "generated"
// CHECK: kernel.launch "graph.conv"{{.*}}backend = "dnnl"{{.*}}strides = array<i64: 2, 2>
// CHECK: kernel.launch "graph.conv"{{.*}}backend = "dnnl"{{.*}}memref<3x1x5x5xf32>
// CHECK: kernel.launch "graph.conv_backward_weight"{{.*}}backend = "dnnl"{{.*}}strides = array<i64: 2, 2>
// AVX2-LABEL: func.func @depthwise_conv
// AVX2: kernel.launch "graph.conv"{{.*}}backend = "generated"
// AVX2: kernel.launch "graph.conv_backward_input"{{.*}}backend = "generated"
// AVX2: kernel.launch "graph.conv_backward_weight"{{.*}}backend = "dnnl"
// AVX2: kernel.launch "graph.conv_backward_weight"{{.*}}backend = "generated"
// AVX2: kernel.launch "graph.conv_backward_weight"{{.*}}backend = "generated"
// AVX2: kernel.launch "graph.conv_backward_input"{{.*}}backend = "dnnl"
// AVX2: kernel.launch "graph.conv_backward_weight"{{.*}}backend = "generated"
// AVX2: kernel.launch "graph.conv_backward_input"{{.*}}backend = "generated"
// AVX2: kernel.launch "graph.conv"{{.*}}backend = "generated"
// AVX2: kernel.launch "graph.conv_backward_weight"{{.*}}backend = "generated"
// AVX2: kernel.launch "graph.conv"{{.*}}backend = "dnnl"
// AVX2: kernel.launch "graph.conv"{{.*}}backend = "dnnl"
// AVX2: kernel.launch "graph.conv_backward_weight"{{.*}}backend = "dnnl"
func.func @depthwise_conv(%x: memref<2x3x8x8xf32>, %w: memref<3x1x3x3xf32>, %y: memref<2x3x8x8xf32>, %dx: memref<2x3x8x8xf32>, %dw: memref<3x1x3x3xf32>, %w5: memref<3x1x5x5xf32>, %x2: memref<2x3x2x2xf32>, %w2: memref<6x1x3x3xf32>, %y2: memref<2x6x8x8xf32>, %xb: memref<2x3x8x8xbf16>, %wb: memref<3x1x3x3xbf16>, %dxb: memref<2x3x8x8xbf16>, %xl: memref<1x3x56x56xf32>, %yl: memref<1x3x56x56xf32>, %ys: memref<2x3x4x4xf32>) {
  kernel.launch "graph.conv"(%x, %w) -> (%y) {options = {dilations = array<i64: 1, 1>, group = 3 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>}} : (memref<2x3x8x8xf32>, memref<3x1x3x3xf32>) -> memref<2x3x8x8xf32>
  kernel.launch "graph.conv_backward_input"(%y, %w) -> (%dx) {options = {dilations = array<i64: 1, 1>, group = 3 : i64, input_shape = array<i64: 2, 3, 8, 8>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>}} : (memref<2x3x8x8xf32>, memref<3x1x3x3xf32>) -> memref<2x3x8x8xf32>
  kernel.launch "graph.conv_backward_weight"(%y, %x) -> (%dw) {options = {dilations = array<i64: 1, 1>, group = 3 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>, weight_shape = array<i64: 3, 1, 3, 3>}} : (memref<2x3x8x8xf32>, memref<2x3x8x8xf32>) -> memref<3x1x3x3xf32>
  kernel.launch "graph.conv_backward_weight"(%y, %x) -> (%w5) {options = {dilations = array<i64: 1, 1>, group = 3 : i64, pads = array<i64: 2, 2, 2, 2>, strides = array<i64: 1, 1>, weight_shape = array<i64: 3, 1, 5, 5>}} : (memref<2x3x8x8xf32>, memref<2x3x8x8xf32>) -> memref<3x1x5x5xf32>
  kernel.launch "graph.conv_backward_weight"(%x2, %x2) -> (%dw) {options = {dilations = array<i64: 1, 1>, group = 3 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>, weight_shape = array<i64: 3, 1, 3, 3>}} : (memref<2x3x2x2xf32>, memref<2x3x2x2xf32>) -> memref<3x1x3x3xf32>
  kernel.launch "graph.conv_backward_input"(%y2, %w2) -> (%dx) {options = {dilations = array<i64: 1, 1>, group = 3 : i64, input_shape = array<i64: 2, 3, 8, 8>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>}} : (memref<2x6x8x8xf32>, memref<6x1x3x3xf32>) -> memref<2x3x8x8xf32>
  kernel.launch "graph.conv_backward_weight"(%xb, %xb) -> (%wb) {options = {dilations = array<i64: 1, 1>, group = 3 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>, weight_shape = array<i64: 3, 1, 3, 3>}} : (memref<2x3x8x8xbf16>, memref<2x3x8x8xbf16>) -> memref<3x1x3x3xbf16>
  kernel.launch "graph.conv_backward_input"(%xb, %wb) -> (%dxb) {options = {dilations = array<i64: 1, 1>, group = 3 : i64, input_shape = array<i64: 2, 3, 8, 8>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>}} : (memref<2x3x8x8xbf16>, memref<3x1x3x3xbf16>) -> memref<2x3x8x8xbf16>
  kernel.launch "graph.conv"(%xl, %w) -> (%yl) {options = {dilations = array<i64: 1, 1>, group = 3 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>}} : (memref<1x3x56x56xf32>, memref<3x1x3x3xf32>) -> memref<1x3x56x56xf32>
  kernel.launch "graph.conv_backward_weight"(%xl, %xl) -> (%dw) {options = {dilations = array<i64: 1, 1>, group = 3 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>, weight_shape = array<i64: 3, 1, 3, 3>}} : (memref<1x3x56x56xf32>, memref<1x3x56x56xf32>) -> memref<3x1x3x3xf32>
  kernel.launch "graph.conv"(%x, %w) -> (%ys) {options = {dilations = array<i64: 1, 1>, group = 3 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>}} : (memref<2x3x8x8xf32>, memref<3x1x3x3xf32>) -> memref<2x3x4x4xf32>
  kernel.launch "graph.conv"(%x, %w5) -> (%y) {options = {dilations = array<i64: 1, 1>, group = 3 : i64, pads = array<i64: 2, 2, 2, 2>, strides = array<i64: 1, 1>}} : (memref<2x3x8x8xf32>, memref<3x1x5x5xf32>) -> memref<2x3x8x8xf32>
  kernel.launch "graph.conv_backward_weight"(%ys, %x) -> (%dw) {options = {dilations = array<i64: 1, 1>, group = 3 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>, weight_shape = array<i64: 3, 1, 3, 3>}} : (memref<2x3x4x4xf32>, memref<2x3x8x8xf32>) -> memref<3x1x3x3xf32>
  return
}

// -----

// Convolutions over output planes of at most 4 positions: OpenBLAS (one
// GEMM over all images) for the forward and input gradient only where
// some tap reads only padding (1x1 with a 3x3 window and padding 1), and,
// on targets without AVX-512, for the weight gradient of windows wider
// than one tap; oneDNN where every tap reads the input (2x2), for 1x1
// windows and for larger planes (3x3). The module records the lanes.
// CHECK: module attributes {kernel.vector_lanes = 16 : i64}
// CHECK-LABEL: func.func @small_plane_conv
// CHECK: kernel.launch "graph.conv"{{.*}}backend = "openblas"
// CHECK: kernel.launch "graph.conv_backward_input"{{.*}}backend = "openblas"
// CHECK: kernel.launch "graph.conv_backward_weight"{{.*}}backend = "dnnl"
// CHECK: kernel.launch "graph.conv"{{.*}}backend = "dnnl"
// CHECK: kernel.launch "graph.conv_backward_input"{{.*}}backend = "dnnl"
// CHECK: kernel.launch "graph.conv_backward_weight"{{.*}}backend = "dnnl"
// CHECK: kernel.launch "graph.conv_backward_weight"{{.*}}backend = "dnnl"
// CHECK: kernel.launch "graph.conv_backward_weight"{{.*}}backend = "dnnl"
// AVX2: module attributes {kernel.vector_lanes = 8 : i64}
// AVX2-LABEL: func.func @small_plane_conv
// AVX2: kernel.launch "graph.conv"{{.*}}backend = "openblas"
// AVX2: kernel.launch "graph.conv_backward_input"{{.*}}backend = "openblas"
// AVX2: kernel.launch "graph.conv_backward_weight"{{.*}}backend = "openblas"
// AVX2: kernel.launch "graph.conv"{{.*}}backend = "dnnl"
// AVX2: kernel.launch "graph.conv_backward_input"{{.*}}backend = "dnnl"
// AVX2: kernel.launch "graph.conv_backward_weight"{{.*}}backend = "openblas"
// AVX2: kernel.launch "graph.conv_backward_weight"{{.*}}backend = "dnnl"
// AVX2: kernel.launch "graph.conv_backward_weight"{{.*}}backend = "dnnl"
func.func @small_plane_conv(%x1: memref<4x8x1x1xf32>, %w: memref<8x8x3x3xf32>, %y1: memref<4x8x1x1xf32>, %dx1: memref<4x8x1x1xf32>, %dw: memref<8x8x3x3xf32>, %x2: memref<4x8x2x2xf32>, %y2: memref<4x8x2x2xf32>, %dx2: memref<4x8x2x2xf32>, %dw2: memref<8x8x3x3xf32>, %w1: memref<8x8x1x1xf32>, %dw1: memref<8x8x1x1xf32>, %x3: memref<4x8x3x3xf32>, %dw3: memref<8x8x3x3xf32>) {
  kernel.launch "graph.conv"(%x1, %w) -> (%y1) {options = {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>}} : (memref<4x8x1x1xf32>, memref<8x8x3x3xf32>) -> memref<4x8x1x1xf32>
  kernel.launch "graph.conv_backward_input"(%y1, %w) -> (%dx1) {options = {dilations = array<i64: 1, 1>, group = 1 : i64, input_shape = array<i64: 4, 8, 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>}} : (memref<4x8x1x1xf32>, memref<8x8x3x3xf32>) -> memref<4x8x1x1xf32>
  kernel.launch "graph.conv_backward_weight"(%y1, %x1) -> (%dw) {options = {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>, weight_shape = array<i64: 8, 8, 3, 3>}} : (memref<4x8x1x1xf32>, memref<4x8x1x1xf32>) -> memref<8x8x3x3xf32>
  kernel.launch "graph.conv"(%x2, %w) -> (%y2) {options = {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>}} : (memref<4x8x2x2xf32>, memref<8x8x3x3xf32>) -> memref<4x8x2x2xf32>
  kernel.launch "graph.conv_backward_input"(%y2, %w) -> (%dx2) {options = {dilations = array<i64: 1, 1>, group = 1 : i64, input_shape = array<i64: 4, 8, 2, 2>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>}} : (memref<4x8x2x2xf32>, memref<8x8x3x3xf32>) -> memref<4x8x2x2xf32>
  kernel.launch "graph.conv_backward_weight"(%y2, %x2) -> (%dw2) {options = {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>, weight_shape = array<i64: 8, 8, 3, 3>}} : (memref<4x8x2x2xf32>, memref<4x8x2x2xf32>) -> memref<8x8x3x3xf32>
  kernel.launch "graph.conv_backward_weight"(%y2, %x2) -> (%dw1) {options = {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>, weight_shape = array<i64: 8, 8, 1, 1>}} : (memref<4x8x2x2xf32>, memref<4x8x2x2xf32>) -> memref<8x8x1x1xf32>
  kernel.launch "graph.conv_backward_weight"(%x3, %x3) -> (%dw3) {options = {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>, weight_shape = array<i64: 8, 8, 3, 3>}} : (memref<4x8x3x3xf32>, memref<4x8x3x3xf32>) -> memref<8x8x3x3xf32>
  return
}

// -----

// Batch norm: generated loop nests for f32; the reference kernels for f64
// and for training statistics of one value per channel (which forcing the
// generated backend explains); oneDNN only when asked for (it was not
// faster), and never for f64.
// CHECK-LABEL: func.func @norm
// CHECK: kernel.launch "graph.batch_norm_inference"{{.*}}backend = "reference"
// CHECK: kernel.launch "graph.batch_norm_inference"{{.*}}backend = "generated"
// CHECK: kernel.launch "graph.batch_norm_training"{{.*}}backend = "generated"
// CHECK: kernel.launch "graph.batch_norm_training_backward"{{.*}}backend = "generated"
// CHECK: kernel.launch "graph.batch_norm_training"{{.*}}backend = "reference"
// WHYNOT: backend 'dnnl' cannot run graph.batch_norm_inference here: it handles f32 buffers only
// ONEVALUE: backend 'generated' cannot run graph.batch_norm_training here: batch statistics need more than one value per channel
func.func @norm(%x: memref<2x3x4xf64>, %c: memref<3xf64>, %y: memref<2x3x4xf64>, %xf: memref<2x3x4xf32>, %cf: memref<3xf32>, %yf: memref<2x3x4xf32>, %dx: memref<2x3x4xf32>, %m: memref<3xf32>, %v: memref<3xf32>, %one: memref<1x3xf32>, %yone: memref<1x3xf32>) {
  kernel.launch "graph.batch_norm_inference"(%x, %c, %c, %c, %c) -> (%y) {options = {epsilon = 1.0e-05 : f64}} : (memref<2x3x4xf64>, memref<3xf64>, memref<3xf64>, memref<3xf64>, memref<3xf64>) -> memref<2x3x4xf64>
  kernel.launch "graph.batch_norm_inference"(%xf, %cf, %cf, %cf, %cf) -> (%yf) {options = {epsilon = 1.0e-05 : f64}} : (memref<2x3x4xf32>, memref<3xf32>, memref<3xf32>, memref<3xf32>, memref<3xf32>) -> memref<2x3x4xf32>
  kernel.launch "graph.batch_norm_training"(%xf, %cf, %cf, %cf, %cf) -> (%yf, %m, %v) {options = {epsilon = 1.0e-05 : f64, momentum = 0.9 : f64}} : (memref<2x3x4xf32>, memref<3xf32>, memref<3xf32>, memref<3xf32>, memref<3xf32>) -> (memref<2x3x4xf32>, memref<3xf32>, memref<3xf32>)
  kernel.launch "graph.batch_norm_training_backward"(%yf, %xf, %cf) -> (%dx, %m, %v) {options = {epsilon = 1.0e-05 : f64}} : (memref<2x3x4xf32>, memref<2x3x4xf32>, memref<3xf32>) -> (memref<2x3x4xf32>, memref<3xf32>, memref<3xf32>)
  kernel.launch "graph.batch_norm_training"(%one, %cf, %cf, %cf, %cf) -> (%yone, %m, %v) {options = {epsilon = 1.0e-05 : f64, momentum = 0.9 : f64}} : (memref<1x3xf32>, memref<3xf32>, memref<3xf32>, memref<3xf32>, memref<3xf32>) -> (memref<1x3xf32>, memref<3xf32>, memref<3xf32>)
  return
}

// -----

// *=BACKEND: BACKEND wherever its predicate accepts the launch, the
// registry's choice elsewhere. f64 elementwise ops stay on the reference
// kernels; forcing the generated backend on them says why it cannot.
// CHECK-LABEL: func.func @everywhere
// CHECK: kernel.launch "graph.gemm"{{.*}}backend = "dnnl"
// CHECK: kernel.launch "graph.relu"{{.*}}backend = "generated"
// CHECK: kernel.launch "graph.relu"{{.*}}backend = "reference"
// ALLREF-LABEL: func.func @everywhere
// ALLREF: kernel.launch "graph.gemm"{{.*}}backend = "reference"
// ALLREF: kernel.launch "graph.relu"{{.*}}backend = "reference"
// ALLREF: kernel.launch "graph.relu"{{.*}}backend = "reference"
// ALLBLAS-LABEL: func.func @everywhere
// ALLBLAS: kernel.launch "graph.gemm"{{.*}}backend = "openblas"
// ALLBLAS: kernel.launch "graph.relu"{{.*}}backend = "generated"
// ALLBLAS: kernel.launch "graph.relu"{{.*}}backend = "reference"
// NOGEN: backend 'generated' cannot run graph.relu here: it handles f32, bf16 and f16 tensors (and i1 masks) only
func.func @everywhere(%a: memref<2x3xf32>, %b: memref<3x4xf32>, %c: memref<2x4xf32>, %d: memref<2x4xf32>, %e: memref<8xf64>, %f: memref<8xf64>) {
  kernel.launch "graph.gemm"(%a, %b) -> (%c) {options = {}} : (memref<2x3xf32>, memref<3x4xf32>) -> memref<2x4xf32>
  kernel.launch "graph.relu"(%c) -> (%d) {options = {}} : (memref<2x4xf32>) -> memref<2x4xf32>
  kernel.launch "graph.relu"(%e) -> (%f) {options = {}} : (memref<8xf64>) -> memref<8xf64>
  return
}

// -----

// Losses: generated for f32 scores with i64 or i32 labels and for f32
// pointwise losses; f64 scores stay on the reference kernels.
// CHECK-LABEL: func.func @losses
// CHECK: kernel.launch "graph.softmax_cross_entropy"{{.*}}backend = "generated"
// CHECK: kernel.launch "graph.softmax_cross_entropy_backward"{{.*}}backend = "generated"
// CHECK: kernel.launch "graph.nll_loss"{{.*}}backend = "generated"
// CHECK: kernel.launch "graph.nll_loss"{{.*}}backend = "reference"
// CHECK: kernel.launch "graph.mse_loss"{{.*}}backend = "generated"
// LOSS: backend 'generated' cannot run graph.nll_loss here: it handles f32 scores with i64 or i32 labels only
func.func @losses(%x: memref<8x10xf32>, %y: memref<8xi64>, %y32: memref<8xi32>, %loss: memref<f32>, %dx: memref<8x10xf32>, %nll: memref<f32>, %mse: memref<f32>, %x64: memref<8x10xf64>, %nll64: memref<f64>) {
  kernel.launch "graph.softmax_cross_entropy"(%x, %y) -> (%loss) {options = {reduction = "mean"}} : (memref<8x10xf32>, memref<8xi64>) -> memref<f32>
  kernel.launch "graph.softmax_cross_entropy_backward"(%loss, %x, %y) -> (%dx) {options = {reduction = "mean"}} : (memref<f32>, memref<8x10xf32>, memref<8xi64>) -> memref<8x10xf32>
  kernel.launch "graph.nll_loss"(%x, %y32) -> (%nll) {options = {reduction = "mean"}} : (memref<8x10xf32>, memref<8xi32>) -> memref<f32>
  kernel.launch "graph.nll_loss"(%x64, %y) -> (%nll64) {options = {reduction = "mean"}} : (memref<8x10xf64>, memref<8xi64>) -> memref<f64>
  kernel.launch "graph.mse_loss"(%x, %dx) -> (%mse) {options = {reduction = "sum"}} : (memref<8x10xf32>, memref<8x10xf32>) -> memref<f32>
  return
}

// -----

// Batches of small matrices whose lhs is a transpose of its last two dims
// (attention's dV = P^T dO): OpenBLAS on AVX-512 targets, oneDNN on AVX2
// (gemm:jit there reads a transposed lhs at full speed) and for an lhs
// that is not read transposed, for larger matrices and for a batch of 2.
// CHECK-LABEL: func.func @transposed_lhs
// CHECK: kernel.launch "graph.transpose"{{.*}}backend = "generated"
// CHECK: kernel.launch "graph.matmul"{{.*}}backend = "openblas"
// CHECK: kernel.launch "graph.matmul"{{.*}}backend = "dnnl"
// CHECK: kernel.launch "graph.transpose"{{.*}}backend = "generated"
// CHECK: kernel.launch "graph.matmul"{{.*}}backend = "dnnl"
// CHECK: kernel.launch "graph.transpose"{{.*}}backend = "generated"
// CHECK: kernel.launch "graph.matmul"{{.*}}backend = "dnnl"
// AVX2-LABEL: func.func @transposed_lhs
// AVX2: kernel.launch "graph.matmul"{{.*}}backend = "dnnl"
// AVX2: kernel.launch "graph.matmul"{{.*}}backend = "dnnl"
// AVX2: kernel.launch "graph.matmul"{{.*}}backend = "dnnl"
// AVX2: kernel.launch "graph.matmul"{{.*}}backend = "dnnl"
func.func @transposed_lhs(%p: memref<64x64x64xf32>, %pt: memref<64x64x64xf32>, %do: memref<64x64x32xf32>, %dv: memref<64x64x32xf32>, %big: memref<12x128x128xf32>, %bigt: memref<12x128x128xf32>, %bdo: memref<12x128x64xf32>, %bdv: memref<12x128x64xf32>, %two: memref<2x64x64xf32>, %twot: memref<2x64x64xf32>, %tdo: memref<2x64x32xf32>, %tdv: memref<2x64x32xf32>) {
  kernel.launch "graph.transpose"(%p) -> (%pt) {options = {perm = array<i64: 0, 2, 1>}} : (memref<64x64x64xf32>) -> memref<64x64x64xf32>
  kernel.launch "graph.matmul"(%pt, %do) -> (%dv) {options = {}} : (memref<64x64x64xf32>, memref<64x64x32xf32>) -> memref<64x64x32xf32>
  kernel.launch "graph.matmul"(%p, %do) -> (%dv) {options = {}} : (memref<64x64x64xf32>, memref<64x64x32xf32>) -> memref<64x64x32xf32>
  kernel.launch "graph.transpose"(%big) -> (%bigt) {options = {perm = array<i64: 0, 2, 1>}} : (memref<12x128x128xf32>) -> memref<12x128x128xf32>
  kernel.launch "graph.matmul"(%bigt, %bdo) -> (%bdv) {options = {}} : (memref<12x128x128xf32>, memref<12x128x64xf32>) -> memref<12x128x64xf32>
  kernel.launch "graph.transpose"(%two) -> (%twot) {options = {perm = array<i64: 0, 2, 1>}} : (memref<2x64x64xf32>) -> memref<2x64x64xf32>
  kernel.launch "graph.matmul"(%twot, %tdo) -> (%tdv) {options = {}} : (memref<2x64x64xf32>, memref<2x64x32xf32>) -> memref<2x64x32xf32>
  return
}

// -----

// bf16 storage around f32 products (--amp bf16-storage): a bf16 max
// pooling whose windows tile the input runs the generated kernel on any
// target; one they do not tile (3x3, stride 2, padded) is oneDNN's only on
// AVX-512 (oneDNN 2.6 has no bf16 primitives below avx512_core, so an
// AVX2 CPU could not open the session), the generated window kernel's on
// AVX2.
// CHECK-LABEL: func.func @bf16_storage
// CHECK: kernel.launch "graph.conv"{{.*}}backend = "dnnl"
// CHECK: kernel.launch "graph.cast"{{.*}}backend = "generated"
// CHECK: kernel.launch "graph.max_pool"{{.*}}backend = "generated"
// CHECK: kernel.launch "graph.max_pool"{{.*}}backend = "dnnl"
// AVX2-LABEL: func.func @bf16_storage
// AVX2: kernel.launch "graph.conv"{{.*}}backend = "dnnl"
// AVX2: kernel.launch "graph.cast"{{.*}}backend = "generated"
// AVX2: kernel.launch "graph.max_pool"{{.*}}backend = "generated"
// AVX2: kernel.launch "graph.max_pool"{{.*}}backend = "generated"
func.func @bf16_storage(%x: memref<2x3x8x8xf32>, %w: memref<4x3x3x3xf32>, %y: memref<2x4x6x6xf32>, %y16: memref<2x4x6x6xbf16>, %p: memref<2x4x3x3xbf16>, %q: memref<2x4x3x3xbf16>) {
  kernel.launch "graph.conv"(%x, %w) -> (%y) {options = {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>}} : (memref<2x3x8x8xf32>, memref<4x3x3x3xf32>) -> memref<2x4x6x6xf32>
  kernel.launch "graph.cast"(%y) -> (%y16) {options = {to = bf16}} : (memref<2x4x6x6xf32>) -> memref<2x4x6x6xbf16>
  kernel.launch "graph.max_pool"(%y16) -> (%p) {options = {ceil_mode = false, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>}} : (memref<2x4x6x6xbf16>) -> memref<2x4x3x3xbf16>
  kernel.launch "graph.max_pool"(%y16) -> (%q) {options = {ceil_mode = false, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>}} : (memref<2x4x6x6xbf16>) -> memref<2x4x3x3xbf16>
  return
}

// -----

// NATIVE-BF16-ONLY (the AVX2 run ends here)
// bf16 (--amp bf16): oneDNN runs all-bf16 convolutions and products;
// generated kernels run elementwise ops, casts (computing in f32) and the
// max pooling whose windows tile the input, as in f32; the reference
// kernels take no bf16, so forcing them leaves these launches where they
// can run.
// CHECK-LABEL: func.func @bf16
// CHECK: kernel.launch "graph.cast"{{.*}}backend = "generated"
// CHECK: kernel.launch "graph.conv"{{.*}}backend = "dnnl"
// CHECK: kernel.launch "graph.relu"{{.*}}backend = "generated"
// CHECK: kernel.launch "graph.max_pool"{{.*}}backend = "generated"
// CHECK: kernel.launch "graph.matmul"{{.*}}backend = "dnnl"
// ALLREF-LABEL: func.func @bf16
// ALLREF: kernel.launch "graph.cast"{{.*}}backend = "generated"
// ALLREF: kernel.launch "graph.conv"{{.*}}backend = "dnnl"
func.func @bf16(%x: memref<2x3x8x8xf32>, %x16: memref<2x3x8x8xbf16>, %w: memref<4x3x3x3xbf16>, %y: memref<2x4x6x6xbf16>, %r: memref<2x4x6x6xbf16>, %p: memref<2x4x3x3xbf16>, %a: memref<2x36xbf16>, %b: memref<36x5xbf16>, %o: memref<2x5xbf16>) {
  kernel.launch "graph.cast"(%x) -> (%x16) {options = {to = bf16}} : (memref<2x3x8x8xf32>) -> memref<2x3x8x8xbf16>
  kernel.launch "graph.conv"(%x16, %w) -> (%y) {options = {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>}} : (memref<2x3x8x8xbf16>, memref<4x3x3x3xbf16>) -> memref<2x4x6x6xbf16>
  kernel.launch "graph.relu"(%y) -> (%r) {options = {}} : (memref<2x4x6x6xbf16>) -> memref<2x4x6x6xbf16>
  kernel.launch "graph.max_pool"(%r) -> (%p) {options = {ceil_mode = false, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>}} : (memref<2x4x6x6xbf16>) -> memref<2x4x3x3xbf16>
  kernel.launch "graph.matmul"(%a, %b) -> (%o) {options = {}} : (memref<2x36xbf16>, memref<36x5xbf16>) -> memref<2x5xbf16>
  return
}
