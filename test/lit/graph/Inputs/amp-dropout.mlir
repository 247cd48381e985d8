// @forward with a dropout on a product's bf16 output under --amp (for
// graph/amp.mlir).
func.func @forward(%x: tensor<2x3xf32> {graph.name = "x", graph.role = "input"}, %w: tensor<3x4xf32> {graph.name = "w", graph.role = "parameter"}) -> tensor<f32> {
  %h = graph.matmul %x, %w : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %d = graph.dropout %h {ratio = 0.5 : f64} : tensor<2x4xf32>
  %s = graph.reduce_sum %d {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x4xf32>) -> tensor<f32>
  return %s : tensor<f32>
}
