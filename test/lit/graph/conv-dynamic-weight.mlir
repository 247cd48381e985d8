// A grouped conv whose weight has a dynamic input-channel dim is valid and infers its result.
// RUN: trainc-opt %s | FileCheck %s
// Bug: ConvOp::inferReturnTypes (NeuralOps.cpp) computes weight.getDimSize(1) * group
// before checking for a dynamic dim; kDynamic * 2 overflows (to 0 in practice) and the
// op is rejected with "conv input has 4 channels but weight 16x?x3x3 with group 2 expects 0".

// CHECK-LABEL: func.func @grouped_dynamic_weight
// CHECK: graph.conv %{{.*}}, %{{.*}} {{.*}} : (tensor<1x4x8x8xf32>, tensor<16x?x3x3xf32>) -> tensor<1x16x6x6xf32>
func.func @grouped_dynamic_weight(%x: tensor<1x4x8x8xf32>, %w: tensor<16x?x3x3xf32>) -> tensor<1x16x6x6xf32> {
  %0 = graph.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 2} : (tensor<1x4x8x8xf32>, tensor<16x?x3x3xf32>) -> tensor<1x16x6x6xf32>
  return %0 : tensor<1x16x6x6xf32>
}
