// --trainc-bucket-all-reduces: a data-parallel step's gradient all-reduces
// become buckets that start when their last gradient is computed and are
// waited for after the next bucket has started, right before the updates
// that read them (in the order they had).
// RUN: trainc-opt %s --split-input-file --trainc-bucket-all-reduces=bucket-bytes=512 -verify-diagnostics | FileCheck %s
// RUN: trainc-opt %s --split-input-file --trainc-bucket-all-reduces=bucket-bytes=100000 -verify-diagnostics | FileCheck %s --check-prefix=ONE
// RUN: trainc-opt %s --split-input-file --trainc-bucket-all-reduces=bucket-bytes=64 -verify-diagnostics | FileCheck %s --check-prefix=INPLACE

// Four gradients of 256 bytes, computed g1 to g4 (g2 through a view); their
// all-reduces are listed the other way round. Buckets of 512 bytes:
// {g1, g2} and {g3, g4}, filled in the order the gradients are computed.
// CHECK-LABEL: func.func @train_step
// CHECK: kernel.launch "graph.relu"({{.*}}) -> (%[[G1:[a-z0-9]+]])
// CHECK: kernel.launch "graph.reduce_sum"
// CHECK: %[[G2:[a-z0-9]+]] = kernel.view
// CHECK: %[[S0:[a-z0-9]+]] = kernel.alloc : memref<128xf32>
// CHECK: kernel.launch "comm.all_reduce_start"(%[[G1]], %[[G2]]) -> (%[[S0]]) {backend = "mpi", options = {bucket = 0 : i64, reduction = "mean"}}
// CHECK: kernel.launch "graph.neg"({{.*}}) -> (%[[G3:[a-z0-9]+]])
// CHECK: kernel.launch "graph.exp"({{.*}}) -> (%[[G4:[a-z0-9]+]])
// CHECK: %[[S1:[a-z0-9]+]] = kernel.alloc : memref<128xf32>
// CHECK: kernel.launch "comm.all_reduce_start"(%[[G3]], %[[G4]]) -> (%[[S1]]) {backend = "mpi", options = {bucket = 1 : i64
// CHECK: kernel.launch "comm.all_reduce_wait"(%[[S0]]) -> (%[[A1:[a-z0-9]+]], %[[A2:[a-z0-9]+]]) {backend = "mpi", options = {bucket = 0 : i64
// CHECK-NEXT: kernel.launch "graph.sgd_update"(%{{.*}}, %[[A2]],
// CHECK-NEXT: kernel.launch "graph.sgd_update"(%{{.*}}, %[[A1]],
// CHECK-NOT: kernel.launch
// CHECK: kernel.launch "comm.all_reduce_wait"(%[[S1]]) -> (%[[A3:[a-z0-9]+]], %[[A4:[a-z0-9]+]])
// CHECK-NEXT: kernel.launch "graph.sgd_update"(%{{.*}}, %[[A4]],
// CHECK-NEXT: kernel.launch "graph.sgd_update"(%{{.*}}, %[[A3]],
// CHECK-NEXT: return
// CHECK-NOT: graph.all_reduce
// One bucket for everything: it starts after the last gradient.
// ONE-LABEL: func.func @train_step
// ONE: kernel.launch "graph.exp"
// ONE-NOT: kernel.launch
// ONE: kernel.alloc : memref<256xf32>
// ONE-NEXT: kernel.launch "comm.all_reduce_start"({{.*}}) {{.*}}bucket = 0
// ONE-NOT: kernel.launch
// ONE: kernel.launch "comm.all_reduce_wait"
// ONE-NOT: comm.
// Buckets of one gradient each: a gradient nothing else reads is reduced
// in place (its own staging buffer, the mean written over it, its update
// reading it), through a view too.
// INPLACE-LABEL: func.func @train_step
// INPLACE: kernel.launch "graph.relu"({{.*}}) -> (%[[G1:[a-z0-9]+]])
// INPLACE-NEXT: kernel.launch "comm.all_reduce_start"(%[[G1]]) -> (%[[G1]]) {{.*}}bucket = 0
// INPLACE: kernel.launch "graph.reduce_sum"
// INPLACE-NEXT: %[[G2:[a-z0-9]+]] = kernel.view
// INPLACE-NEXT: kernel.launch "comm.all_reduce_start"(%[[G2]]) -> (%[[G2]]) {{.*}}bucket = 1
// INPLACE: kernel.launch "comm.all_reduce_wait"(%[[G1]]) -> (%[[G1]])
// INPLACE-NEXT: kernel.launch "graph.sgd_update"(%{{.*}}, %[[G1]],
// INPLACE: kernel.launch "graph.neg"({{.*}}) -> (%[[G3:[a-z0-9]+]])
// INPLACE-NEXT: kernel.launch "comm.all_reduce_start"(%[[G3]]) -> (%[[G3]]) {{.*}}bucket = 2
func.func @train_step(%x: memref<64xf32>, %w1: memref<64xf32>, %w2: memref<64xf32>,
                      %w3: memref<64xf32>, %w4: memref<64xf32>,
                      %lr: memref<f32>, %step: memref<i64>) {
  %g1 = kernel.alloc : memref<64xf32>
  kernel.launch "graph.relu"(%x) -> (%g1) {backend = "generated", options = {}} : (memref<64xf32>) -> memref<64xf32>
  %xm = kernel.view %x : memref<64xf32> to memref<1x64xf32>
  %g2k = kernel.alloc : memref<1x64xf32>
  kernel.launch "graph.reduce_sum"(%xm) -> (%g2k) {backend = "generated", options = {axes = array<i64: 0>, keepdims = true}} : (memref<1x64xf32>) -> memref<1x64xf32>
  %g2 = kernel.view %g2k : memref<1x64xf32> to memref<64xf32>
  %g3 = kernel.alloc : memref<64xf32>
  kernel.launch "graph.neg"(%x) -> (%g3) {backend = "generated", options = {}} : (memref<64xf32>) -> memref<64xf32>
  %g4 = kernel.alloc : memref<64xf32>
  kernel.launch "graph.exp"(%x) -> (%g4) {backend = "generated", options = {}} : (memref<64xf32>) -> memref<64xf32>
  %a4 = kernel.alloc : memref<64xf32>
  kernel.launch "graph.all_reduce"(%g4) -> (%a4) {backend = "mpi", options = {reduction = "mean"}} : (memref<64xf32>) -> memref<64xf32>
  kernel.launch "graph.sgd_update"(%w4, %a4, %lr, %step) -> (%w4) {backend = "generated", options = {}} : (memref<64xf32>, memref<64xf32>, memref<f32>, memref<i64>) -> memref<64xf32>
  %a3 = kernel.alloc : memref<64xf32>
  kernel.launch "graph.all_reduce"(%g3) -> (%a3) {backend = "mpi", options = {reduction = "mean"}} : (memref<64xf32>) -> memref<64xf32>
  kernel.launch "graph.sgd_update"(%w3, %a3, %lr, %step) -> (%w3) {backend = "generated", options = {}} : (memref<64xf32>, memref<64xf32>, memref<f32>, memref<i64>) -> memref<64xf32>
  %a2 = kernel.alloc : memref<64xf32>
  kernel.launch "graph.all_reduce"(%g2) -> (%a2) {backend = "mpi", options = {reduction = "mean"}} : (memref<64xf32>) -> memref<64xf32>
  kernel.launch "graph.sgd_update"(%w2, %a2, %lr, %step) -> (%w2) {backend = "generated", options = {}} : (memref<64xf32>, memref<64xf32>, memref<f32>, memref<i64>) -> memref<64xf32>
  %a1 = kernel.alloc : memref<64xf32>
  kernel.launch "graph.all_reduce"(%g1) -> (%a1) {backend = "mpi", options = {reduction = "mean"}} : (memref<64xf32>) -> memref<64xf32>
  kernel.launch "graph.sgd_update"(%w1, %a1, %lr, %step) -> (%w1) {backend = "generated", options = {}} : (memref<64xf32>, memref<64xf32>, memref<f32>, memref<i64>) -> memref<64xf32>
  return
}

