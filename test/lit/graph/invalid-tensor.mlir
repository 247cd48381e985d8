// Verifier errors of the data-movement ops: reshape, transpose, expand, concat, slice, gather.
// RUN: trainc-opt %s -split-input-file -verify-diagnostics

func.func @reshape_element_count(%x: tensor<2x3x4xf32>) {
  // expected-error @+2 {{cannot reshape 2x3x4 (24 elements) into 5x5}}
  // expected-error @+1 {{'graph.reshape' op failed to infer returned types}}
  %0 = graph.reshape %x {shape = array<i64: 5, 5>} : (tensor<2x3x4xf32>) -> tensor<5x5xf32>
  return
}

// -----

// The 0 copies 2, so the known dims hold 2 * 3 * 3 = 18 of 24 elements.
func.func @reshape_copied_dim_counts(%x: tensor<2x3x4xf32>) {
  // expected-error @+2 {{cannot reshape 2x3x4 (24 elements) into 2x3x3}}
  // expected-error @+1 {{'graph.reshape' op failed to infer returned types}}
  %0 = graph.reshape %x {shape = array<i64: 0, 3, 3>} : (tensor<2x3x4xf32>) -> tensor<2x3x3xf32>
  return
}

// -----

func.func @reshape_minus_one_does_not_divide(%x: tensor<2x3x4xf32>) {
  // expected-error @+2 {{cannot reshape 2x3x4 into a shape with -1 and known product 5}}
  // expected-error @+1 {{'graph.reshape' op failed to infer returned types}}
  %0 = graph.reshape %x {shape = array<i64: 5, -1>} : (tensor<2x3x4xf32>) -> tensor<5x4xf32>
  return
}

// -----

func.func @reshape_two_minus_ones(%x: tensor<2x3x4xf32>) {
  // expected-error @+2 {{reshape has more than one -1 entry}}
  // expected-error @+1 {{'graph.reshape' op failed to infer returned types}}
  %0 = graph.reshape %x {shape = array<i64: -1, 4, -1>} : (tensor<2x3x4xf32>) -> tensor<2x4x3xf32>
  return
}

// -----

func.func @reshape_zero_without_input_dim(%x: tensor<2x12xf32>) {
  // expected-error @+2 {{reshape entry 0 at index 2 has no input dimension to copy}}
  // expected-error @+1 {{'graph.reshape' op failed to infer returned types}}
  %0 = graph.reshape %x {shape = array<i64: 2, 12, 0>} : (tensor<2x12xf32>) -> tensor<2x12x1xf32>
  return
}

// -----

func.func @reshape_negative_entry(%x: tensor<2x12xf32>) {
  // expected-error @+2 {{reshape entry -2 is negative}}
  // expected-error @+1 {{'graph.reshape' op failed to infer returned types}}
  %0 = graph.reshape %x {shape = array<i64: -2, 12>} : (tensor<2x12xf32>) -> tensor<2x12xf32>
  return
}

// -----

func.func @reshape_result_disagrees(%x: tensor<2x3x4xf32>) {
  // expected-error @+2 {{'graph.reshape' op inferred type(s) 'tensor<2x12xf32>' are incompatible with return type(s) of operation 'tensor<6x4xf32>'}}
  // expected-error @+1 {{'graph.reshape' op failed to infer returned types}}
  %0 = graph.reshape %x {shape = array<i64: 0, -1>} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  return
}

// -----

func.func @transpose_wrong_length(%x: tensor<2x3x4xf32>) {
  // expected-error @+2 {{transpose permutation has 2 entries for rank 3}}
  // expected-error @+1 {{'graph.transpose' op failed to infer returned types}}
  %0 = graph.transpose %x {perm = array<i64: 1, 0>} : (tensor<2x3x4xf32>) -> tensor<3x2x4xf32>
  return
}

// -----

func.func @transpose_entry_out_of_range(%x: tensor<2x3x4xf32>) {
  // expected-error @+2 {{permutation entry 3 is out of range for rank 3}}
  // expected-error @+1 {{'graph.transpose' op failed to infer returned types}}
  %0 = graph.transpose %x {perm = array<i64: 0, 3, 1>} : (tensor<2x3x4xf32>) -> tensor<2x4x3xf32>
  return
}

