// --trainc-remat: values the backward pass reads from the forward one are
// recomputed next to their backward readers until the peak of live bytes
// is at most the target; by the greedy, the integer program (CBC), or the
// better of the two (the default).
// RUN: trainc-opt %s --trainc-remat=target=1000000 | FileCheck %s --check-prefix=LOOSE
// RUN: trainc-opt %s --trainc-remat="target=60000 solver=greedy" | FileCheck %s --check-prefix=ONE
// RUN: trainc-opt %s --trainc-remat="target=60000 solver=ilp" | FileCheck %s --check-prefixes=ONE,ILP
// RUN: trainc-opt %s --trainc-remat=solver=greedy | FileCheck %s --check-prefix=ALL
// RUN: trainc-opt %s --trainc-remat | FileCheck %s --check-prefixes=ALL,BEST
// RUN: not trainc-opt %s --trainc-remat=solver=exact 2>&1 | FileCheck %s --check-prefix=BAD

// Three dense layers with ReLUs (16 KiB per activation, 4 KiB per mask)
// and a hand-written backward pass. Without recomputation the live bytes
// peak at 68 KiB as the backward pass starts, with %r1 and %r2 waiting
// for their readers.
//
// A target above the peak changes nothing (either solver).
// LOOSE-LABEL: func.func @gradients
// LOOSE-SAME: greedy_flops = 0.000000e+00 : f64, greedy_peak = 69632 : i64
// LOOSE-SAME: ilp_flops = 0.000000e+00 : f64, {{.*}}ilp_peak = 69632 : i64
// LOOSE-SAME: peak_after = 69632 : i64, peak_before = 69632 : i64, recomputed_flops = 0.000000e+00 : f64, recomputed_ops = 0 : i64
// LOOSE-COUNT-3: graph.relu
// LOOSE-NOT: graph.relu
//
// 60000 bytes: the first layer (product and ReLU, a chain) is recomputed
// from the argument %x right before the backward pass reads it, and the
// readers after that point read the copy. Both solvers find it; the
// integer program proves it the cheapest.
// ONE-LABEL: func.func @gradients
// ILP-SAME: ilp_optimal = true
// ONE-SAME: peak_after = 53248 : i64, peak_before = 69632 : i64
// ONE-SAME: recomputed_ops = 2
// ONE: %[[R1:.*]] = graph.relu
// ONE: graph.where
// ONE: %[[G2:.*]] = graph.where
// ONE-NEXT: %[[A1:.*]] = graph.matmul %arg0, %arg1
// ONE-NEXT: %[[R1C:.*]] = graph.relu %[[A1]]
// ONE-NEXT: graph.matmul %[[R1C]], %[[G2]]
// ONE-NOT: %[[R1]]{{[ ,]}}
// ONE: graph.greater %[[R1C]]
//
// No target: as low as recomputation gets the peak; the second layer's
// ReLU comes back through the first layer's chain (four ops from %x).
// The integer program recomputes a saved value only from values that are
// there, so it stops at 53248 bytes: the default keeps the greedy's plan.
// ALL-LABEL: func.func @gradients
// BEST-SAME: greedy_peak = 49152 : i64
// BEST-SAME: ilp_peak = 53248 : i64
// ALL-SAME: peak_after = 49152 : i64, peak_before = 69632 : i64
// ALL-SAME: recomputed_ops = 6
// BEST-SAME: solver = "greedy"
// ALL: graph.where
// ALL-NEXT: graph.matmul %arg0, %arg1
// ALL-NEXT: graph.relu
// ALL-NEXT: graph.matmul %{{.*}}, %arg2
// ALL-NEXT: graph.relu
// ALL: graph.where
// ALL-NEXT: graph.matmul %arg0, %arg1
// ALL-NEXT: graph.relu
// BAD: error: --trainc-remat: solver must be greedy, ilp or best, got 'exact'
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
