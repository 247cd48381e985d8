// Verifier errors of reduce_sum, reduce_mean, reduce_max and argmax.
// RUN: trainc-opt %s -split-input-file -verify-diagnostics

func.func @axis_too_large(%x: tensor<2x3x4xf32>) {
  // expected-error @+2 {{reduction axis 3 is out of range for rank 3}}
  // expected-error @+1 {{'graph.reduce_sum' op failed to infer returned types}}
  %0 = graph.reduce_sum %x {axes = array<i64: 1, 3>} : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
  return
}

// -----

// Axes are normalized by the importer: a negative axis is an error.
func.func @negative_axis(%x: tensor<2x3x4xf32>) {
  // expected-error @+2 {{reduction axis -1 is out of range for rank 3}}
  // expected-error @+1 {{'graph.reduce_mean' op failed to infer returned types}}
  %0 = graph.reduce_mean %x {axes = array<i64: -1>} : (tensor<2x3x4xf32>) -> tensor<2x3x1xf32>
  return
}

// -----

func.func @duplicate_axis(%x: tensor<2x3x4xf32>) {
  // expected-error @+2 {{reduction axis 2 appears twice}}
  // expected-error @+1 {{'graph.reduce_max' op failed to infer returned types}}
  %0 = graph.reduce_max %x {axes = array<i64: 2, 0, 2>, keepdims = false} : (tensor<2x3x4xf32>) -> tensor<3xf32>
  return
}

// -----

func.func @scalar_has_no_axes(%x: tensor<f32>) {
  // expected-error @+2 {{reduction axis 0 is out of range for rank 0}}
  // expected-error @+1 {{'graph.reduce_sum' op failed to infer returned types}}
  %0 = graph.reduce_sum %x {axes = array<i64: 0>} : (tensor<f32>) -> tensor<f32>
  return
}

// -----

func.func @missing_axes(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'graph.reduce_sum' op requires attribute 'axes'}}
  %0 = graph.reduce_sum %x : (tensor<2x3xf32>) -> tensor<f32>
  return
}

// -----

// keepdims defaults to true: the reduced dim stays as size 1.
func.func @keepdims_default(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{'graph.reduce_sum' op inferred type(s) 'tensor<2x1xf32>' are incompatible with return type(s) of operation 'tensor<2xf32>'}}
  // expected-error @+1 {{'graph.reduce_sum' op failed to infer returned types}}
  %0 = graph.reduce_sum %x {axes = array<i64: 1>} : (tensor<2x3xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @keepdims_false(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{'graph.reduce_mean' op inferred type(s) 'tensor<3xf32>' are incompatible with return type(s) of operation 'tensor<1x3xf32>'}}
  // expected-error @+1 {{'graph.reduce_mean' op failed to infer returned types}}
  %0 = graph.reduce_mean %x {axes = array<i64: 0>, keepdims = false} : (tensor<2x3xf32>) -> tensor<1x3xf32>
  return
}

// -----

func.func @argmax_axis(%x: tensor<2x3xf32>) -> tensor<2xi64> {
  // expected-error @+2 {{reduction axis 2 is out of range for rank 2}}
  // expected-error @+1 {{'graph.argmax' op failed to infer returned types}}
  %0 = graph.argmax %x {axis = 2 : i64, keepdims = false} : (tensor<2x3xf32>) -> tensor<2xi64>
  return %0 : tensor<2xi64>
}
