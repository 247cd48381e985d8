// --trainc-convs-as-products: convolutions whose kernel covers the whole
// unpadded input plane are matrix products over flattened images, and so
// are convolutions over planes so small that every output position reads
// every input position, by their weight's matrix (graph.conv_matrix).
// RUN: trainc-opt %s --trainc-convs-as-products -split-input-file | FileCheck %s

// A 2x2 kernel over a 2x2 plane with stride 2 (ResNet-18's layer4.0.conv1
// once its dead taps are gone): K = 4 * 2 * 2. The forward keeps its bias,
// the batch stays relative (reshape's 0), the weight gradient is dy^T x.
// CHECK-LABEL: func.func @whole_plane
// CHECK-DAG: %[[X:.*]] = graph.reshape %arg0 {shape = array<i64: 0, 16>} : (tensor<2x4x2x2xf32>) -> tensor<2x16xf32>
// CHECK-DAG: %[[W:.*]] = graph.reshape %arg1 {shape = array<i64: 8, 16>} : (tensor<8x4x2x2xf32>) -> tensor<8x16xf32>
// CHECK: %[[Y:.*]] = graph.gemm %[[X]], %[[W]], %arg2 {trans_b = true} : (tensor<2x16xf32>, tensor<8x16xf32>, tensor<8xf32>) -> tensor<2x8xf32>
// CHECK: %[[Y4:.*]] = graph.reshape %[[Y]] {shape = array<i64: 0, 8, 1, 1>} : (tensor<2x8xf32>) -> tensor<2x8x1x1xf32>
// CHECK: %[[DY:.*]] = graph.reshape %arg3 {shape = array<i64: 0, 8>} : (tensor<2x8x1x1xf32>) -> tensor<2x8xf32>
// CHECK: %[[DX:.*]] = graph.matmul %[[DY]], %{{.*}} : (tensor<2x8xf32>, tensor<8x16xf32>) -> tensor<2x16xf32>
// CHECK: %[[DX4:.*]] = graph.reshape %[[DX]] {shape = array<i64: 0, 4, 2, 2>} : (tensor<2x16xf32>) -> tensor<2x4x2x2xf32>
// CHECK: %[[DW:.*]] = graph.gemm %{{.*}}, %{{.*}} {trans_a = true} : (tensor<2x8xf32>, tensor<2x16xf32>) -> tensor<8x16xf32>
// CHECK: %[[DW4:.*]] = graph.reshape %[[DW]] {shape = array<i64: 8, 4, 2, 2>} : (tensor<8x16xf32>) -> tensor<8x4x2x2xf32>
// CHECK-NOT: graph.conv
// CHECK: return %[[Y4]], %[[DX4]], %[[DW4]]
func.func @whole_plane(%x: tensor<2x4x2x2xf32>, %w: tensor<8x4x2x2xf32>, %b: tensor<8xf32>, %dy: tensor<2x8x1x1xf32>) -> (tensor<2x8x1x1xf32>, tensor<2x4x2x2xf32>, tensor<8x4x2x2xf32>) {
  %y = graph.conv %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1} : (tensor<2x4x2x2xf32>, tensor<8x4x2x2xf32>, tensor<8xf32>) -> tensor<2x8x1x1xf32>
  %dx = graph.conv_backward_input %dy, %w {input_shape = array<i64: 2, 4, 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1} : (tensor<2x8x1x1xf32>, tensor<8x4x2x2xf32>) -> tensor<2x4x2x2xf32>
  %dw = graph.conv_backward_weight %dy, %x {weight_shape = array<i64: 8, 4, 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1} : (tensor<2x8x1x1xf32>, tensor<2x4x2x2xf32>) -> tensor<8x4x2x2xf32>
  return %y, %dx, %dw : tensor<2x8x1x1xf32>, tensor<2x4x2x2xf32>, tensor<8x4x2x2xf32>
}

// -----

// A 1x1 kernel over 1x1 planes (a 3x3 kernel's centre tap), dilated: the
// dilation of a one-tap dim changes nothing. A dynamic batch stays so.
// CHECK-LABEL: func.func @one_by_one
// CHECK: graph.gemm {{.*}} : (tensor<?x4xf32>, tensor<8x4xf32>) -> tensor<?x8xf32>
// CHECK: graph.reshape {{.*}} -> tensor<?x8x1x1xf32>
// CHECK-NOT: graph.conv
func.func @one_by_one(%x: tensor<?x4x1x1xf32>, %w: tensor<8x4x1x1xf32>) -> tensor<?x8x1x1xf32> {
  %y = graph.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 2, 2>, group = 1} : (tensor<?x4x1x1xf32>, tensor<8x4x1x1xf32>) -> tensor<?x8x1x1xf32>
  return %y : tensor<?x8x1x1xf32>
}

