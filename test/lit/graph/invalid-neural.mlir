// Verifier errors of matmul, gemm, conv, pooling and normalization ops.
// RUN: trainc-opt %s -split-input-file -verify-diagnostics

func.func @matmul_contraction_mismatch(%a: tensor<2x3x4xf32>, %b: tensor<5x6xf32>) {
  // expected-error @+2 {{matmul contraction sizes differ: 2x3x4 x 5x6}}
  // expected-error @+1 {{'graph.matmul' op failed to infer returned types}}
  %0 = graph.matmul %a, %b : (tensor<2x3x4xf32>, tensor<5x6xf32>) -> tensor<2x3x6xf32>
  return
}

// -----

// A 1-D rhs is a column: its length is the contraction size.
func.func @matmul_vector_contraction_mismatch(%a: tensor<3x4xf32>, %v: tensor<3xf32>) {
  // expected-error @+2 {{matmul contraction sizes differ: 3x4 x 3}}
  // expected-error @+1 {{'graph.matmul' op failed to infer returned types}}
  %0 = graph.matmul %a, %v : (tensor<3x4xf32>, tensor<3xf32>) -> tensor<3xf32>
  return
}

// -----

func.func @matmul_batch_clash(%a: tensor<2x3x4xf32>, %b: tensor<5x4x6xf32>) {
  // expected-error @+2 {{matmul batch dims do not broadcast: 2x3x4 x 5x4x6}}
  // expected-error @+1 {{'graph.matmul' op failed to infer returned types}}
  %0 = graph.matmul %a, %b : (tensor<2x3x4xf32>, tensor<5x4x6xf32>) -> tensor<2x3x6xf32>
  return
}

// -----