// -----

// All-reduces must share one backend.
func.func @mixed(%g: memref<4xf32>, %h: memref<4xf32>) {
  %a = kernel.alloc : memref<4xf32>
  kernel.launch "graph.all_reduce"(%g) -> (%a) {backend = "mpi", options = {}} : (memref<4xf32>) -> memref<4xf32>
  %b = kernel.alloc : memref<4xf32>
  // expected-error @+1 {{an all-reduce launch must have one input, one output and the backend of the others}}
  kernel.launch "graph.all_reduce"(%h) -> (%b) {backend = "nccl", options = {}} : (memref<4xf32>) -> memref<4xf32>
  return
}

// -----

// A gradient read again after its all-reduce keeps a staging buffer.
// ONE-LABEL: func.func @reread
// INPLACE-LABEL: func.func @reread
// INPLACE: kernel.launch "graph.exp"({{.*}}) -> (%[[G:[a-z0-9]+]])
// INPLACE-NEXT: %[[S:[a-z0-9]+]] = kernel.alloc : memref<4xf32>
// INPLACE-NEXT: kernel.launch "comm.all_reduce_start"(%[[G]]) -> (%[[S]])
func.func @reread(%x: memref<4xf32>, %w: memref<4xf32>, %lr: memref<f32>, %step: memref<i64>, %out: memref<4xf32>) {
  %g = kernel.alloc : memref<4xf32>
  kernel.launch "graph.exp"(%x) -> (%g) {backend = "generated", options = {}} : (memref<4xf32>) -> memref<4xf32>
  %a = kernel.alloc : memref<4xf32>
  kernel.launch "graph.all_reduce"(%g) -> (%a) {backend = "mpi", options = {reduction = "mean"}} : (memref<4xf32>) -> memref<4xf32>
  kernel.launch "runtime.copy"(%g) -> (%out) {backend = "generated", options = {}} : (memref<4xf32>) -> memref<4xf32>
  kernel.launch "graph.sgd_update"(%w, %a, %lr, %step) -> (%w) {backend = "generated", options = {}} : (memref<4xf32>, memref<4xf32>, memref<f32>, memref<i64>) -> memref<4xf32>
  return
}

