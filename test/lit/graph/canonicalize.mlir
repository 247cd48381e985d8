// Folders of graph ops: no-op data movement, composed reshapes and transposes, integer shape arithmetic, matrix transposes absorbed by GEMM flags, transposes moved to the narrower side of a float cast.
// RUN: trainc-opt %s -canonicalize -split-input-file | FileCheck %s

// CHECK-LABEL: func.func @identity
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NEXT: return %[[X]]
func.func @identity(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = graph.identity %x : tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @cast_to_same_type
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NEXT: return %[[X]]
func.func @cast_to_same_type(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = graph.cast %x {to = f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @cast_to_other_type
// CHECK: %[[CAST:.*]] = graph.cast %{{.*}} {to = f16}
// CHECK-NEXT: return %[[CAST]]
func.func @cast_to_other_type(%x: tensor<2x3xf32>) -> tensor<2x3xf16> {
  %0 = graph.cast %x {to = f16} : (tensor<2x3xf32>) -> tensor<2x3xf16>
  return %0 : tensor<2x3xf16>
}

// -----

// CHECK-LABEL: func.func @dropout_ratio_zero
// CHECK-SAME: (%[[X:.*]]: tensor<8xf32>)
// CHECK-NEXT: return %[[X]]
func.func @dropout_ratio_zero(%x: tensor<8xf32>) -> tensor<8xf32> {
  %0 = graph.dropout %x {ratio = 0.0} : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// CHECK-LABEL: func.func @dropout_ratio_nonzero
// CHECK: %[[DROP:.*]] = graph.dropout %{{.*}} {ratio = 1.000000e-01 : f64}
// CHECK-NEXT: return %[[DROP]]
func.func @dropout_ratio_nonzero(%x: tensor<8xf32>) -> tensor<8xf32> {
  %0 = graph.dropout %x {ratio = 0.1} : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// CHECK-LABEL: func.func @reshape_to_same_type
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NEXT: return %[[X]], %[[X]]
func.func @reshape_to_same_type(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  %0 = graph.reshape %x {shape = array<i64: 0, 0>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = graph.reshape %x {shape = array<i64: 2, -1>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0, %1 : tensor<2x3xf32>, tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @transpose_identity
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-NEXT: return %[[X]]
func.func @transpose_identity(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %0 = graph.transpose %x {perm = array<i64: 0, 1, 2>} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

// -----

// CHECK-LABEL: func.func @expand_to_same_type
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NEXT: return %[[X]], %[[X]]
func.func @expand_to_same_type(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  %0 = graph.expand %x {shape = array<i64: 1>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = graph.expand %x {shape = array<i64: 2, 1>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0, %1 : tensor<2x3xf32>, tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @expand_that_broadcasts
// CHECK: graph.expand %{{.*}} {shape = array<i64: 4, 1, 1>} : (tensor<2x3xf32>) -> tensor<4x2x3xf32>
func.func @expand_that_broadcasts(%x: tensor<2x3xf32>) -> tensor<4x2x3xf32> {
  %0 = graph.expand %x {shape = array<i64: 4, 1, 1>} : (tensor<2x3xf32>) -> tensor<4x2x3xf32>
  return %0 : tensor<4x2x3xf32>
}

// -----

// A full slice with unit steps is the input; a reversal is not.
// CHECK-LABEL: func.func @slice_whole
// CHECK-SAME: (%[[X:.*]]: tensor<5x6xf32>)
// CHECK: %[[REV:.*]] = graph.slice %[[X]] {ends = array<i64: 5, -1>
// CHECK-NEXT: return %[[X]], %[[REV]]
func.func @slice_whole(%x: tensor<5x6xf32>) -> (tensor<5x6xf32>, tensor<5x6xf32>) {
  %0 = graph.slice %x {starts = array<i64: 0, 0>, ends = array<i64: 5, 6>, steps = array<i64: 1, 1>} : (tensor<5x6xf32>) -> tensor<5x6xf32>
  %1 = graph.slice %x {starts = array<i64: 0, 5>, ends = array<i64: 5, -1>, steps = array<i64: 1, -1>} : (tensor<5x6xf32>) -> tensor<5x6xf32>
  return %0, %1 : tensor<5x6xf32>, tensor<5x6xf32>
}

// -----

// CHECK-LABEL: func.func @concat_single_input
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NEXT: return %[[X]]
func.func @concat_single_input(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = graph.concat %x {axis = 1} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @reshape_of_reshape
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-NEXT: %[[R:.*]] = graph.reshape %[[X]] {shape = array<i64: 4, 6>} : (tensor<2x3x4xf32>) -> tensor<4x6xf32>
// CHECK-NEXT: return %[[R]]
func.func @reshape_of_reshape(%x: tensor<2x3x4xf32>) -> tensor<4x6xf32> {
  %0 = graph.reshape %x {shape = array<i64: 6, 4>} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  %1 = graph.reshape %0 {shape = array<i64: 4, 6>} : (tensor<6x4xf32>) -> tensor<4x6xf32>
  return %1 : tensor<4x6xf32>
}

// -----

// Both reshapes copy dim 0 of x, so the outer 0 still means x's dim 0.
// CHECK-LABEL: func.func @reshape_of_reshape_both_copy
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-NEXT: %[[R:.*]] = graph.reshape %[[X]] {shape = array<i64: 0, 4, -1>} : (tensor<2x3x4xf32>) -> tensor<2x4x3xf32>
// CHECK-NEXT: return %[[R]]
func.func @reshape_of_reshape_both_copy(%x: tensor<2x3x4xf32>) -> tensor<2x4x3xf32> {
  %0 = graph.reshape %x {shape = array<i64: 0, -1>} : (tensor<2x3x4xf32>) -> tensor<2x12xf32>
  %1 = graph.reshape %0 {shape = array<i64: 0, 4, -1>} : (tensor<2x12xf32>) -> tensor<2x4x3xf32>
  return %1 : tensor<2x4x3xf32>
}

// -----

// The outer 0 copies the 6 made by the inner reshape; on x it would copy 2.
// CHECK-LABEL: func.func @reshape_of_reshape_outer_copies
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-NEXT: %[[INNER:.*]] = graph.reshape %[[X]] {shape = array<i64: 6, 4>} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
// CHECK-NEXT: %[[OUTER:.*]] = graph.reshape %[[INNER]] {shape = array<i64: 0, 2, 2>} : (tensor<6x4xf32>) -> tensor<6x2x2xf32>
// CHECK-NEXT: return %[[OUTER]]
func.func @reshape_of_reshape_outer_copies(%x: tensor<2x3x4xf32>) -> tensor<6x2x2xf32> {
  %0 = graph.reshape %x {shape = array<i64: 6, 4>} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  %1 = graph.reshape %0 {shape = array<i64: 0, 2, 2>} : (tensor<6x4xf32>) -> tensor<6x2x2xf32>
  return %1 : tensor<6x2x2xf32>
}

// -----

// A chain back to the input's type folds away completely.
// CHECK-LABEL: func.func @reshape_round_trip
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-NEXT: return %[[X]]
func.func @reshape_round_trip(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %0 = graph.reshape %x {shape = array<i64: 24>} : (tensor<2x3x4xf32>) -> tensor<24xf32>
  %1 = graph.reshape %0 {shape = array<i64: 2, 3, 4>} : (tensor<24xf32>) -> tensor<2x3x4xf32>
  return %1 : tensor<2x3x4xf32>
}

// -----

// out[i] = x[inner[perm[i]]]: [1, 0, 2] then [0, 2, 1] is [1, 2, 0].
// CHECK-LABEL: func.func @transpose_of_transpose
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-NEXT: %[[T:.*]] = graph.transpose %[[X]] {perm = array<i64: 1, 2, 0>} : (tensor<2x3x4xf32>) -> tensor<3x4x2xf32>
// CHECK-NEXT: return %[[T]]
func.func @transpose_of_transpose(%x: tensor<2x3x4xf32>) -> tensor<3x4x2xf32> {
  %0 = graph.transpose %x {perm = array<i64: 1, 0, 2>} : (tensor<2x3x4xf32>) -> tensor<3x2x4xf32>
  %1 = graph.transpose %0 {perm = array<i64: 0, 2, 1>} : (tensor<3x2x4xf32>) -> tensor<3x4x2xf32>
  return %1 : tensor<3x4x2xf32>
}

// -----

// Inverse permutations cancel.
// CHECK-LABEL: func.func @transpose_inverse
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-NEXT: return %[[X]]
func.func @transpose_inverse(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %0 = graph.transpose %x {perm = array<i64: 1, 2, 0>} : (tensor<2x3x4xf32>) -> tensor<3x4x2xf32>
  %1 = graph.transpose %0 {perm = array<i64: 2, 0, 1>} : (tensor<3x4x2xf32>) -> tensor<2x3x4xf32>
  return %1 : tensor<2x3x4xf32>
}

// -----

// CHECK-LABEL: func.func @integer_arithmetic
// CHECK-DAG: %[[ADD:.*]] = graph.constant dense<[11, 22, 33]> : tensor<3xi64>
// CHECK-DAG: %[[SUB:.*]] = graph.constant dense<[-9, -18, -27]> : tensor<3xi64>
// CHECK-DAG: %[[MUL:.*]] = graph.constant dense<[10, 40, 90]> : tensor<3xi64>
// CHECK-DAG: %[[DIV:.*]] = graph.constant dense<10> : tensor<3xi64>
// CHECK-DAG: %[[NEG:.*]] = graph.constant dense<[-1, -2, -3]> : tensor<3xi64>
// CHECK: return %[[ADD]], %[[SUB]], %[[MUL]], %[[DIV]], %[[NEG]]
func.func @integer_arithmetic() -> (tensor<3xi64>, tensor<3xi64>, tensor<3xi64>, tensor<3xi64>, tensor<3xi64>) {
  %a = graph.constant dense<[1, 2, 3]> : tensor<3xi64>
  %b = graph.constant dense<[10, 20, 30]> : tensor<3xi64>
  %0 = graph.add %a, %b : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi64>
  %1 = graph.sub %a, %b : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi64>
  %2 = graph.mul %a, %b : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi64>
  %3 = graph.div %b, %a : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi64>
  %4 = graph.neg %a : tensor<3xi64>
  return %0, %1, %2, %3, %4 : tensor<3xi64>, tensor<3xi64>, tensor<3xi64>, tensor<3xi64>, tensor<3xi64>
}

// -----

// A one-element or scalar operand broadcasts against the other.
// CHECK-LABEL: func.func @integer_broadcast
// CHECK-DAG: %[[ADD:.*]] = graph.constant dense<[6, 7, 8]> : tensor<3xi64>
// CHECK-DAG: %[[MUL:.*]] = graph.constant dense<[5, 10, 15]> : tensor<3xi64>
// CHECK: return %[[ADD]], %[[MUL]]
func.func @integer_broadcast() -> (tensor<3xi64>, tensor<3xi64>) {
  %a = graph.constant dense<[1, 2, 3]> : tensor<3xi64>
  %one = graph.constant dense<[5]> : tensor<1xi64>
  %scalar = graph.constant dense<5> : tensor<i64>
  %0 = graph.add %one, %a : (tensor<1xi64>, tensor<3xi64>) -> tensor<3xi64>
  %1 = graph.mul %a, %scalar : (tensor<3xi64>, tensor<i64>) -> tensor<3xi64>
  return %0, %1 : tensor<3xi64>, tensor<3xi64>
}

// -----

// Integer division truncates toward zero; division by zero is left alone.
// CHECK-LABEL: func.func @integer_division
// CHECK-DAG: %[[Q:.*]] = graph.constant dense<[-3, 3, -3]> : tensor<3xi32>
// CHECK-DAG: %[[BYZERO:.*]] = graph.div
// CHECK: return %[[Q]], %[[BYZERO]]
func.func @integer_division() -> (tensor<3xi32>, tensor<3xi32>) {
  %a = graph.constant dense<[-7, 7, 7]> : tensor<3xi32>
  %b = graph.constant dense<[2, 2, -2]> : tensor<3xi32>
  %z = graph.constant dense<[1, 0, 1]> : tensor<3xi32>
  %0 = graph.div %a, %b : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
  %1 = graph.div %a, %z : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
  return %0, %1 : tensor<3xi32>, tensor<3xi32>
}

// -----

// CHECK-LABEL: func.func @integer_compare
// CHECK-DAG: %[[EQ:.*]] = graph.constant dense<[false, false, true]> : tensor<3xi1>
// CHECK-DAG: %[[LT:.*]] = graph.constant dense<[true, false, false]> : tensor<3xi1>
// CHECK-DAG: %[[GT:.*]] = graph.constant dense<[false, true, false]> : tensor<3xi1>
// CHECK-DAG: %[[LE:.*]] = graph.constant dense<[true, false, true]> : tensor<3xi1>
// CHECK-DAG: %[[GE:.*]] = graph.constant dense<[false, true, true]> : tensor<3xi1>
// CHECK: return %[[EQ]], %[[LT]], %[[GT]], %[[LE]], %[[GE]]
func.func @integer_compare() -> (tensor<3xi1>, tensor<3xi1>, tensor<3xi1>, tensor<3xi1>, tensor<3xi1>) {
  %a = graph.constant dense<[-1, 5, 3]> : tensor<3xi64>
  %b = graph.constant dense<3> : tensor<i64>
  %0 = graph.equal %a, %b : (tensor<3xi64>, tensor<i64>) -> tensor<3xi1>
  %1 = graph.less %a, %b : (tensor<3xi64>, tensor<i64>) -> tensor<3xi1>
  %2 = graph.greater %a, %b : (tensor<3xi64>, tensor<i64>) -> tensor<3xi1>
  %3 = graph.less_equal %a, %b : (tensor<3xi64>, tensor<i64>) -> tensor<3xi1>
  %4 = graph.greater_equal %a, %b : (tensor<3xi64>, tensor<i64>) -> tensor<3xi1>
  return %0, %1, %2, %3, %4 : tensor<3xi1>, tensor<3xi1>, tensor<3xi1>, tensor<3xi1>, tensor<3xi1>
}

// -----

// Float constants are not folded (only integer shape arithmetic is).
// CHECK-LABEL: func.func @float_arithmetic_not_folded
// CHECK: graph.add
// CHECK: graph.less
func.func @float_arithmetic_not_folded() -> (tensor<2xf32>, tensor<2xi1>) {
  %a = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %0 = graph.add %a, %a : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %1 = graph.less %a, %0 : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xi1>
  return %0, %1 : tensor<2xf32>, tensor<2xi1>
}

// -----

// CHECK-LABEL: func.func @data_movement_of_constants
// CHECK-DAG: %[[CONCAT:.*]] = graph.constant dense<[1, 2, 3, -1, 7]> : tensor<5xi64>
// CHECK-DAG: %[[STEP:.*]] = graph.constant dense<[1, 3]> : tensor<2xi64>
// CHECK-DAG: %[[REVERSED:.*]] = graph.constant dense<[3, 2, 1]> : tensor<3xi64>
// CHECK-DAG: %[[GATHER:.*]] = graph.constant dense<[3, 1, 3]> : tensor<3xi64>
// CHECK-DAG: %[[RESHAPE:.*]] = graph.constant dense<{{\[\[}}1, 2], [3, -1]]> : tensor<2x2xi64>
// CHECK-DAG: %[[EXPAND:.*]] = graph.constant dense<7> : tensor<2x3xi64>
// CHECK: return %[[CONCAT]], %[[STEP]], %[[REVERSED]], %[[GATHER]], %[[RESHAPE]], %[[EXPAND]]
func.func @data_movement_of_constants() -> (tensor<5xi64>, tensor<2xi64>, tensor<3xi64>, tensor<3xi64>, tensor<2x2xi64>, tensor<2x3xi64>) {
  %a = graph.constant dense<[1, 2, 3]> : tensor<3xi64>
  %b = graph.constant dense<[-1]> : tensor<1xi64>
  %c = graph.constant dense<7> : tensor<1xi64>
  %0 = graph.concat %a, %b, %c {axis = 0} : (tensor<3xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<5xi64>
  %1 = graph.slice %a {starts = array<i64: 0>, ends = array<i64: 3>, steps = array<i64: 2>} : (tensor<3xi64>) -> tensor<2xi64>
  %2 = graph.slice %a {starts = array<i64: 2>, ends = array<i64: -1>, steps = array<i64: -1>} : (tensor<3xi64>) -> tensor<3xi64>
  // Negative indices count from the end.
  %i = graph.constant dense<[-1, 0, 2]> : tensor<3xi32>
  %3 = graph.gather %a, %i {axis = 0} : (tensor<3xi64>, tensor<3xi32>) -> tensor<3xi64>
  %4 = graph.slice %0 {starts = array<i64: 0>, ends = array<i64: 4>, steps = array<i64: 1>} : (tensor<5xi64>) -> tensor<4xi64>
  %5 = graph.reshape %4 {shape = array<i64: 2, -1>} : (tensor<4xi64>) -> tensor<2x2xi64>
  %6 = graph.expand %c {shape = array<i64: 2, 3>} : (tensor<1xi64>) -> tensor<2x3xi64>
  return %0, %1, %2, %3, %5, %6 : tensor<5xi64>, tensor<2xi64>, tensor<3xi64>, tensor<3xi64>, tensor<2x2xi64>, tensor<2x3xi64>
}

// -----

// An index outside the data is left for the runtime to report.
// CHECK-LABEL: func.func @gather_out_of_bounds
// CHECK: graph.gather
func.func @gather_out_of_bounds() -> tensor<1xi64> {
  %a = graph.constant dense<[1, 2, 3]> : tensor<3xi64>
  %i = graph.constant dense<[3]> : tensor<1xi64>
  %0 = graph.gather %a, %i {axis = 0} : (tensor<3xi64>, tensor<1xi64>) -> tensor<1xi64>
  return %0 : tensor<1xi64>
}

// -----

// CHECK-LABEL: func.func @cast_of_integer_constants
// CHECK-DAG: %[[NARROW:.*]] = graph.constant dense<[300, -5, 0]> : tensor<3xi32>
// CHECK-DAG: %[[TRUNC:.*]] = graph.constant dense<[44, -5, 0]> : tensor<3xi8>
// CHECK-DAG: %[[BOOL:.*]] = graph.constant dense<[true, true, false]> : tensor<3xi1>
// CHECK-DAG: %[[FLOAT:.*]] = graph.cast %{{.*}} {to = f32}
// CHECK: return %[[NARROW]], %[[TRUNC]], %[[BOOL]], %[[FLOAT]]
func.func @cast_of_integer_constants() -> (tensor<3xi32>, tensor<3xi8>, tensor<3xi1>, tensor<3xf32>) {
  %a = graph.constant dense<[300, -5, 0]> : tensor<3xi64>
  %0 = graph.cast %a {to = i32} : (tensor<3xi64>) -> tensor<3xi32>
  %1 = graph.cast %a {to = i8} : (tensor<3xi64>) -> tensor<3xi8>
  %2 = graph.cast %a {to = i1} : (tensor<3xi64>) -> tensor<3xi1>
  // Only integer targets are folded.
  %3 = graph.cast %a {to = f32} : (tensor<3xi64>) -> tensor<3xf32>
  return %0, %1, %2, %3 : tensor<3xi32>, tensor<3xi8>, tensor<3xi1>, tensor<3xf32>
}

// -----

// The shape subgraph of a flatten: Concat(Gather(Shape(x), 0), [-1]) -> [2, -1].
// CHECK-LABEL: func.func @shape_subgraph
// CHECK-DAG: %[[SHAPE:.*]] = graph.constant dense<[2, -1]> : tensor<2xi64>
// CHECK-DAG: %[[ELEMENTS:.*]] = graph.constant dense<48> : tensor<i64>
// CHECK: return %[[SHAPE]], %[[ELEMENTS]]
func.func @shape_subgraph() -> (tensor<2xi64>, tensor<i64>) {
  %shape = graph.constant dense<[2, 3, 8]> : tensor<3xi64>
  %zero = graph.constant dense<[0]> : tensor<1xi64>
  %minus_one = graph.constant dense<[-1]> : tensor<1xi64>
  %batch = graph.gather %shape, %zero {axis = 0} : (tensor<3xi64>, tensor<1xi64>) -> tensor<1xi64>
  %0 = graph.concat %batch, %minus_one {axis = 0} : (tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64>
  %i1 = graph.constant dense<1> : tensor<i64>
  %i2 = graph.constant dense<2> : tensor<i64>
  %d1 = graph.gather %shape, %i1 {axis = 0} : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %d2 = graph.gather %shape, %i2 {axis = 0} : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %1 = graph.mul %d1, %d2 : (tensor<i64>, tensor<i64>) -> tensor<i64>
  %2 = graph.mul %1, %batch : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %3 = graph.reshape %2 {shape = array<i64>} : (tensor<1xi64>) -> tensor<i64>
  return %0, %3 : tensor<2xi64>, tensor<i64>
}

// -----

// x + 0, 0 + x, x - 0, x * 1, 1 * x and x / 1 are x when the types match.
// CHECK-LABEL: func.func @neutral_operands
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>, %[[I:.*]]: tensor<4xi64>)
// CHECK-NEXT: return %[[X]], %[[X]], %[[X]], %[[X]], %[[X]], %[[I]], %[[I]]
func.func @neutral_operands(%x: tensor<2x3xf32>, %i: tensor<4xi64>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<4xi64>, tensor<4xi64>) {
  %zero = graph.constant dense<0.0> : tensor<3xf32>
  %one = graph.constant dense<1.0> : tensor<f32>
  %izero = graph.constant dense<0> : tensor<4xi64>
  %ione = graph.constant dense<1> : tensor<1xi64>
  %0 = graph.add %x, %zero : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %1 = graph.add %zero, %x : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = graph.sub %x, %zero : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %3 = graph.mul %one, %x : (tensor<f32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %4 = graph.div %x, %one : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %5 = graph.add %i, %izero : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  %6 = graph.mul %ione, %i : (tensor<1xi64>, tensor<4xi64>) -> tensor<4xi64>
  return %0, %1, %2, %3, %4, %5, %6 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<4xi64>, tensor<4xi64>
}

// -----

// Adding zeros of a larger shape broadcasts x: the result is not x.
// CHECK-LABEL: func.func @neutral_operand_that_broadcasts
// CHECK-SAME: (%[[X:.*]]: tensor<3xf32>)
// CHECK-DAG: %[[ZERO:.*]] = graph.constant dense<0.000000e+00> : tensor<2x3xf32>
// CHECK-DAG: %[[ONE:.*]] = graph.constant dense<1.000000e+00> : tensor<4x1xf32>
// CHECK: %[[ADD:.*]] = graph.add %[[X]], %[[ZERO]] : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK: %[[MUL:.*]] = graph.mul %[[ONE]], %[[X]] : (tensor<4x1xf32>, tensor<3xf32>) -> tensor<4x3xf32>
// CHECK: return %[[ADD]], %[[MUL]]
func.func @neutral_operand_that_broadcasts(%x: tensor<3xf32>) -> (tensor<2x3xf32>, tensor<4x3xf32>) {
  %zero = graph.constant dense<0.0> : tensor<2x3xf32>
  %one = graph.constant dense<1.0> : tensor<4x1xf32>
  %0 = graph.add %x, %zero : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = graph.mul %one, %x : (tensor<4x1xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  return %0, %1 : tensor<2x3xf32>, tensor<4x3xf32>
}

// -----

// Only splats are neutral: [0, 1] is not zero.
// CHECK-LABEL: func.func @non_splat_not_neutral
// CHECK: graph.add
func.func @non_splat_not_neutral(%x: tensor<2xf32>) -> tensor<2xf32> {
  %c = graph.constant dense<[0.0, 1.0]> : tensor<2xf32>
  %0 = graph.add %x, %c : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// A transposed GEMM operand becomes its transpose flag.
// CHECK-LABEL: func.func @gemm_of_transposes
// CHECK-SAME: (%[[A:.*]]: tensor<4x3xf32>, %[[B:.*]]: tensor<5x4xf32>)
// CHECK-NOT: graph.transpose
// CHECK: graph.gemm %[[A]], %[[B]] {trans_a = true, trans_b = true} : (tensor<4x3xf32>, tensor<5x4xf32>) -> tensor<3x5xf32>
func.func @gemm_of_transposes(%a: tensor<4x3xf32>, %b: tensor<5x4xf32>) -> tensor<3x5xf32> {
  %at = graph.transpose %a {perm = array<i64: 1, 0>} : (tensor<4x3xf32>) -> tensor<3x4xf32>
  %bt = graph.transpose %b {perm = array<i64: 1, 0>} : (tensor<5x4xf32>) -> tensor<4x5xf32>
  %y = graph.gemm %at, %bt : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
  return %y : tensor<3x5xf32>
}

// -----

// (A^T B)^T = B^T A: the transposed product, no transpose.
// CHECK-LABEL: func.func @transposed_gemm
// CHECK-SAME: (%[[A:.*]]: tensor<4x3xf32>, %[[B:.*]]: tensor<4x5xf32>)
// CHECK-NOT: graph.transpose
// CHECK: graph.gemm %[[B]], %[[A]] {alpha = 2.000000e+00 : f64, trans_a = true} : (tensor<4x5xf32>, tensor<4x3xf32>) -> tensor<5x3xf32>
func.func @transposed_gemm(%a: tensor<4x3xf32>, %b: tensor<4x5xf32>) -> tensor<5x3xf32> {
  %y = graph.gemm %a, %b {alpha = 2.0 : f64, trans_a = true} : (tensor<4x3xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
  %t = graph.transpose %y {perm = array<i64: 1, 0>} : (tensor<3x5xf32>) -> tensor<5x3xf32>
  return %t : tensor<5x3xf32>
}

// -----

// Not when the product has other readers, nor with c.
// CHECK-LABEL: func.func @gemm_read_twice
// CHECK: graph.transpose
// CHECK: graph.transpose
func.func @gemm_read_twice(%a: tensor<3x4xf32>, %b: tensor<4x5xf32>, %c: tensor<5xf32>) -> (tensor<5x3xf32>, tensor<3x5xf32>, tensor<5x3xf32>) {
  %y = graph.gemm %a, %b : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
  %t = graph.transpose %y {perm = array<i64: 1, 0>} : (tensor<3x5xf32>) -> tensor<5x3xf32>
  %z = graph.gemm %a, %b, %c : (tensor<3x4xf32>, tensor<4x5xf32>, tensor<5xf32>) -> tensor<3x5xf32>
  %u = graph.transpose %z {perm = array<i64: 1, 0>} : (tensor<3x5xf32>) -> tensor<5x3xf32>
  return %t, %y, %u : tensor<5x3xf32>, tensor<3x5xf32>, tensor<5x3xf32>
}

// -----

// Casts between float types: a widening that is exact (bf16 -> f32) and
// its narrowing back cancel, and skip the middle type on the way to a
// third; a narrowing and its widening (f32 -> bf16 -> f32) round, so
// they stay; float constants are cast rounding to nearest even.
// CHECK-LABEL: func.func @float_casts
// CHECK-DAG: %[[C:.*]] = graph.constant dense<1.000980e-01> : tensor<bf16>
// CHECK-DAG: %[[H:.*]] = graph.cast %arg0 {to = f16} : (tensor<4xbf16>) -> tensor<4xf16>
// CHECK-DAG: %[[N:.*]] = graph.cast %arg1 {to = bf16}
// CHECK-DAG: %[[W:.*]] = graph.cast %[[N]] {to = f32}
// CHECK: return %arg0, %[[H]], %[[W]], %[[C]]
func.func @float_casts(%x: tensor<4xbf16>, %y: tensor<4xf32>) -> (tensor<4xbf16>, tensor<4xf16>, tensor<4xf32>, tensor<bf16>) {
  %w = graph.cast %x {to = f32} : (tensor<4xbf16>) -> tensor<4xf32>
  %back = graph.cast %w {to = bf16} : (tensor<4xf32>) -> tensor<4xbf16>
  %half = graph.cast %w {to = f16} : (tensor<4xf32>) -> tensor<4xf16>
  %n = graph.cast %y {to = bf16} : (tensor<4xf32>) -> tensor<4xbf16>
  %nw = graph.cast %n {to = f32} : (tensor<4xbf16>) -> tensor<4xf32>
  %c = graph.constant dense<0.1> : tensor<f32>
  %cb = graph.cast %c {to = bf16} : (tensor<f32>) -> tensor<bf16>
  return %back, %half, %nw, %cb : tensor<4xbf16>, tensor<4xf16>, tensor<4xf32>, tensor<bf16>
}

// -----

// A transpose moves elements in the narrower float type around a cast
// (--amp), next to the product: an f32 parameter is cast to bf16 before
// it is transposed into a product's operand, and a bf16 product is
// transposed before it is widened to the f32 of its parameter's gradient
// (where the transposed GEMM computes it directly). A transpose with
// another reader, and a cast between integers, stay as they are.
// CHECK-LABEL: func.func @transposes_around_casts
// CHECK-DAG: %[[T:.*]] = graph.transpose %arg0 {perm = array<i64: 1, 0>} : (tensor<8x4xf32>) -> tensor<4x8xf32>
// CHECK-DAG: %[[LOW:.*]] = graph.cast %arg0 {to = bf16} : (tensor<8x4xf32>) -> tensor<8x4xbf16>
// CHECK-DAG: %[[WT:.*]] = graph.transpose %[[LOW]] {perm = array<i64: 1, 0>} : (tensor<8x4xbf16>) -> tensor<4x8xbf16>
// CHECK-DAG: %[[P:.*]] = graph.matmul %arg1, %[[WT]]
// CHECK-DAG: %[[G:.*]] = graph.gemm %arg2, %arg3 {trans_a = true} : (tensor<2x8xbf16>, tensor<2x4xbf16>) -> tensor<8x4xbf16>
// CHECK-DAG: %[[G32:.*]] = graph.cast %[[G]] {to = f32} : (tensor<8x4xbf16>) -> tensor<8x4xf32>
// CHECK-DAG: %[[S:.*]] = graph.cast %[[T]] {to = bf16}
// CHECK-DAG: %[[I:.*]] = graph.transpose %arg4
// CHECK-DAG: %[[I32:.*]] = graph.cast %[[I]] {to = i32}
// CHECK: return %[[P]], %[[G32]], %[[T]], %[[S]], %[[I32]]
func.func @transposes_around_casts(%w: tensor<8x4xf32>, %x: tensor<2x4xbf16>, %a: tensor<2x8xbf16>, %b: tensor<2x4xbf16>, %i: tensor<2x3xi64>) -> (tensor<2x8xbf16>, tensor<8x4xf32>, tensor<4x8xf32>, tensor<4x8xbf16>, tensor<3x2xi32>) {
  %wt = graph.transpose %w {perm = array<i64: 1, 0>} : (tensor<8x4xf32>) -> tensor<4x8xf32>
  %wt2 = graph.transpose %w {perm = array<i64: 1, 0>} : (tensor<8x4xf32>) -> tensor<4x8xf32>
  %low = graph.cast %wt2 {to = bf16} : (tensor<4x8xf32>) -> tensor<4x8xbf16>
  %p = graph.matmul %x, %low : (tensor<2x4xbf16>, tensor<4x8xbf16>) -> tensor<2x8xbf16>
  %g = graph.gemm %b, %a {trans_a = true} : (tensor<2x4xbf16>, tensor<2x8xbf16>) -> tensor<4x8xbf16>
  %g32 = graph.cast %g {to = f32} : (tensor<4x8xbf16>) -> tensor<4x8xf32>
  %gt = graph.transpose %g32 {perm = array<i64: 1, 0>} : (tensor<4x8xf32>) -> tensor<8x4xf32>
  %shared = graph.cast %wt {to = bf16} : (tensor<4x8xf32>) -> tensor<4x8xbf16>
  %it = graph.transpose %i {perm = array<i64: 1, 0>} : (tensor<2x3xi64>) -> tensor<3x2xi64>
  %i32 = graph.cast %it {to = i32} : (tensor<3x2xi64>) -> tensor<3x2xi32>
  return %p, %gt, %wt, %shared, %i32 : tensor<2x8xbf16>, tensor<8x4xf32>, tensor<4x8xf32>, tensor<4x8xbf16>, tensor<3x2xi32>
}