func.func @matmul_scalar(%a: tensor<f32>, %b: tensor<4xf32>) {
  // expected-error @+2 {{matmul operands must not be scalars}}
  // expected-error @+1 {{'graph.matmul' op failed to infer returned types}}
  %0 = graph.matmul %a, %b : (tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @matmul_element_types_differ(%a: tensor<3x4xf32>, %b: tensor<4x5xf16>) {
  // expected-error @+2 {{operand element types differ}}
  // expected-error @+1 {{'graph.matmul' op failed to infer returned types}}
  %0 = graph.matmul %a, %b : (tensor<3x4xf32>, tensor<4x5xf16>) -> tensor<3x5xf32>
  return
}

// -----

func.func @matmul_integers(%a: tensor<3x4xi32>, %b: tensor<4x5xi32>) {
  // expected-error @+1 {{'graph.matmul' op operand #0 must be ranked tensor of floating-point values, but got 'tensor<3x4xi32>'}}
  %0 = graph.matmul %a, %b : (tensor<3x4xi32>, tensor<4x5xi32>) -> tensor<3x5xi32>
  return
}

// -----

func.func @matmul_result_disagrees(%a: tensor<3x4xf32>, %b: tensor<4x5xf32>) {
  // expected-error @+2 {{'graph.matmul' op inferred type(s) 'tensor<3x5xf32>' are incompatible with return type(s) of operation 'tensor<5x3xf32>'}}
  // expected-error @+1 {{'graph.matmul' op failed to infer returned types}}
  %0 = graph.matmul %a, %b : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<5x3xf32>
  return
}

// -----

func.func @gemm_not_2d(%a: tensor<2x3x4xf32>, %b: tensor<4x5xf32>) {
  // expected-error @+2 {{gemm operands must be 2-D, got 2x3x4 and 4x5}}
  // expected-error @+1 {{'graph.gemm' op failed to infer returned types}}
  %0 = graph.gemm %a, %b : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
  return
}

// -----

func.func @gemm_vector_operand(%a: tensor<3x4xf32>, %b: tensor<4xf32>) {
  // expected-error @+2 {{gemm operands must be 2-D, got 3x4 and 4}}
  // expected-error @+1 {{'graph.gemm' op failed to infer returned types}}
  %0 = graph.gemm %a, %b : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3xf32>
  return
}

// -----

// trans_b reads b as [N, K]: b = 4x5 gives K = 5, but a has K = 4.
func.func @gemm_contraction_mismatch(%a: tensor<3x4xf32>, %b: tensor<4x5xf32>) {
  // expected-error @+2 {{gemm contraction sizes differ: 4 vs 5}}
  // expected-error @+1 {{'graph.gemm' op failed to infer returned types}}
  %0 = graph.gemm %a, %b {trans_b = true} : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x4xf32>
  return
}

// -----

func.func @gemm_bias_not_broadcastable(%a: tensor<3x4xf32>, %b: tensor<4x5xf32>, %c: tensor<3xf32>) {
  // expected-error @+2 {{gemm bias 3 does not broadcast to 3x5}}
  // expected-error @+1 {{'graph.gemm' op failed to infer returned types}}
  %0 = graph.gemm %a, %b, %c : (tensor<3x4xf32>, tensor<4x5xf32>, tensor<3xf32>) -> tensor<3x5xf32>
  return
}

// -----

// c broadcasts to [M, N] one way only: it must not grow the result.
func.func @gemm_bias_larger_than_result(%a: tensor<3x4xf32>, %b: tensor<4x1xf32>, %c: tensor<3x5xf32>) {
  // expected-error @+2 {{gemm bias 3x5 does not broadcast to 3x1}}
  // expected-error @+1 {{'graph.gemm' op failed to infer returned types}}
  %0 = graph.gemm %a, %b, %c : (tensor<3x4xf32>, tensor<4x1xf32>, tensor<3x5xf32>) -> tensor<3x5xf32>
  return
}

// -----

func.func @gemm_bias_element_type(%a: tensor<3x4xf32>, %b: tensor<4x5xf32>, %c: tensor<5xf16>) {
  // expected-error @+2 {{operand element types differ}}
  // expected-error @+1 {{'graph.gemm' op failed to infer returned types}}
  %0 = graph.gemm %a, %b, %c : (tensor<3x4xf32>, tensor<4x5xf32>, tensor<5xf16>) -> tensor<3x5xf32>
  return
}

// -----

func.func @conv_channel_mismatch(%x: tensor<1x3x8x8xf32>, %w: tensor<16x4x3x3xf32>) {
  // expected-error @+2 {{conv input has 3 channels but weight 16x4x3x3 with group 1 expects 4}}
  // expected-error @+1 {{'graph.conv' op failed to infer returned types}}
  %0 = graph.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1} : (tensor<1x3x8x8xf32>, tensor<16x4x3x3xf32>) -> tensor<1x16x6x6xf32>
  return
}

// -----

// With groups, each output channel sees C / group input channels.
func.func @conv_group_channel_mismatch(%x: tensor<1x8x8x8xf32>, %w: tensor<16x2x3x3xf32>) {
  // expected-error @+2 {{conv input has 8 channels but weight 16x2x3x3 with group 2 expects 4}}
  // expected-error @+1 {{'graph.conv' op failed to infer returned types}}
  %0 = graph.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 2} : (tensor<1x8x8x8xf32>, tensor<16x2x3x3xf32>) -> tensor<1x16x6x6xf32>
  return
}

// -----

func.func @conv_group_does_not_divide_outputs(%x: tensor<1x9x8x8xf32>, %w: tensor<16x3x3x3xf32>) {
  // expected-error @+2 {{conv group 3 does not divide the 16 output channels}}
  // expected-error @+1 {{'graph.conv' op failed to infer returned types}}
  %0 = graph.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 3} : (tensor<1x9x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x6x6xf32>
  return
}

// -----

