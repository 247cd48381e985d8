// --trainc-amp: each op runs in the precision of its cast class
// (CastClass.td); casts are made once per value and shared; the function's
// results keep their types.
// RUN: trainc-opt %s -split-input-file --trainc-amp | FileCheck %s --check-prefix=BF16
// RUN: trainc-opt %s -split-input-file --trainc-amp=precision=fp16 | FileCheck %s --check-prefix=FP16
// RUN: trainc-opt %s -split-input-file --trainc-amp="precision=fp16 products=rounded" | FileCheck %s --check-prefix=EMUL
// RUN: trainc-opt %s -split-input-file --trainc-amp=products=f32 | FileCheck %s --check-prefix=STORE
// RUN: not trainc-opt %s -split-input-file --trainc-amp=precision=fp8 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: --trainc-amp: precision must be bf16 or fp16, not 'fp8'
// RUN: not trainc-opt %s -split-input-file --trainc-amp=products=tf32 2>&1 | FileCheck %s --check-prefix=BADPRODUCTS
// BADPRODUCTS: --trainc-amp: products must be low, rounded or f32, not 'tf32'

// Master weights, through the training pipeline's order (amp, autodiff,
// amp): the step casts the f32 parameter down once for the forward
// product and the gradient's product, the gradient reaches the optimizer
// cast back to f32, and the bias gradient's sum over the batch
// accumulates in f32 (the second run), not in bf16.
// RUN: trainc-opt %S/Inputs/amp-forward.mlir --trainc-amp --trainc-autodiff=loss=mse --trainc-amp --canonicalize --cse | FileCheck %s --check-prefix=MASTER
// A dropout of a bf16 value: its mask is drawn in f32 (the mask kernels'
// type) and cast once, and the forward and the backward share it.
// RUN: trainc-opt %S/Inputs/amp-dropout.mlir --trainc-amp --trainc-autodiff --trainc-amp --canonicalize --cse | FileCheck %s --check-prefix=DROPOUT
// DROPOUT-LABEL: func.func @gradients
// DROPOUT: %[[M:.*]] = graph.random_mask {{.*}}element_type = f32
// DROPOUT-NEXT: %[[M16:.*]] = graph.cast %[[M]] {to = bf16}
// DROPOUT-NEXT: graph.mul %{{.*}}, %[[M16]] : (tensor<2x4xbf16>, tensor<2x4xbf16>)
// DROPOUT-NOT: graph.random_mask
// DROPOUT: graph.gemm %{{.*}}, %[[M16]]
// bf16 storage around f32 products (products=f32): the weight is never
// cast, the product's result is stored rounded for its ReLU, and the
// weight gradient, which only the optimizer reads, stays f32.
// RUN: trainc-opt %S/Inputs/amp-forward.mlir --trainc-amp=products=f32 --trainc-autodiff=loss=mse --trainc-amp=products=f32 --canonicalize --cse | FileCheck %s --check-prefix=STOREMASTER
// STOREMASTER-LABEL: func.func @gradients
// STOREMASTER-NOT: graph.cast %arg1
// STOREMASTER: %[[H:.*]] = graph.matmul %arg0, %arg1 : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
// STOREMASTER-NEXT: graph.cast %[[H]] {to = bf16}
// STOREMASTER-NOT: graph.cast %arg1
// STOREMASTER: %[[WG:.*]] = graph.gemm %arg0, %{{.*}} {trans_a = true} : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<3x4xf32>
// STOREMASTER-NEXT: return %{{.*}}, %[[WG]], %{{.*}} : tensor<f32>, tensor<3x4xf32>, tensor<4xf32>
// MASTER-LABEL: func.func @gradients
// MASTER-COUNT-1: graph.cast %arg1 {to = bf16} : (tensor<3x4xf32>) -> tensor<3x4xbf16>
// MASTER-NOT: graph.cast %arg1
// MASTER: %[[SUM:.*]] = graph.reduce_sum %{{.*}} {axes = array<i64: 0>} : (tensor<2x4xf32>) -> tensor<1x4xf32>
// MASTER: %[[BG:.*]] = graph.reshape %[[SUM]] {{.*}} -> tensor<4xf32>
// MASTER: %[[WG:.*]] = graph.gemm %{{.*}} {trans_a = true} : (tensor<2x3xbf16>, tensor<2x4xbf16>) -> tensor<3x4xbf16>
// MASTER: %[[WG32:.*]] = graph.cast %[[WG]] {to = f32} : (tensor<3x4xbf16>) -> tensor<3x4xf32>
// MASTER: return %{{.*}}, %[[WG32]], %[[BG]] : tensor<f32>, tensor<3x4xf32>, tensor<4xf32>
// MASTER-LABEL: func.func @train_step
// MASTER: %[[G:.*]]:3 = call @gradients
// MASTER: graph.sgd_update %arg1, %[[G]]#1, {{.*}} : (tensor<3x4xf32>, tensor<3x4xf32>, tensor<f32>, tensor<i64>) -> tensor<3x4xf32>

