// @forward of a dense layer with a bias and a ReLU (for graph/amp.mlir).
func.func @forward(%x: tensor<2x3xf32> {graph.name = "x", graph.role = "input"}, %w: tensor<3x4xf32> {graph.name = "w", graph.role = "parameter"}, %b: tensor<4xf32> {graph.name = "b", graph.role = "parameter"}) -> (tensor<2x4xf32> {graph.name = "y"}) {
  %h = graph.matmul %x, %w : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %a = graph.add %h, %b : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %r = graph.relu %a : tensor<2x4xf32>
  return %r : tensor<2x4xf32>
}