func.func @conv_group_zero(%x: tensor<1x3x8x8xf32>, %w: tensor<16x3x3x3xf32>) {
  // expected-error @+2 {{conv group 0 does not divide the 16 output channels}}
  // expected-error @+1 {{'graph.conv' op failed to infer returned types}}
  %0 = graph.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 0} : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x6x6xf32>
  return
}

// -----

func.func @conv_weight_rank(%x: tensor<1x3x8x8xf32>, %w: tensor<16x3x3xf32>) {
  // expected-error @+2 {{conv weight 16x3x3 does not match input rank 4}}
  // expected-error @+1 {{'graph.conv' op failed to infer returned types}}
  %0 = graph.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1} : (tensor<1x3x8x8xf32>, tensor<16x3x3xf32>) -> tensor<1x16x6x6xf32>
  return
}

// -----

func.func @conv_input_not_an_image(%x: tensor<3x8xf32>, %w: tensor<16x3xf32>) {
  // expected-error @+2 {{expected an [N, C, spatial...] input, got 3x8}}
  // expected-error @+1 {{'graph.conv' op failed to infer returned types}}
  %0 = graph.conv %x, %w {strides = array<i64>, pads = array<i64>, dilations = array<i64>, group = 1} : (tensor<3x8xf32>, tensor<16x3xf32>) -> tensor<3x16xf32>
  return
}

// -----

func.func @conv_bias_shape(%x: tensor<1x3x8x8xf32>, %w: tensor<16x3x3x3xf32>, %b: tensor<8xf32>) {
  // expected-error @+2 {{conv bias 8 must be [16]}}
  // expected-error @+1 {{'graph.conv' op failed to infer returned types}}
  %0 = graph.conv %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1} : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>, tensor<8xf32>) -> tensor<1x16x6x6xf32>
  return
}

// -----

func.func @conv_bias_rank(%x: tensor<1x3x8x8xf32>, %w: tensor<16x3x3x3xf32>, %b: tensor<1x16xf32>) {
  // expected-error @+2 {{conv bias 1x16 must be [16]}}
  // expected-error @+1 {{'graph.conv' op failed to infer returned types}}
  %0 = graph.conv %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1} : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>, tensor<1x16xf32>) -> tensor<1x16x6x6xf32>
  return
}

// -----

// Dilation 4 stretches the 3x3 kernel to 9x9, larger than the padded 8x8 input.
func.func @conv_window_does_not_fit(%x: tensor<1x3x8x8xf32>, %w: tensor<16x3x3x3xf32>) {
  // expected-error @+2 {{window 3x3 does not fit input 1x3x8x8}}
  // expected-error @+1 {{'graph.conv' op failed to infer returned types}}
  %0 = graph.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 4, 1>, group = 1} : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x1x6xf32>
  return
}

// -----

// pads holds begin pads for every spatial dim, then end pads.
func.func @conv_wrong_pads_length(%x: tensor<1x3x8x8xf32>, %w: tensor<16x3x3x3xf32>) {
  // expected-error @+2 {{window attributes need 2 kernel/stride/dilation entries and 4 pads}}
  // expected-error @+1 {{'graph.conv' op failed to infer returned types}}
  %0 = graph.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1>, dilations = array<i64: 1, 1>, group = 1} : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x8x8xf32>
  return
}

// -----

func.func @conv_zero_stride(%x: tensor<1x3x8x8xf32>, %w: tensor<16x3x3x3xf32>) {
  // expected-error @+2 {{kernel, stride and dilation must be positive and pads non-negative}}
  // expected-error @+1 {{'graph.conv' op failed to infer returned types}}
  %0 = graph.conv %x, %w {strides = array<i64: 1, 0>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1} : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x6x6xf32>
  return
}

// -----

func.func @conv_negative_pad(%x: tensor<1x3x8x8xf32>, %w: tensor<16x3x3x3xf32>) {
  // expected-error @+2 {{kernel, stride and dilation must be positive and pads non-negative}}
  // expected-error @+1 {{'graph.conv' op failed to infer returned types}}
  %0 = graph.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, -1>, dilations = array<i64: 1, 1>, group = 1} : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x6x5xf32>
  return
}

