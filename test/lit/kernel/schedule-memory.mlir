// --trainc-schedule-memory: launches reordered to lower the peak of live
// arena bytes, never past a launch that writes a buffer they use or uses a
// buffer they write (through views); kept only if the peak is lower.
// RUN: trainc-opt %s --trainc-schedule-memory | FileCheck %s
// RUN: trainc-opt %s --trainc-schedule-memory --trainc-plan-memory | FileCheck %s --check-prefix=ARENA

// A weight gradient of 1 KiB is computed while the 256-byte activation %a
// is still live (peak 1280 bytes). %a's chain, which frees nothing the
// gradient uses, sinks after the gradient and its update (peak 1024).
// CHECK-LABEL: func.func @reordered
// CHECK: %[[G:[0-9]+]] = kernel.alloc : memref<256xf32>
// CHECK-NEXT: kernel.launch "graph.conv_backward_weight"({{.*}}) -> (%[[G]])
// CHECK-NEXT: kernel.launch "graph.sgd_update"
// CHECK-NEXT: kernel.alloc : memref<64xf32>
// CHECK-NEXT: kernel.launch "graph.relu"(%arg0)
// CHECK-NEXT: kernel.alloc : memref<64xf32>
// CHECK-NEXT: kernel.launch "graph.mul"
// CHECK-NEXT: kernel.launch "graph.add"
// CHECK-NEXT: return
// ARENA-LABEL: func.func @reordered
// ARENA-SAME: kernel.arena_size = 1024
func.func @reordered(%x: memref<64xf32>, %w: memref<256xf32>,
                     %m: memref<256xf32>, %lr: memref<f32>,
                     %out: memref<64xf32>) {
  %a = kernel.alloc : memref<64xf32>
  kernel.launch "graph.relu"(%x) -> (%a) {options = {}} : (memref<64xf32>) -> memref<64xf32>
  %g = kernel.alloc : memref<256xf32>
  kernel.launch "graph.conv_backward_weight"(%x, %x) -> (%g) {options = {}} : (memref<64xf32>, memref<64xf32>) -> memref<256xf32>
  kernel.launch "graph.sgd_update"(%w, %g, %lr, %m) -> (%w, %m) {options = {}} : (memref<256xf32>, memref<256xf32>, memref<f32>, memref<256xf32>) -> (memref<256xf32>, memref<256xf32>)
  %b = kernel.alloc : memref<64xf32>
  kernel.launch "graph.mul"(%a, %x) -> (%b) {options = {}} : (memref<64xf32>, memref<64xf32>) -> memref<64xf32>
  kernel.launch "graph.add"(%b, %x) -> (%out) {options = {}} : (memref<64xf32>, memref<64xf32>) -> memref<64xf32>
  return
}

// %a's last reader also writes %x, which %big's producer reads: that
// write cannot move before the read (nor free %a early); %a's producer,
// which frees nothing, sinks after %big's chain instead (peak 1280 ->
// 1024 bytes).
// CHECK-LABEL: func.func @write_after_read
// CHECK: kernel.alloc
// CHECK-NEXT: kernel.launch "graph.expand"
// CHECK-NEXT: kernel.launch "graph.relu"(%0)
// CHECK-NEXT: kernel.alloc
// CHECK-NEXT: kernel.launch "graph.relu"(%arg0)
// CHECK-NEXT: kernel.launch "graph.relu"({{.*}}) -> (%arg0)
// CHECK-NEXT: return
func.func @write_after_read(%x: memref<64xf32>, %out: memref<256xf32>) {
  %a = kernel.alloc : memref<64xf32>
  kernel.launch "graph.relu"(%x) -> (%a) {options = {}} : (memref<64xf32>) -> memref<64xf32>
  %big = kernel.alloc : memref<256xf32>
  kernel.launch "graph.expand"(%x) -> (%big) {options = {}} : (memref<64xf32>) -> memref<256xf32>
  kernel.launch "graph.relu"(%a) -> (%x) {options = {}} : (memref<64xf32>) -> memref<64xf32>
  kernel.launch "graph.relu"(%big) -> (%out) {options = {}} : (memref<256xf32>) -> memref<256xf32>
  return
}