// -----

func.func @transpose_repeated_entry(%x: tensor<2x3x4xf32>) {
  // expected-error @+2 {{permutation entry 1 appears twice}}
  // expected-error @+1 {{'graph.transpose' op failed to infer returned types}}
  %0 = graph.transpose %x {perm = array<i64: 1, 1, 0>} : (tensor<2x3x4xf32>) -> tensor<3x3x2xf32>
  return
}

// -----

func.func @expand_clash(%x: tensor<3x1xf32>) {
  // expected-error @+2 {{cannot expand 3x1 to 2x4x5}}
  // expected-error @+1 {{'graph.expand' op failed to infer returned types}}
  %0 = graph.expand %x {shape = array<i64: 2, 4, 5>} : (tensor<3x1xf32>) -> tensor<2x4x5xf32>
  return
}

// -----

func.func @expand_negative_entry(%x: tensor<3x1xf32>) {
  // expected-error @+2 {{expand shape entry -1 is negative}}
  // expected-error @+1 {{'graph.expand' op failed to infer returned types}}
  %0 = graph.expand %x {shape = array<i64: -1, 4>} : (tensor<3x1xf32>) -> tensor<3x4xf32>
  return
}

// -----

func.func @concat_sizes_differ_outside_axis(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) {
  // expected-error @+2 {{concat inputs 2x3 and 4x5 differ outside axis 1}}
  // expected-error @+1 {{'graph.concat' op failed to infer returned types}}
  %0 = graph.concat %a, %b {axis = 1} : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @concat_ranks_differ(%a: tensor<2x3xf32>, %b: tensor<2x3x1xf32>) {
  // expected-error @+2 {{concat inputs differ in rank or element type}}
  // expected-error @+1 {{'graph.concat' op failed to infer returned types}}
  %0 = graph.concat %a, %b {axis = 0} : (tensor<2x3xf32>, tensor<2x3x1xf32>) -> tensor<4x3xf32>
  return
}

// -----

func.func @concat_element_types_differ(%a: tensor<2xi64>, %b: tensor<2xi32>) {
  // expected-error @+2 {{concat inputs differ in rank or element type}}
  // expected-error @+1 {{'graph.concat' op failed to infer returned types}}
  %0 = graph.concat %a, %b {axis = 0} : (tensor<2xi64>, tensor<2xi32>) -> tensor<4xi64>
  return
}

// -----

func.func @concat_axis_out_of_range(%a: tensor<2x3xf32>) {
  // expected-error @+2 {{concat axis 2 is out of range for rank 2}}
  // expected-error @+1 {{'graph.concat' op failed to infer returned types}}
  %0 = graph.concat %a, %a {axis = 2} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @concat_no_inputs() {
  // expected-error @+2 {{concat needs at least one input}}
  // expected-error @+1 {{'graph.concat' op failed to infer returned types}}
  %0 = graph.concat {axis = 0} : () -> tensor<0xf32>
  return
}

// -----

func.func @slice_wrong_length(%x: tensor<5x6xf32>) {
  // expected-error @+2 {{slice needs one start, end and step per dimension (rank 2)}}
  // expected-error @+1 {{'graph.slice' op failed to infer returned types}}
  %0 = graph.slice %x {starts = array<i64: 0>, ends = array<i64: 5>, steps = array<i64: 1>} : (tensor<5x6xf32>) -> tensor<5x6xf32>
  return
}

// -----

func.func @slice_zero_step(%x: tensor<5x6xf32>) {
  // expected-error @+2 {{slice step is 0 in dimension 1}}
  // expected-error @+1 {{'graph.slice' op failed to infer returned types}}
  %0 = graph.slice %x {starts = array<i64: 0, 0>, ends = array<i64: 5, 6>, steps = array<i64: 1, 0>} : (tensor<5x6xf32>) -> tensor<5x6xf32>
  return
}

// -----

// ONNX's INT64_MAX "to the end" must be clamped by the importer.
func.func @slice_end_not_clamped(%x: tensor<5x6xf32>) {
  // expected-error @+2 {{slice bounds [1, 9223372036854775807) with step 1 are not normalized for dimension 0 of size 5}}
  // expected-error @+1 {{'graph.slice' op failed to infer returned types}}
  %0 = graph.slice %x {starts = array<i64: 1, 0>, ends = array<i64: 9223372036854775807, 6>, steps = array<i64: 1, 1>} : (tensor<5x6xf32>) -> tensor<4x6xf32>
  return
}

// -----

// Negative starts count from the end in ONNX; here they must be normalized.
func.func @slice_negative_start(%x: tensor<5x6xf32>) {
  // expected-error @+2 {{slice bounds [-2, 6) with step 1 are not normalized for dimension 1 of size 6}}
  // expected-error @+1 {{'graph.slice' op failed to infer returned types}}
  %0 = graph.slice %x {starts = array<i64: 0, -2>, ends = array<i64: 5, 6>, steps = array<i64: 1, 1>} : (tensor<5x6xf32>) -> tensor<5x2xf32>
  return
}

// -----

// Walking backwards, the start must be a valid index (at most dim - 1).
func.func @slice_negative_step_start_at_dim(%x: tensor<5x6xf32>) {
  // expected-error @+2 {{slice bounds [5, -1) with step -1 are not normalized for dimension 0 of size 5}}
  // expected-error @+1 {{'graph.slice' op failed to infer returned types}}
  %0 = graph.slice %x {starts = array<i64: 5, 0>, ends = array<i64: -1, 6>, steps = array<i64: -1, 1>} : (tensor<5x6xf32>) -> tensor<5x6xf32>
  return
}

// -----

// Walking backwards, the end is at least -1 (one before the first element).
func.func @slice_negative_step_end_below_minus_one(%x: tensor<5x6xf32>) {
  // expected-error @+2 {{slice bounds [4, -2) with step -1 are not normalized for dimension 0 of size 5}}
  // expected-error @+1 {{'graph.slice' op failed to infer returned types}}
  %0 = graph.slice %x {starts = array<i64: 4, 0>, ends = array<i64: -2, 6>, steps = array<i64: -1, 1>} : (tensor<5x6xf32>) -> tensor<5x6xf32>
  return
}

// -----

func.func @gather_axis_out_of_range(%x: tensor<10x4xf32>, %i: tensor<3xi64>) {
  // expected-error @+2 {{gather axis 2 is out of range for rank 2}}
  // expected-error @+1 {{'graph.gather' op failed to infer returned types}}
  %0 = graph.gather %x, %i {axis = 2} : (tensor<10x4xf32>, tensor<3xi64>) -> tensor<10x4xf32>
  return
}

// -----

func.func @gather_negative_axis(%x: tensor<10x4xf32>, %i: tensor<3xi64>) {
  // expected-error @+2 {{gather axis -1 is out of range for rank 2}}
  // expected-error @+1 {{'graph.gather' op failed to infer returned types}}
  %0 = graph.gather %x, %i {axis = -1} : (tensor<10x4xf32>, tensor<3xi64>) -> tensor<10x3xf32>
  return
}

// -----

func.func @gather_float_indices(%x: tensor<10x4xf32>, %i: tensor<3xf32>) {
  // expected-error @+1 {{'graph.gather' op operand #1 must be ranked tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<3xf32>'}}
  %0 = graph.gather %x, %i {axis = 0} : (tensor<10x4xf32>, tensor<3xf32>) -> tensor<3x4xf32>
  return
}

// -----

func.func @gather_result_disagrees(%x: tensor<10x4xf32>, %i: tensor<2x3xi32>) {
  // expected-error @+2 {{'graph.gather' op inferred type(s) 'tensor<2x3x4xf32>' are incompatible with return type(s) of operation 'tensor<6x4xf32>'}}
  // expected-error @+1 {{'graph.gather' op failed to infer returned types}}
  %0 = graph.gather %x, %i {axis = 0} : (tensor<10x4xf32>, tensor<2x3xi32>) -> tensor<6x4xf32>
  return
}