// -----

func.func @conv_result_disagrees(%x: tensor<1x3x8x8xf32>, %w: tensor<16x3x3x3xf32>) {
  // expected-error @+2 {{'graph.conv' op inferred type(s) 'tensor<1x16x4x4xf32>' are incompatible with return type(s) of operation 'tensor<1x16x3x3xf32>'}}
  // expected-error @+1 {{'graph.conv' op failed to infer returned types}}
  %0 = graph.conv %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1} : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x3x3xf32>
  return
}

// -----

func.func @max_pool_window_does_not_fit(%x: tensor<1x3x4x4xf32>) {
  // expected-error @+2 {{window 5x5 does not fit input 1x3x4x4}}
  // expected-error @+1 {{'graph.max_pool' op failed to infer returned types}}
  %0 = graph.max_pool %x {kernel_shape = array<i64: 5, 5>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x3x4x4xf32>) -> tensor<1x3x1x1xf32>
  return
}

// -----

func.func @max_pool_wrong_pads_length(%x: tensor<1x3x8x8xf32>) {
  // expected-error @+2 {{window attributes need 2 kernel/stride/dilation entries and 4 pads}}
  // expected-error @+1 {{'graph.max_pool' op failed to infer returned types}}
  %0 = graph.max_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32>
  return
}

// -----

