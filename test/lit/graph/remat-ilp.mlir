// --trainc-remat solver=ilp (RematIlp.cpp: the integer program, solved by
// CBC) on the chain of graph/remat.mlir; the liveness model both solvers
// share is RematModel.cpp.
// RUN: trainc-opt %s --trainc-remat="target=60000 solver=ilp" | FileCheck %s --check-prefix=ONE
// RUN: trainc-opt %s --trainc-remat=solver=ilp | FileCheck %s --check-prefix=ALL

// 60000 bytes: the first layer recomputed from %x before the backward
// pass reads it, proven the cheapest at the root (no branch-and-bound
// node), within the limits; the model's peak equals the real one.
// ONE-LABEL: func.func @gradients
// ONE-SAME: ilp_model_peak = 53248 : i64, ilp_nodes = 0 : i64, ilp_optimal = true, ilp_peak = 53248 : i64
// ONE-SAME: ilp_timed_out = false
// ONE-SAME: peak_after = 53248 : i64, peak_before = 69632 : i64
// ONE-SAME: recomputed_ops = 2
// ONE-SAME: solver = "ilp"
// ONE: graph.where
// ONE: %[[G2:.*]] = graph.where
// ONE-NEXT: %[[A1:.*]] = graph.matmul %arg0, %arg1
// ONE-NEXT: %[[R1C:.*]] = graph.relu %[[A1]]
// ONE-NEXT: graph.matmul %[[R1C]], %[[G2]]
//
// No target: the lowest peak this model allows (a saved value is not
// recomputed again inside another chain), 53248 bytes.
// ALL-LABEL: func.func @gradients
// ALL-SAME: ilp_optimal = true, ilp_peak = 53248 : i64
// ALL-SAME: solver = "ilp"
func.func @gradients(%x: tensor<64x64xf32>, %w1: tensor<64x64xf32>, %w2: tensor<64x64xf32>, %w3: tensor<64x64xf32>, %labels: tensor<64x64xf32>) -> (tensor<f32> {graph.name = "loss", graph.role = "loss"}, tensor<64x64xf32> {graph.name = "w1.grad", graph.role = "gradient"}, tensor<64x64xf32> {graph.name = "w2.grad", graph.role = "gradient"}, tensor<64x64xf32> {graph.name = "w3.grad", graph.role = "gradient"}) {
  %a1 = graph.matmul %x, %w1 : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %r1 = graph.relu %a1 : tensor<64x64xf32>
  %a2 = graph.matmul %r1, %w2 : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %r2 = graph.relu %a2 : tensor<64x64xf32>
  %a3 = graph.matmul %r2, %w3 : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %r3 = graph.relu %a3 : tensor<64x64xf32>
  %loss = graph.mse_loss %r3, %labels : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<f32>
  %zero = graph.constant dense<0.0> : tensor<f32>
  %dy = graph.sub %r3, %labels : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %m3 = graph.greater %r3, %zero : (tensor<64x64xf32>, tensor<f32>) -> tensor<64x64xi1>
  %g3 = graph.where %m3, %dy, %zero : (tensor<64x64xi1>, tensor<64x64xf32>, tensor<f32>) -> tensor<64x64xf32>
  %dw3 = graph.matmul %r2, %g3 : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %h2 = graph.matmul %g3, %w3 : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %m2 = graph.greater %r2, %zero : (tensor<64x64xf32>, tensor<f32>) -> tensor<64x64xi1>
  %g2 = graph.where %m2, %h2, %zero : (tensor<64x64xi1>, tensor<64x64xf32>, tensor<f32>) -> tensor<64x64xf32>
  %dw2 = graph.matmul %r1, %g2 : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %h1 = graph.matmul %g2, %w2 : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %m1 = graph.greater %r1, %zero : (tensor<64x64xf32>, tensor<f32>) -> tensor<64x64xi1>
  %g1 = graph.where %m1, %h1, %zero : (tensor<64x64xi1>, tensor<64x64xf32>, tensor<f32>) -> tensor<64x64xf32>
  %dw1 = graph.matmul %x, %g1 : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  return %loss, %dw1, %dw2, %dw3 : tensor<f32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>
}
