// --trainc-convs-as-products: convolutions whose kernel covers the whole
// unpadded input plane are matrix products over flattened images.
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