// As above, the write going through a view of %x.
// CHECK-LABEL: func.func @through_view
// CHECK: kernel.alloc
// CHECK-NEXT: kernel.launch "graph.expand"
// CHECK-NEXT: kernel.launch "graph.relu"(%0)
// CHECK-NEXT: kernel.alloc
// CHECK-NEXT: kernel.launch "graph.relu"(%arg0)
// CHECK-NEXT: kernel.view
// CHECK-NEXT: kernel.view
// CHECK-NEXT: kernel.launch "graph.relu"
// CHECK-NEXT: return
func.func @through_view(%x: memref<64xf32>, %out: memref<256xf32>) {
  %a = kernel.alloc : memref<64xf32>
  kernel.launch "graph.relu"(%x) -> (%a) {options = {}} : (memref<64xf32>) -> memref<64xf32>
  %big = kernel.alloc : memref<256xf32>
  kernel.launch "graph.expand"(%x) -> (%big) {options = {}} : (memref<64xf32>) -> memref<256xf32>
  %xv = kernel.view %x : memref<64xf32> to memref<8x8xf32>
  %av = kernel.view %a : memref<64xf32> to memref<8x8xf32>
  kernel.launch "graph.relu"(%av) -> (%xv) {options = {}} : (memref<8x8xf32>) -> memref<8x8xf32>
  kernel.launch "graph.relu"(%big) -> (%out) {options = {}} : (memref<256xf32>) -> memref<256xf32>
  return
}

// Writing another buffer, the last reader of %a runs before %big's
// producer (peak 1024 bytes instead of 1280).
// CHECK-LABEL: func.func @independent
// CHECK: kernel.launch "graph.relu"(%arg0)
// CHECK-NEXT: kernel.launch "graph.relu"({{.*}}) -> (%arg1)
// CHECK-NEXT: kernel.alloc
// CHECK-NEXT: kernel.launch "graph.expand"
// CHECK-NEXT: kernel.launch "graph.relu"
// CHECK-NEXT: return
func.func @independent(%x: memref<64xf32>, %y: memref<64xf32>,
                       %out: memref<256xf32>) {
  %a = kernel.alloc : memref<64xf32>
  kernel.launch "graph.relu"(%x) -> (%a) {options = {}} : (memref<64xf32>) -> memref<64xf32>
  %big = kernel.alloc : memref<256xf32>
  kernel.launch "graph.expand"(%x) -> (%big) {options = {}} : (memref<64xf32>) -> memref<256xf32>
  kernel.launch "graph.relu"(%a) -> (%y) {options = {}} : (memref<64xf32>) -> memref<64xf32>
  kernel.launch "graph.relu"(%big) -> (%out) {options = {}} : (memref<256xf32>) -> memref<256xf32>
  return
}

// A launch that frees nothing runs just before its first reader: %a and
// its widening %c (both read after the update) move past the weight
// gradient and its update (peak 1536 -> 1024 bytes). The greedy order
// alone keeps them first.
// CHECK-LABEL: func.func @sunk
// CHECK: kernel.alloc : memref<256xf32>
// CHECK-NEXT: kernel.launch "graph.conv_backward_weight"
// CHECK-NEXT: kernel.launch "graph.sgd_update"
// CHECK-NEXT: kernel.alloc : memref<64xf32>
// CHECK-NEXT: kernel.launch "graph.relu"(%arg0)
// CHECK-NEXT: kernel.alloc : memref<64xf32>
// CHECK-NEXT: kernel.launch "graph.exp"
// CHECK-NEXT: kernel.launch "graph.add"
// CHECK-NEXT: kernel.launch "graph.mul"
// CHECK-NEXT: return
// ARENA-LABEL: func.func @sunk
// ARENA-SAME: kernel.arena_size = 1024
func.func @sunk(%x: memref<64xf32>, %gw: memref<256xf32>,
                %m: memref<256xf32>, %lr: memref<f32>,
                %out2: memref<64xf32>, %out3: memref<64xf32>) {
  %a = kernel.alloc : memref<64xf32>
  kernel.launch "graph.relu"(%x) -> (%a) {options = {}} : (memref<64xf32>) -> memref<64xf32>
  %c = kernel.alloc : memref<64xf32>
  kernel.launch "graph.exp"(%a) -> (%c) {options = {}} : (memref<64xf32>) -> memref<64xf32>
  %g = kernel.alloc : memref<256xf32>
  kernel.launch "graph.conv_backward_weight"(%x, %x) -> (%g) {options = {}} : (memref<64xf32>, memref<64xf32>) -> memref<256xf32>
  kernel.launch "graph.sgd_update"(%gw, %g, %lr, %m) -> (%gw, %m) {options = {}} : (memref<256xf32>, memref<256xf32>, memref<f32>, memref<256xf32>) -> (memref<256xf32>, memref<256xf32>)
  kernel.launch "graph.add"(%c, %gw) -> (%out2) {options = {}} : (memref<64xf32>, memref<256xf32>) -> memref<64xf32>
  kernel.launch "graph.mul"(%a, %gw) -> (%out3) {options = {}} : (memref<64xf32>, memref<256xf32>) -> memref<64xf32>
  return
}