// -----

// Not products: padding, a kernel smaller than the plane (several output
// positions), groups, a dilated kernel wider than one tap, a stride-2 1x1
// kernel on a 2x2 plane (reads one position of four).
// CHECK-LABEL: func.func @not_products
// CHECK-NOT: graph.gemm
// CHECK-NOT: graph.matmul
// CHECK-COUNT-5: graph.conv
func.func @not_products(%x: tensor<2x4x2x2xf32>, %w: tensor<8x4x2x2xf32>, %w1: tensor<8x4x1x1xf32>, %wg: tensor<8x2x2x2xf32>, %x3: tensor<2x4x3x3xf32>) -> (tensor<2x8x3x3xf32>, tensor<2x8x2x2xf32>, tensor<2x8x1x1xf32>, tensor<2x8x1x1xf32>, tensor<2x8x1x1xf32>) {
  %padded = graph.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1} : (tensor<2x4x2x2xf32>, tensor<8x4x2x2xf32>) -> tensor<2x8x3x3xf32>
  %pointwise = graph.conv %x, %w1 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1} : (tensor<2x4x2x2xf32>, tensor<8x4x1x1xf32>) -> tensor<2x8x2x2xf32>
  %grouped = graph.conv %x, %wg {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 2} : (tensor<2x4x2x2xf32>, tensor<8x2x2x2xf32>) -> tensor<2x8x1x1xf32>
  %dilated = graph.conv %x3, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 2, 2>, group = 1} : (tensor<2x4x3x3xf32>, tensor<8x4x2x2xf32>) -> tensor<2x8x1x1xf32>
  %strided = graph.conv %x, %w1 {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1} : (tensor<2x4x2x2xf32>, tensor<8x4x1x1xf32>) -> tensor<2x8x1x1xf32>
  return %padded, %pointwise, %grouped, %dilated, %strided : tensor<2x8x3x3xf32>, tensor<2x8x2x2xf32>, tensor<2x8x1x1xf32>, tensor<2x8x1x1xf32>, tensor<2x8x1x1xf32>
}

// -----

// 3x3 taps with padding 1 over 2x2 planes (ResNet-18's layer3 on 32x32
// images, batch 32): x as [N, C * 4] times the weight's matrix [M * 4, C * 4]
// (trans_b), with the bias at each output position; the input gradient
// dy as [N, M * 4] times the same matrix; the weight gradient the
// matrix's, dy' x, whose entries conv_matrix_backward adds to their taps.
// CHECK-LABEL: func.func @small_plane
// CHECK: %[[B1:.*]] = graph.reshape %arg2 {shape = array<i64: 8, 1>} : (tensor<8xf32>) -> tensor<8x1xf32>
// CHECK: %[[B4:.*]] = graph.expand %[[B1]] {shape = array<i64: 8, 4>} : (tensor<8x1xf32>) -> tensor<8x4xf32>
// CHECK: %[[B:.*]] = graph.reshape %[[B4]] {shape = array<i64: 32>} : (tensor<8x4xf32>) -> tensor<32xf32>
// CHECK: %[[M:.*]] = graph.conv_matrix %arg1 {input_spatial = array<i64: 2, 2>, output_spatial = array<i64: 2, 2>, pads = array<i64: 1, 1>, strides = array<i64: 1, 1>} : (tensor<8x4x3x3xf32>) -> tensor<32x16xf32>
// CHECK: %[[X:.*]] = graph.reshape %arg0 {shape = array<i64: 0, 16>} : (tensor<32x4x2x2xf32>) -> tensor<32x16xf32>
// CHECK: %[[Y:.*]] = graph.gemm %[[X]], %[[M]], %[[B]] {trans_b = true} : (tensor<32x16xf32>, tensor<32x16xf32>, tensor<32xf32>) -> tensor<32x32xf32>
// CHECK: %[[Y4:.*]] = graph.reshape %[[Y]] {shape = array<i64: 0, 8, 2, 2>} : (tensor<32x32xf32>) -> tensor<32x8x2x2xf32>
// CHECK: %[[M2:.*]] = graph.conv_matrix %arg1 {{.*}} -> tensor<32x16xf32>
// CHECK: %[[DY:.*]] = graph.reshape %arg3 {shape = array<i64: 0, 32>} : (tensor<32x8x2x2xf32>) -> tensor<32x32xf32>
// CHECK: %[[DX:.*]] = graph.matmul %[[DY]], %[[M2]] : (tensor<32x32xf32>, tensor<32x16xf32>) -> tensor<32x16xf32>
// CHECK: %[[DX4:.*]] = graph.reshape %[[DX]] {shape = array<i64: 0, 4, 2, 2>} : (tensor<32x16xf32>) -> tensor<32x4x2x2xf32>
// CHECK: %[[DM:.*]] = graph.gemm %{{.*}}, %{{.*}} {trans_a = true} : (tensor<32x32xf32>, tensor<32x16xf32>) -> tensor<32x16xf32>
// CHECK: %[[DW:.*]] = graph.conv_matrix_backward %[[DM]] {input_spatial = array<i64: 2, 2>, output_spatial = array<i64: 2, 2>, pads = array<i64: 1, 1>, strides = array<i64: 1, 1>, weight_shape = array<i64: 8, 4, 3, 3>} : (tensor<32x16xf32>) -> tensor<8x4x3x3xf32>
// CHECK-NOT: graph.conv %
// CHECK: return %[[Y4]], %[[DX4]], %[[DW]]
func.func @small_plane(%x: tensor<32x4x2x2xf32>, %w: tensor<8x4x3x3xf32>, %b: tensor<8xf32>, %dy: tensor<32x8x2x2xf32>) -> (tensor<32x8x2x2xf32>, tensor<32x4x2x2xf32>, tensor<8x4x3x3xf32>) {
  %y = graph.conv %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1} : (tensor<32x4x2x2xf32>, tensor<8x4x3x3xf32>, tensor<8xf32>) -> tensor<32x8x2x2xf32>
  %dx = graph.conv_backward_input %dy, %w {input_shape = array<i64: 32, 4, 2, 2>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1} : (tensor<32x8x2x2xf32>, tensor<8x4x3x3xf32>) -> tensor<32x4x2x2xf32>
  %dw = graph.conv_backward_weight %dy, %x {weight_shape = array<i64: 8, 4, 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1} : (tensor<32x8x2x2xf32>, tensor<32x4x2x2xf32>) -> tensor<8x4x3x3xf32>
  return %y, %dx, %dw : tensor<32x8x2x2xf32>, tensor<32x4x2x2xf32>, tensor<8x4x3x3xf32>
}