func.func @avg_pool_wrong_kernel_length(%x: tensor<1x3x8x8xf32>) {
  // expected-error @+2 {{window attributes need 2 kernel/stride/dilation entries and 4 pads}}
  // expected-error @+1 {{'graph.avg_pool' op failed to infer returned types}}
  %0 = graph.avg_pool %x {kernel_shape = array<i64: 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32>
  return
}

// -----

func.func @avg_pool_zero_kernel(%x: tensor<1x3x8x8xf32>) {
  // expected-error @+2 {{kernel, stride and dilation must be positive and pads non-negative}}
  // expected-error @+1 {{'graph.avg_pool' op failed to infer returned types}}
  %0 = graph.avg_pool %x {kernel_shape = array<i64: 2, 0>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x4x5xf32>
  return
}

// -----

// ceil_mode changes the inferred size: ceil((7 - 2) / 2) + 1 = 4, not 3.
func.func @avg_pool_ceil_mode_result(%x: tensor<1x3x7x7xf32>) {
  // expected-error @+2 {{'graph.avg_pool' op inferred type(s) 'tensor<1x3x4x4xf32>' are incompatible with return type(s) of operation 'tensor<1x3x3x3xf32>'}}
  // expected-error @+1 {{'graph.avg_pool' op failed to infer returned types}}
  %0 = graph.avg_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, ceil_mode = true} : (tensor<1x3x7x7xf32>) -> tensor<1x3x3x3xf32>
  return
}

// -----

func.func @global_avg_pool_not_an_image(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{expected an [N, C, spatial...] input, got 2x3}}
  // expected-error @+1 {{'graph.global_avg_pool' op failed to infer returned types}}
  %0 = graph.global_avg_pool %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @batch_norm_per_channel_shape(%x: tensor<4x3x8x8xf32>, %c: tensor<3xf32>, %bad: tensor<4xf32>) {
  // expected-error @+2 {{batch norm per-channel operand 4 must be [3]}}
  // expected-error @+1 {{'graph.batch_norm_training' op failed to infer returned types}}
  %0:3 = graph.batch_norm_training %x, %c, %c, %bad, %c {epsilon = 1.0e-5, momentum = 0.9} : (tensor<4x3x8x8xf32>, tensor<3xf32>, tensor<3xf32>, tensor<4xf32>, tensor<3xf32>) -> (tensor<4x3x8x8xf32>, tensor<4xf32>, tensor<3xf32>)
  return
}

// -----

func.func @batch_norm_per_channel_rank(%x: tensor<4x3x8x8xf32>, %c: tensor<3xf32>, %bad: tensor<1x3xf32>) {
  // expected-error @+2 {{batch norm per-channel operand 1x3 must be [3]}}
  // expected-error @+1 {{'graph.batch_norm_inference' op failed to infer returned types}}
  %0 = graph.batch_norm_inference %x, %bad, %c, %c, %c {epsilon = 1.0e-5} : (tensor<4x3x8x8xf32>, tensor<1x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<4x3x8x8xf32>
  return
}

// -----

func.func @batch_norm_input_rank(%x: tensor<8xf32>, %c: tensor<8xf32>) {
  // expected-error @+2 {{batch norm input must be [N, C, ...], got 8}}
  // expected-error @+1 {{'graph.batch_norm_inference' op failed to infer returned types}}
  %0 = graph.batch_norm_inference %x, %c, %c, %c, %c {epsilon = 1.0e-5} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return
}

// -----

func.func @batch_norm_element_types_differ(%x: tensor<4x3xf32>, %c: tensor<3xf32>, %h: tensor<3xf16>) {
  // expected-error @+2 {{operand element types differ}}
  // expected-error @+1 {{'graph.batch_norm_training' op failed to infer returned types}}
  %0:3 = graph.batch_norm_training %x, %c, %c, %c, %h {epsilon = 1.0e-5, momentum = 0.9} : (tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf16>) -> (tensor<4x3xf32>, tensor<3xf32>, tensor<3xf16>)
  return
}

// -----

func.func @batch_norm_result_count(%x: tensor<4x3xf32>, %c: tensor<3xf32>) {
  // expected-error @+1 {{'graph.batch_norm_training' op expected 3 results}}
  %0 = "graph.batch_norm_training"(%x, %c, %c, %c, %c) {epsilon = 1.0e-5 : f64, momentum = 0.9 : f64} : (tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  return
}

// -----

// The running statistics keep the type of the incoming ones.
func.func @batch_norm_statistics_result_disagrees(%x: tensor<4x3xf32>, %c: tensor<3xf32>) {
  // expected-error @+2 {{'graph.batch_norm_training' op inferred type(s) 'tensor<4x3xf32>', 'tensor<3xf32>', 'tensor<3xf32>' are incompatible with return type(s) of operation 'tensor<4x3xf32>', 'tensor<3xf32>', 'tensor<3xf16>'}}
  // expected-error @+1 {{'graph.batch_norm_training' op failed to infer returned types}}
  %0:3 = graph.batch_norm_training %x, %c, %c, %c, %c {epsilon = 1.0e-5, momentum = 0.9} : (tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<4x3xf32>, tensor<3xf32>, tensor<3xf16>)
  return
}

// -----

// scale covers the normalized dims [axis, rank): here 5x16, not 16.
func.func @layer_norm_scale_shape(%x: tensor<2x5x16xf32>, %g: tensor<16xf32>) {
  // expected-error @+2 {{layer norm scale/bias 16 must be 5x16}}
  // expected-error @+1 {{'graph.layer_norm' op failed to infer returned types}}
  %0 = graph.layer_norm %x, %g {axis = 1, epsilon = 1.0e-5} : (tensor<2x5x16xf32>, tensor<16xf32>) -> tensor<2x5x16xf32>
  return
}

// -----

func.func @layer_norm_bias_shape(%x: tensor<2x5x16xf32>, %g: tensor<16xf32>, %b: tensor<5xf32>) {
  // expected-error @+2 {{layer norm scale/bias 5 must be 16}}
  // expected-error @+1 {{'graph.layer_norm' op failed to infer returned types}}
  %0 = graph.layer_norm %x, %g, %b {axis = 2, epsilon = 1.0e-5} : (tensor<2x5x16xf32>, tensor<16xf32>, tensor<5xf32>) -> tensor<2x5x16xf32>
  return
}

// -----

func.func @layer_norm_axis_out_of_range(%x: tensor<2x5x16xf32>, %g: tensor<16xf32>) {
  // expected-error @+2 {{layer norm axis 3 is out of range for rank 3}}
  // expected-error @+1 {{'graph.layer_norm' op failed to infer returned types}}
  %0 = graph.layer_norm %x, %g {axis = 3, epsilon = 1.0e-5} : (tensor<2x5x16xf32>, tensor<16xf32>) -> tensor<2x5x16xf32>
  return
}

// -----

func.func @layer_norm_element_types_differ(%x: tensor<2x16xf32>, %g: tensor<16xbf16>) {
  // expected-error @+2 {{operand element types differ}}
  // expected-error @+1 {{'graph.layer_norm' op failed to infer returned types}}
  %0 = graph.layer_norm %x, %g {axis = 1, epsilon = 1.0e-5} : (tensor<2x16xf32>, tensor<16xbf16>) -> tensor<2x16xf32>
  return
}

// -----

// The mean is the one reduction of a data-parallel all-reduce.
func.func @all_reduce_sum(%g: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+2 {{unknown all-reduce reduction 'sum' (mean)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.all_reduce %g {reduction = "sum"} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// graph.conv_backward_input (ONNX ConvTranspose): the convolution of the
// input shape must give grad_output's shape.
func.func @conv_backward_input_mismatch(%d: tensor<1x8x4x4xf32>, %w: tensor<8x3x3x3xf32>) {
  // expected-error @+2 {{grad_output 1x8x4x4 is not the convolution's output 1x8x3x3 for input shape 1x3x8x8}}
  // expected-error @+1 {{'graph.conv_backward_input' op failed to infer returned types}}
  %0 = graph.conv_backward_input %d, %w {input_shape = array<i64: 1, 3, 8, 8>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1} : (tensor<1x8x4x4xf32>, tensor<8x3x3x3xf32>) -> tensor<1x3x8x8xf32>
  return
}

// -----

func.func @conv_backward_input_channels(%d: tensor<1x8x3x3xf32>, %w: tensor<8x3x3x3xf32>) {
  // expected-error @+2 {{conv input has 4 channels but weight 8x3x3x3 with group 1 expects 3}}
  // expected-error @+1 {{'graph.conv_backward_input' op failed to infer returned types}}
  %0 = graph.conv_backward_input %d, %w {input_shape = array<i64: 1, 4, 8, 8>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1} : (tensor<1x8x3x3xf32>, tensor<8x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  return
}

// -----

// A 3x3 window with padding 1 over a 4x4 plane: the corner outputs do not
// read the far inputs, so the weight's matrix would hold zeros.
func.func @conv_matrix_plane_too_large(%w: tensor<8x4x3x3xf32>) {
  // expected-error @+2 {{conv_matrix: along spatial dim 0 a window of 3 taps, stride 1 and pad 1 does not read all 4 inputs from all 4 outputs}}
  // expected-error @+1 {{'graph.conv_matrix' op failed to infer returned types}}
  %0 = graph.conv_matrix %w {input_spatial = array<i64: 4, 4>, output_spatial = array<i64: 4, 4>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1>} : (tensor<8x4x3x3xf32>) -> tensor<128x64xf32>
  return
}

// -----

func.func @conv_matrix_backward_wrong_matrix(%g: tensor<32x12xf32>) {
  // expected-error @+2 {{conv_matrix_backward: grad_output must be 32x16}}
  // expected-error @+1 {{'graph.conv_matrix_backward' op failed to infer returned types}}
  %0 = graph.conv_matrix_backward %g {weight_shape = array<i64: 8, 4, 3, 3>, input_spatial = array<i64: 2, 2>, output_spatial = array<i64: 2, 2>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1>} : (tensor<32x12xf32>) -> tensor<8x4x3x3xf32>
  return
}
