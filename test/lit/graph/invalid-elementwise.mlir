// Verifier errors of constants and elementwise unary, binary, compare, where and cast ops.
// RUN: trainc-opt %s -split-input-file -verify-diagnostics

func.func @constant_not_a_tensor() {
  // expected-error @+1 {{constant value must be a ranked tensor}}
  %0 = graph.constant dense<[1, 2]> : vector<2xi64>
  return
}

// -----

func.func @unranked_operand(%a: tensor<*xf32>) {
  // expected-error @+1 {{'graph.add' op operand #0 must be ranked tensor of floating-point or signless integer values, but got 'tensor<*xf32>'}}
  %0 = graph.add %a, %a : (tensor<*xf32>, tensor<*xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @float_op_on_integers(%a: tensor<2x3xi32>) {
  // expected-error @+1 {{'graph.sqrt' op operand #0 must be ranked tensor of floating-point values, but got 'tensor<2x3xi32>'}}
  %0 = graph.sqrt %a : tensor<2x3xi32>
  return
}

// -----

func.func @not_on_integers(%a: tensor<2x3xi32>) {
  // expected-error @+1 {{'graph.not' op operand #0 must be ranked tensor of 1-bit signless integer values, but got 'tensor<2x3xi32>'}}
  %0 = graph.not %a : tensor<2x3xi32>
  return
}

// -----

func.func @broadcast_clash(%a: tensor<2x3xf32>, %b: tensor<4xf32>) {
  // expected-error @+2 {{shapes 2x3 and 4 do not broadcast}}
  // expected-error @+1 {{'graph.add' op failed to infer returned types}}
  %0 = graph.add %a, %b : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @broadcast_clash_inner_dim(%a: tensor<4x2x3xf32>, %b: tensor<5x1x3xf32>) {
  // expected-error @+2 {{shapes 4x2x3 and 5x1x3 do not broadcast}}
  // expected-error @+1 {{'graph.mul' op failed to infer returned types}}
  %0 = graph.mul %a, %b : (tensor<4x2x3xf32>, tensor<5x1x3xf32>) -> tensor<4x2x3xf32>
  return
}

// -----

func.func @pow_broadcast_clash(%a: tensor<2x3xf32>, %b: tensor<4xi32>) {
  // expected-error @+2 {{shapes 2x3 and 4 do not broadcast}}
  // expected-error @+1 {{'graph.pow' op failed to infer returned types}}
  %0 = graph.pow %a, %b : (tensor<2x3xf32>, tensor<4xi32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @element_type_mismatch(%a: tensor<2x3xf32>, %b: tensor<3xf16>) {
  // expected-error @+2 {{operand element types differ}}
  // expected-error @+1 {{'graph.sub' op failed to infer returned types}}
  %0 = graph.sub %a, %b : (tensor<2x3xf32>, tensor<3xf16>) -> tensor<2x3xf32>
  return
}

// -----

func.func @compare_element_type_mismatch(%a: tensor<2x3xi32>, %b: tensor<2x3xi64>) {
  // expected-error @+2 {{operand element types differ}}
  // expected-error @+1 {{'graph.less' op failed to infer returned types}}
  %0 = graph.less %a, %b : (tensor<2x3xi32>, tensor<2x3xi64>) -> tensor<2x3xi1>
  return
}

// -----

func.func @compare_result_not_bool(%a: tensor<2x3xi32>) {
  // expected-error @+1 {{'graph.equal' op result #0 must be ranked tensor of 1-bit signless integer values, but got 'tensor<2x3xi32>'}}
  %0 = graph.equal %a, %a : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
  return
}

// -----

// The written result type must be the inferred one.
func.func @result_shape_disagrees(%a: tensor<2x3xf32>) {
  // expected-error @+2 {{'graph.add' op inferred type(s) 'tensor<2x3xf32>' are incompatible with return type(s) of operation 'tensor<3x2xf32>'}}
  // expected-error @+1 {{'graph.add' op failed to infer returned types}}
  %0 = graph.add %a, %a : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<3x2xf32>
  return
}

// -----

func.func @result_element_type_disagrees(%a: tensor<2x3xf32>, %b: tensor<3xf32>) {
  // expected-error @+2 {{'graph.add' op inferred type(s) 'tensor<2x3xf32>' are incompatible with return type(s) of operation 'tensor<2x3xf16>'}}
  // expected-error @+1 {{'graph.add' op failed to infer returned types}}
  %0 = graph.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf16>
  return
}

// -----

// The generic form spells the result type of a unary op, which must agree too.
func.func @unary_result_disagrees(%a: tensor<2x3xf32>) {
  // expected-error @+2 {{'graph.relu' op inferred type(s) 'tensor<2x3xf32>' are incompatible with return type(s) of operation 'tensor<3x2xf32>'}}
  // expected-error @+1 {{'graph.relu' op failed to infer returned types}}
  %0 = "graph.relu"(%a) : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return
}

// -----

func.func @clip_min_above_max(%a: tensor<2x3xf32>) {
  // expected-error @+2 {{clip min is greater than max}}
  // expected-error @+1 {{'graph.clip' op failed to infer returned types}}
  %0 = graph.clip %a {min = 1.0, max = 0.0} : tensor<2x3xf32>
  return
}

// -----

func.func @dropout_without_ratio(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{'graph.dropout' op requires attribute 'ratio'}}
  %0 = graph.dropout %a : tensor<2x3xf32>
  return
}

// -----

func.func @softmax_axis_too_large(%a: tensor<2x3xf32>) {
  // expected-error @+2 {{softmax axis 2 is out of range for rank 2}}
  // expected-error @+1 {{'graph.softmax' op failed to infer returned types}}
  %0 = graph.softmax %a {axis = 2} : tensor<2x3xf32>
  return
}

// -----

// Axes are normalized by the importer: a negative axis is an error.
func.func @log_softmax_negative_axis(%a: tensor<2x3xf32>) {
  // expected-error @+2 {{softmax axis -1 is out of range for rank 2}}
  // expected-error @+1 {{'graph.log_softmax' op failed to infer returned types}}
  %0 = graph.log_softmax %a {axis = -1} : tensor<2x3xf32>
  return
}

// -----

func.func @where_condition_clash(%c: tensor<2x1xi1>, %a: tensor<3xf32>, %b: tensor<4x1xf32>) {
  // expected-error @+2 {{condition shape 2x1 does not broadcast with 4x3}}
  // expected-error @+1 {{'graph.where' op failed to infer returned types}}
  %0 = graph.where %c, %a, %b : (tensor<2x1xi1>, tensor<3xf32>, tensor<4x1xf32>) -> tensor<4x3xf32>
  return
}

// -----

func.func @where_values_clash(%c: tensor<i1>, %a: tensor<3xf32>, %b: tensor<4xf32>) {
  // expected-error @+2 {{shapes 3 and 4 do not broadcast}}
  // expected-error @+1 {{'graph.where' op failed to infer returned types}}
  %0 = graph.where %c, %a, %b : (tensor<i1>, tensor<3xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @where_element_type_mismatch(%c: tensor<2x3xi1>, %a: tensor<2x3xf32>, %b: tensor<2x3xf16>) {
  // expected-error @+2 {{operand element types differ}}
  // expected-error @+1 {{'graph.where' op failed to infer returned types}}
  %0 = graph.where %c, %a, %b : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<2x3xf16>) -> tensor<2x3xf32>
  return
}

// -----

func.func @where_condition_not_bool(%c: tensor<2x3xf32>, %a: tensor<2x3xf32>) {
  // expected-error @+1 {{'graph.where' op operand #0 must be ranked tensor of 1-bit signless integer values, but got 'tensor<2x3xf32>'}}
  %0 = graph.where %c, %a, %a : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @cast_to_index(%a: tensor<2x3xf32>) {
  // expected-error @+2 {{cast target must be an integer or float}}
  // expected-error @+1 {{'graph.cast' op failed to infer returned types}}
  %0 = graph.cast %a {to = index} : (tensor<2x3xf32>) -> tensor<2x3xi64>
  return
}

// -----

func.func @cast_to_vector(%a: tensor<2x3xf32>) {
  // expected-error @+2 {{cast target must be an integer or float}}
  // expected-error @+1 {{'graph.cast' op failed to infer returned types}}
  %0 = graph.cast %a {to = vector<2xf32>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @cast_result_disagrees(%a: tensor<2x3xf32>) {
  // expected-error @+2 {{'graph.cast' op inferred type(s) 'tensor<2x3xf16>' are incompatible with return type(s) of operation 'tensor<2x3xf32>'}}
  // expected-error @+1 {{'graph.cast' op failed to infer returned types}}
  %0 = graph.cast %a {to = f16} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}
