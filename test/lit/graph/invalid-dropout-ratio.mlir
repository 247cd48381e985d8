// Dropout's ratio must lie in [0, 1): ratio 1 scales the kept values by 1 / 0.
// RUN: trainc-opt %s -split-input-file -verify-diagnostics
// Bug: DropoutOp shares the unary same-type inference (ElementwiseOps.cpp), which
// never looks at ratio, so ratio = 1.0 and negative ratios verify. The expected
// text is a substring so that the fix may print the ratio in any format.

func.func @ratio_one(%x: tensor<4xf32>) {
  // expected-error @+2 {{is not in [0, 1)}}
  // expected-error @+1 {{'graph.dropout' op failed to infer returned types}}
  %0 = graph.dropout %x {ratio = 1.0} : tensor<4xf32>
  return
}

// -----

func.func @ratio_negative(%x: tensor<4xf32>) {
  // expected-error @+2 {{is not in [0, 1)}}
  // expected-error @+1 {{'graph.dropout' op failed to infer returned types}}
  %0 = graph.dropout %x {ratio = -0.5} : tensor<4xf32>
  return
}
