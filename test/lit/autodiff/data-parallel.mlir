// Data-parallel training (--trainc-autodiff data-parallel=true): @train_step
// averages every gradient over the job (graph.all_reduce) before anything
// reads it: clipping's norm and the updates see the job's gradient. A
// parameter without a gradient has nothing to average; @eval has no
// all-reduce.
// RUN: trainc-opt %s --trainc-autodiff="loss=mse clip-grad-norm=1.0 data-parallel=true" --canonicalize --cse | FileCheck %s
// RUN: trainc-opt %s --trainc-autodiff="loss=mse" | FileCheck %s --check-prefix=ALONE
// CHECK: graph.training = {{{.*}}data_parallel = true
// CHECK-LABEL: func.func @train_step
// CHECK: %[[G:.*]]:3 = call @gradients
// CHECK-NEXT: %[[A:.*]] = graph.all_reduce %[[G]]#1 : (tensor<3x4xf32>) -> tensor<3x4xf32>
// CHECK-NOT: graph.all_reduce
// CHECK: graph.mul %[[A]], %[[A]]
// CHECK: graph.sgd_update %arg1, %{{.*}}
// CHECK-LABEL: func.func @eval
// CHECK-NOT: graph.all_reduce
// ALONE-NOT: graph.all_reduce
// ALONE-NOT: data_parallel

func.func @forward(%x: tensor<2x3xf32> {graph.name = "x", graph.role = "input"},
                   %w: tensor<3x4xf32> {graph.name = "w", graph.role = "parameter"},
                   %unused: tensor<3x4xf32> {graph.name = "frozen_path", graph.role = "parameter"}) -> tensor<2x4xf32> {
  %0 = graph.matmul %x, %w : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