// -----

// Not in matrix form: a 4x4 plane (corner outputs miss far inputs), a
// 5x5 kernel over a 3x3 plane (a matrix of 81 entries per channel pair
// for 25 taps: more than twice the weight), a bf16 weight (the gradient's
// kernels sum f32), a dilated window, a batch of 8 and a dynamic one
// (the products would not repay the matrix).
// CHECK-LABEL: func.func @not_matrices
// CHECK-NOT: graph.conv_matrix
// CHECK-COUNT-6: graph.conv %
func.func @not_matrices(%x4: tensor<32x4x4x4xf32>, %w: tensor<8x4x3x3xf32>, %x3: tensor<32x4x3x3xf32>, %w5: tensor<8x4x5x5xf32>, %xb: tensor<32x4x2x2xbf16>, %wb: tensor<8x4x3x3xbf16>, %x2: tensor<32x4x2x2xf32>, %x8: tensor<8x4x2x2xf32>, %xd: tensor<?x4x2x2xf32>) -> (tensor<32x8x4x4xf32>, tensor<32x8x3x3xf32>, tensor<32x8x2x2xbf16>, tensor<32x8x2x2xf32>, tensor<8x8x2x2xf32>, tensor<?x8x2x2xf32>) {
  %large = graph.conv %x4, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1} : (tensor<32x4x4x4xf32>, tensor<8x4x3x3xf32>) -> tensor<32x8x4x4xf32>
  %grown = graph.conv %x3, %w5 {strides = array<i64: 1, 1>, pads = array<i64: 2, 2, 2, 2>, dilations = array<i64: 1, 1>, group = 1} : (tensor<32x4x3x3xf32>, tensor<8x4x5x5xf32>) -> tensor<32x8x3x3xf32>
  %low = graph.conv %xb, %wb {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1} : (tensor<32x4x2x2xbf16>, tensor<8x4x3x3xbf16>) -> tensor<32x8x2x2xbf16>
  %dilated = graph.conv %x2, %w {strides = array<i64: 1, 1>, pads = array<i64: 2, 2, 2, 2>, dilations = array<i64: 2, 2>, group = 1} : (tensor<32x4x2x2xf32>, tensor<8x4x3x3xf32>) -> tensor<32x8x2x2xf32>
  %small = graph.conv %x8, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1} : (tensor<8x4x2x2xf32>, tensor<8x4x3x3xf32>) -> tensor<8x8x2x2xf32>
  %dynamic = graph.conv %xd, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1} : (tensor<?x4x2x2xf32>, tensor<8x4x3x3xf32>) -> tensor<?x8x2x2xf32>
  return %large, %grown, %low, %dilated, %small, %dynamic : tensor<32x8x4x4xf32>, tensor<32x8x3x3xf32>, tensor<32x8x2x2xbf16>, tensor<32x8x2x2xf32>, tensor<8x8x2x2xf32>, tensor<?x8x2x2xf32>
}
