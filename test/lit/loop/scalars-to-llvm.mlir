// --trainc-scalars-to-llvm: affine.apply, memref, math, arith, ub, func and
// cf to the LLVM dialect in one conversion; functions take bare pointers.
// RUN: trainc-opt %s --trainc-scalars-to-llvm | FileCheck %s

// A nest function as --trainc-lower-loop-nests and the vector and affine
// lowerings leave it: a row loop in cf, scalar memref accesses, math.
// CHECK: #[[NO_UNROLL:.*]] = #llvm.loop_annotation<unroll = #{{.*}}>
// CHECK: llvm.func @exp_nest0(%[[BEGIN:.*]]: i64, %[[END:.*]]: i64, %[[X:.*]]: !llvm.ptr, %[[Y:.*]]: !llvm.ptr)
// The pointers become memref descriptors for the accesses (folded later).
// CHECK-DAG: llvm.insertvalue %[[X]], %{{.*}}[1]
// CHECK-DAG: llvm.insertvalue %[[Y]], %{{.*}}[1]
// CHECK: llvm.br ^[[HEAD:.*]](%[[BEGIN]] : i64)
// CHECK: ^[[HEAD]](%[[I:.*]]: i64):
// CHECK: %[[MORE:.*]] = llvm.icmp "slt" %[[I]], %[[END]] : i64
// CHECK: llvm.cond_br %[[MORE]], ^[[BODY:.*]], ^[[EXIT:.*]]
// CHECK: ^[[BODY]]:
// CHECK: %[[IN:.*]] = llvm.getelementptr inbounds|nuw %{{.*}}[%[[I]]] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK: %[[A:.*]] = llvm.load %[[IN]] : !llvm.ptr -> f32
// CHECK: %[[E:.*]] = llvm.intr.exp(%[[A]]) : (f32) -> f32
// CHECK: %[[S:.*]] = llvm.fmul %[[E]], %{{.*}} : f32
// CHECK: %[[OUT:.*]] = llvm.getelementptr inbounds|nuw %{{.*}}[%[[I]]] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK: llvm.store %[[S]], %[[OUT]] : f32, !llvm.ptr
// CHECK: llvm.br ^[[HEAD]](%{{.*}} : i64) {loop_annotation = #[[NO_UNROLL]]}
// CHECK: ^[[EXIT]]:
// CHECK: llvm.return
// CHECK-NOT: memref.
// CHECK-NOT: arith.
// CHECK-NOT: cf.
func.func @exp_nest0(%begin: index, %end: index, %x: memref<100xf32>, %y: memref<100xf32>) {
  %half = arith.constant 0.5 : f32
  %one = arith.constant 1 : index
  cf.br ^head(%begin : index)
^head(%i: index):
  %more = arith.cmpi slt, %i, %end : index
  cf.cond_br %more, ^body, ^exit
^body:
  %a = memref.load %x[%i] : memref<100xf32>
  %e = math.exp %a : f32
  %s = arith.mulf %e, %half : f32
  memref.store %s, %y[%i] : memref<100xf32>
  %next = arith.addi %i, %one : index
  cf.br ^head(%next : index) {loop_annotation = #llvm.loop_annotation<unroll = <disable = true>>}
^exit:
  return
}

// ub.poison (a vectorized tile's padding value), cf.assert and the
// affine.apply of a view's offset.
// CHECK-LABEL: llvm.func @checked(
// CHECK: llvm.mlir.poison : f32
// CHECK: %[[ROW:.*]] = llvm.mul %{{.*}}, %{{.*}} overflow<nsw> : i64
// CHECK: %[[AT:.*]] = llvm.add %[[ROW]], %{{.*}} : i64
// CHECK: llvm.cond_br %{{.*}}, ^[[OK:.*]], ^[[FAIL:.*]]
// CHECK: ^[[OK]]:
// CHECK: llvm.getelementptr inbounds|nuw %{{.*}}[%[[AT]]]
// CHECK: ^[[FAIL]]:
// CHECK: llvm.call @abort()
func.func @checked(%flag: i1, %x: memref<4xf32>, %i: index, %j: index) {
  %p = ub.poison : f32
  %offset = affine.apply affine_map<()[s0, s1] -> (s0 * 64 + s1)>()[%i, %j]
  cf.assert %flag, "bad"
  memref.store %p, %x[%offset] : memref<4xf32>
  return
}