// Placement: the weight is cast once for both products (shared); the
// convolution (CastLow) and the ReLU that follows it run low; batch norm
// (CastActivations) normalizes the bf16 activations with its f32
// parameters and running statistics; max pooling, the reshapes and the
// concatenation follow in bf16; the gemm's weight is cast down; the
// result is cast back.
// BF16-LABEL: func.func @cnn
// BF16-NEXT: %[[X:.*]] = graph.cast %arg0 {to = bf16} : (tensor<2x1x8x8xf32>) -> tensor<2x1x8x8xbf16>
// BF16-NEXT: %[[W:.*]] = graph.cast %arg1 {to = bf16}
// BF16-NEXT: %[[B:.*]] = graph.cast %arg2 {to = bf16}
// BF16-NEXT: %[[Y:.*]] = graph.conv %[[X]], %[[W]], %[[B]] {{.*}} -> tensor<2x4x6x6xbf16>
// BF16-NEXT: %[[R:.*]] = graph.relu %[[Y]] : tensor<2x4x6x6xbf16>
// BF16-NEXT: %[[N:.*]], %[[NM:.*]], %{{.*}} = graph.batch_norm_training %[[R]], %arg3, %arg4, %arg5, %arg6 {{.*}} : (tensor<2x4x6x6xbf16>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x6x6xbf16>, tensor<4xf32>, tensor<4xf32>)
// BF16-NEXT: %[[P:.*]] = graph.max_pool %[[N]] {{.*}} -> tensor<2x4x3x3xbf16>
// BF16-NEXT: %[[F:.*]] = graph.reshape %[[P]] {{.*}} -> tensor<2x36xbf16>
// BF16-NEXT: %[[Y2:.*]] = graph.conv %[[X]], %[[W]] {{.*}} -> tensor<2x4x6x6xbf16>
// BF16-NEXT: %[[Y2F:.*]] = graph.reshape %[[Y2]] {{.*}} -> tensor<2x144xbf16>
// BF16-NEXT: %[[CAT:.*]] = graph.concat %[[F]], %[[Y2F]] {{.*}} -> tensor<2x180xbf16>
// BF16-NEXT: %[[FW:.*]] = graph.cast %arg7 {to = bf16}
// BF16-NEXT: %[[O:.*]] = graph.gemm %[[CAT]], %[[FW]] {{.*}} -> tensor<2x10xbf16>
// BF16-NEXT: %[[O32:.*]] = graph.cast %[[O]] {to = f32}
// BF16-NEXT: return %[[O32]], %[[NM]] : tensor<2x10xf32>, tensor<4xf32>
// Without low-precision products (f16 on CPU): the convolution reads its
// operands rounded to f16 and widened, computes in f32, and the ReLU reads
// its result rounded to f16.
// EMUL-LABEL: func.func @cnn
// EMUL-NEXT: %[[X16:.*]] = graph.cast %arg0 {to = f16}
// EMUL-NEXT: %[[X:.*]] = graph.cast %[[X16]] {to = f32}
// EMUL-NEXT: %[[W16:.*]] = graph.cast %arg1 {to = f16}
// EMUL-NEXT: %[[W:.*]] = graph.cast %[[W16]] {to = f32}
// EMUL-NEXT: %[[B16:.*]] = graph.cast %arg2 {to = f16}
// EMUL-NEXT: %[[B:.*]] = graph.cast %[[B16]] {to = f32}
// EMUL-NEXT: %[[Y:.*]] = graph.conv %[[X]], %[[W]], %[[B]] {{.*}} -> tensor<2x4x6x6xf32>
// EMUL-NEXT: %[[Y16:.*]] = graph.cast %[[Y]] {to = f16}
// EMUL-NEXT: graph.relu %[[Y16]] : tensor<2x4x6x6xf16>
// bf16 storage (products=f32, AVX2 CPUs): products read the f32 input and
// weights as they are and their results are stored rounded to bf16 for
// the ops that follow; the gemm widens its bf16 operand, and its result,
// which only the return reads, stays f32.
// STORE-LABEL: func.func @cnn
// STORE-NEXT: %[[Y:.*]] = graph.conv %arg0, %arg1, %arg2 {{.*}} -> tensor<2x4x6x6xf32>
// STORE-NEXT: %[[Y16:.*]] = graph.cast %[[Y]] {to = bf16}
// STORE-NEXT: %[[R:.*]] = graph.relu %[[Y16]] : tensor<2x4x6x6xbf16>
// STORE-NEXT: %[[N:.*]], %{{.*}}, %{{.*}} = graph.batch_norm_training %[[R]], %arg3, %arg4, %arg5, %arg6 {{.*}} -> (tensor<2x4x6x6xbf16>, tensor<4xf32>, tensor<4xf32>)
// STORE-NEXT: graph.max_pool %[[N]] {{.*}} -> tensor<2x4x3x3xbf16>
// STORE-NEXT: graph.reshape {{.*}} -> tensor<2x36xbf16>
// STORE-NEXT: %[[Y2:.*]] = graph.conv %arg0, %arg1 {{.*}} -> tensor<2x4x6x6xf32>
// STORE-NEXT: graph.cast %[[Y2]] {to = bf16}
// STORE-NEXT: graph.reshape {{.*}} -> tensor<2x144xbf16>
// STORE-NEXT: %[[CAT:.*]] = graph.concat {{.*}} -> tensor<2x180xbf16>
// STORE-NEXT: %[[C32:.*]] = graph.cast %[[CAT]] {to = f32}
// STORE-NEXT: %[[O:.*]] = graph.gemm %[[C32]], %arg7 {{.*}} -> tensor<2x10xf32>
// STORE-NEXT: return %[[O]], %{{.*}} : tensor<2x10xf32>, tensor<4xf32>
// FP16-LABEL: func.func @cnn
// FP16: graph.conv {{.*}} -> tensor<2x4x6x6xf16>
// FP16: graph.batch_norm_training {{.*}} : (tensor<2x4x6x6xf16>, tensor<4xf32>,
// FP16: graph.gemm {{.*}} -> tensor<2x10xf16>
func.func @cnn(%x: tensor<2x1x8x8xf32>, %w: tensor<4x1x3x3xf32>, %b: tensor<4xf32>, %s: tensor<4xf32>, %t: tensor<4xf32>, %m: tensor<4xf32>, %v: tensor<4xf32>, %fw: tensor<10x180xf32>) -> (tensor<2x10xf32>, tensor<4xf32>) {
  %y = graph.conv %x, %w, %b {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<2x1x8x8xf32>, tensor<4x1x3x3xf32>, tensor<4xf32>) -> tensor<2x4x6x6xf32>
  %r = graph.relu %y : tensor<2x4x6x6xf32>
  %n, %nm, %nv = graph.batch_norm_training %r, %s, %t, %m, %v {epsilon = 1.0e-5 : f64, momentum = 0.9 : f64} : (tensor<2x4x6x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x6x6xf32>, tensor<4xf32>, tensor<4xf32>)
  %p = graph.max_pool %n {ceil_mode = false, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<2x4x6x6xf32>) -> tensor<2x4x3x3xf32>
  %f = graph.reshape %p {shape = array<i64: 0, -1>} : (tensor<2x4x3x3xf32>) -> tensor<2x36xf32>
  %y2 = graph.conv %x, %w {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<2x1x8x8xf32>, tensor<4x1x3x3xf32>) -> tensor<2x4x6x6xf32>
  %y2f = graph.reshape %y2 {shape = array<i64: 0, -1>} : (tensor<2x4x6x6xf32>) -> tensor<2x144xf32>
  %c = graph.concat %f, %y2f {axis = 1 : i64} : (tensor<2x36xf32>, tensor<2x144xf32>) -> tensor<2x180xf32>
  %o = graph.gemm %c, %fw {trans_b = true} : (tensor<2x180xf32>, tensor<10x180xf32>) -> tensor<2x10xf32>
  return %o, %nm : tensor<2x10xf32>, tensor<4xf32>
}