// -----

// So does one read by another launch before it (in place, the collective
// would write the buffer while that launch may still read it): the start
// packs it and may then run first.
// ONE-LABEL: func.func @read_before
// INPLACE-LABEL: func.func @read_before
// INPLACE: kernel.launch "graph.exp"({{.*}}) -> (%[[G:[a-z0-9]+]])
// INPLACE-NEXT: %[[S:[a-z0-9]+]] = kernel.alloc : memref<4xf32>
// INPLACE-NEXT: kernel.launch "comm.all_reduce_start"(%[[G]]) -> (%[[S]])
// INPLACE-NEXT: kernel.launch "runtime.copy"(%[[G]])
func.func @read_before(%x: memref<4xf32>, %w: memref<4xf32>, %lr: memref<f32>, %step: memref<i64>, %out: memref<4xf32>) {
  %g = kernel.alloc : memref<4xf32>
  kernel.launch "graph.exp"(%x) -> (%g) {backend = "generated", options = {}} : (memref<4xf32>) -> memref<4xf32>
  kernel.launch "runtime.copy"(%g) -> (%out) {backend = "generated", options = {}} : (memref<4xf32>) -> memref<4xf32>
  %a = kernel.alloc : memref<4xf32>
  kernel.launch "graph.all_reduce"(%g) -> (%a) {backend = "mpi", options = {reduction = "mean"}} : (memref<4xf32>) -> memref<4xf32>
  kernel.launch "graph.sgd_update"(%w, %a, %lr, %step) -> (%w) {backend = "generated", options = {}} : (memref<4xf32>, memref<4xf32>, memref<f32>, memref<i64>) -> memref<4xf32>
  return
}
