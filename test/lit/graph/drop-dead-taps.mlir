// --trainc-drop-dead-taps: convolutions whose kernel taps only ever read
// padding use the live taps alone; the weight gradient goes back into the
// full kernel's shape through graph.slice_backward.
// RUN: trainc-opt %s --trainc-drop-dead-taps -split-input-file | FileCheck %s

// A 3x3 kernel with padding 1 over a 1x1 plane (ResNet-18's last stage on
// 32x32 images): the centre tap alone, no padding. Forward and input
// gradient read the slice; the weight gradient of the 1x1 kernel is placed
// into zeros of the 3x3 kernel.
// CHECK-LABEL: func.func @centre_tap
// CHECK: %[[W:.*]] = graph.slice %arg1 {ends = array<i64: 8, 4, 2, 2>, starts = array<i64: 0, 0, 1, 1>, steps = array<i64: 1, 1, 1, 1>} : (tensor<8x4x3x3xf32>) -> tensor<8x4x1x1xf32>
// CHECK: graph.conv %arg0, %[[W]] {{.*}}pads = array<i64: 0, 0, 0, 0>{{.*}} : (tensor<2x4x1x1xf32>, tensor<8x4x1x1xf32>) -> tensor<2x8x1x1xf32>
// CHECK: %[[W2:.*]] = graph.slice %arg1
// CHECK: graph.conv_backward_input %arg2, %[[W2]] {{.*}}pads = array<i64: 0, 0, 0, 0>
// CHECK: %[[G:.*]] = graph.conv_backward_weight %arg2, %arg0 {{.*}}pads = array<i64: 0, 0, 0, 0>{{.*}}weight_shape = array<i64: 8, 4, 1, 1>{{.*}} -> tensor<8x4x1x1xf32>
// CHECK: graph.slice_backward %[[G]] {ends = array<i64: 8, 4, 2, 2>, input_shape = array<i64: 8, 4, 3, 3>, starts = array<i64: 0, 0, 1, 1>, steps = array<i64: 1, 1, 1, 1>} : (tensor<8x4x1x1xf32>) -> tensor<8x4x3x3xf32>
func.func @centre_tap(%x: tensor<2x4x1x1xf32>, %w: tensor<8x4x3x3xf32>, %dy: tensor<2x8x1x1xf32>) -> (tensor<2x8x1x1xf32>, tensor<2x4x1x1xf32>, tensor<8x4x3x3xf32>) {
  %y = graph.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1} : (tensor<2x4x1x1xf32>, tensor<8x4x3x3xf32>) -> tensor<2x8x1x1xf32>
  %dx = graph.conv_backward_input %dy, %w {input_shape = array<i64: 2, 4, 1, 1>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1} : (tensor<2x8x1x1xf32>, tensor<8x4x3x3xf32>) -> tensor<2x4x1x1xf32>
  %dw = graph.conv_backward_weight %dy, %x {weight_shape = array<i64: 8, 4, 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1} : (tensor<2x8x1x1xf32>, tensor<2x4x1x1xf32>) -> tensor<8x4x3x3xf32>
  return %y, %dx, %dw : tensor<2x8x1x1xf32>, tensor<2x4x1x1xf32>, tensor<8x4x3x3xf32>
}

// -----

// Stride 2 from 2x2 to 1x1 (ResNet-18's layer4.0.conv1): taps 1 and 2 of
// each dim read rows 0 and 1, tap 0 row -1: a 2x2 kernel from tap 1.
// CHECK-LABEL: func.func @strided
// CHECK: graph.slice %arg1 {ends = array<i64: 8, 4, 3, 3>, starts = array<i64: 0, 0, 1, 1>, {{.*}} -> tensor<8x4x2x2xf32>
// CHECK: graph.conv {{.*}}pads = array<i64: 0, 0, 0, 0>{{.*}}strides = array<i64: 2, 2>{{.*}} -> tensor<2x8x1x1xf32>
func.func @strided(%x: tensor<2x4x2x2xf32>, %w: tensor<8x4x3x3xf32>) -> tensor<2x8x1x1xf32> {
  %y = graph.conv %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1} : (tensor<2x4x2x2xf32>, tensor<8x4x3x3xf32>) -> tensor<2x8x1x1xf32>
  return %y : tensor<2x8x1x1xf32>
}

// -----