// -----

// bf16 storage: a weight gradient transposed for its update (the
// Transformer's in-projection) reaches no op that computes low, so it
// stays f32, transposed in f32 (it was rounded to bf16 for the transpose).
// STORE-LABEL: func.func @weight_gradient_transposed
// STORE: %[[G:.*]] = graph.gemm %arg0, %arg1 {trans_a = true} : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<3x4xf32>
// STORE-NEXT: %[[T:.*]] = graph.transpose %[[G]] {perm = array<i64: 1, 0>} : (tensor<3x4xf32>) -> tensor<4x3xf32>
// STORE-NEXT: return %[[T]]
func.func @weight_gradient_transposed(%x: tensor<2x3xf32>, %dy: tensor<2x4xf32>) -> tensor<4x3xf32> {
  %g = graph.gemm %x, %dy {trans_a = true} : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<3x4xf32>
  %t = graph.transpose %g {perm = array<i64: 1, 0>} : (tensor<3x4xf32>) -> tensor<4x3xf32>
  return %t : tensor<4x3xf32>
}

// -----

// Cancelled casts: the model's own bf16 -> f32 widening is undone by
// using its bf16 source for the product (no third cast); a follow op with
// f32 operands only stays f32; softmax (CastFp32) casts its low operand up.
// BF16-LABEL: func.func @cancel
// BF16-NEXT: %[[H:.*]] = graph.cast %arg0 {to = bf16}
// BF16-NEXT: %[[H32:.*]] = graph.cast %[[H]] {to = f32}
// BF16-NEXT: %[[E:.*]] = graph.add %[[H32]], %[[H32]] : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
// BF16-NEXT: %[[W:.*]] = graph.cast %arg1 {to = bf16}
// BF16-NEXT: %[[M:.*]] = graph.matmul %[[H]], %[[W]] : (tensor<2x4xbf16>, tensor<4x4xbf16>) -> tensor<2x4xbf16>
// BF16-NEXT: %[[M32:.*]] = graph.cast %[[M]] {to = f32}
// BF16-NEXT: %[[S:.*]] = graph.softmax %[[M32]] {axis = 1 : i64} : tensor<2x4xf32>
// BF16-NEXT: return %[[S]], %[[E]]
func.func @cancel(%x: tensor<2x4xf32>, %w: tensor<4x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
  %h = graph.cast %x {to = bf16} : (tensor<2x4xf32>) -> tensor<2x4xbf16>
  %h32 = graph.cast %h {to = f32} : (tensor<2x4xbf16>) -> tensor<2x4xf32>
  %e = graph.add %h32, %h32 : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %m = graph.matmul %h32, %w : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %s = graph.softmax %m {axis = 1 : i64} : tensor<2x4xf32>
  return %s, %e : tensor<2x4xf32>, tensor<2x4xf32>
}