// One spatial dim only: a 1x5 plane keeps its three column taps, loses
// the rows above and below.
// CHECK-LABEL: func.func @one_dim
// CHECK: graph.slice %arg1 {ends = array<i64: 8, 4, 2, 3>, starts = array<i64: 0, 0, 1, 0>, {{.*}} -> tensor<8x4x1x3xf32>
// CHECK: graph.conv {{.*}}pads = array<i64: 0, 1, 0, 1>{{.*}} -> tensor<2x8x1x5xf32>
func.func @one_dim(%x: tensor<2x4x1x5xf32>, %w: tensor<8x4x3x3xf32>) -> tensor<2x8x1x5xf32> {
  %y = graph.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1} : (tensor<2x4x1x5xf32>, tensor<8x4x3x3xf32>) -> tensor<2x8x1x5xf32>
  return %y : tensor<2x8x1x5xf32>
}

// -----

// Every tap reads the input somewhere (2x2 planes, padding 1): unchanged.
// So is a convolution with dynamic shapes.
// CHECK-LABEL: func.func @all_live
// CHECK-NOT: graph.slice
// CHECK: graph.conv %arg0, %arg1 {{.*}}pads = array<i64: 1, 1, 1, 1>
// CHECK: graph.conv %arg2, %arg1 {{.*}}pads = array<i64: 1, 1, 1, 1>
func.func @all_live(%x: tensor<2x4x2x2xf32>, %w: tensor<8x4x3x3xf32>, %d: tensor<?x4x1x1xf32>) -> (tensor<2x8x2x2xf32>, tensor<?x8x1x1xf32>) {
  %y = graph.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1} : (tensor<2x4x2x2xf32>, tensor<8x4x3x3xf32>) -> tensor<2x8x2x2xf32>
  %z = graph.conv %d, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1} : (tensor<?x4x1x1xf32>, tensor<8x4x3x3xf32>) -> tensor<?x8x1x1xf32>
  return %y, %z : tensor<2x8x2x2xf32>, tensor<?x8x1x1xf32>
}

// -----

// --amp: the conv reads the bf16 cast of an f32 parameter, and the
// parameter's gradient is the weight gradient cast back to f32. The
// parameter is sliced before its cast (the centre tap alone is rounded),
// and the narrow gradient is cast before it is placed into zeros (f32).
// CHECK-LABEL: func.func @cast_weight
// CHECK: %[[S:.*]] = graph.slice %arg1 {{.*}} : (tensor<8x4x3x3xf32>) -> tensor<8x4x1x1xf32>
// CHECK: %[[W:.*]] = graph.cast %[[S]] {to = bf16} : (tensor<8x4x1x1xf32>) -> tensor<8x4x1x1xbf16>
// CHECK: graph.conv %arg0, %[[W]] {{.*}} : (tensor<2x4x1x1xbf16>, tensor<8x4x1x1xbf16>) -> tensor<2x8x1x1xbf16>
// CHECK: %[[G:.*]] = graph.conv_backward_weight {{.*}} -> tensor<8x4x1x1xbf16>
// CHECK: %[[G32:.*]] = graph.cast %[[G]] {to = f32} : (tensor<8x4x1x1xbf16>) -> tensor<8x4x1x1xf32>
// CHECK: %[[DW:.*]] = graph.slice_backward %[[G32]] {{.*}} : (tensor<8x4x1x1xf32>) -> tensor<8x4x3x3xf32>
// CHECK: return %{{.*}}, %[[DW]]
func.func @cast_weight(%x: tensor<2x4x1x1xbf16>, %w32: tensor<8x4x3x3xf32>, %dy: tensor<2x8x1x1xbf16>) -> (tensor<2x8x1x1xbf16>, tensor<8x4x3x3xf32>) {
  %w = graph.cast %w32 {to = bf16} : (tensor<8x4x3x3xf32>) -> tensor<8x4x3x3xbf16>
  %y = graph.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1} : (tensor<2x4x1x1xbf16>, tensor<8x4x3x3xbf16>) -> tensor<2x8x1x1xbf16>
  %dw = graph.conv_backward_weight %dy, %x {weight_shape = array<i64: 8, 4, 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1} : (tensor<2x8x1x1xbf16>, tensor<2x4x1x1xbf16>) -> tensor<8x4x3x3xbf16>
  %dw32 = graph.cast %dw {to = f32} : (tensor<8x4x3x3xbf16>) -> tensor<8x4x3x3xf32>
  return %y, %dw32 : tensor<2x8x1x1xbf16>, tensor<8x4x3x3xf32>
}
