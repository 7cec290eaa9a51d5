#pragma once
// A scalar reverse-mode autograd engine: microgpt.py's Value, without a heap object per node.
// Nodes live in one growing array and are named by index. Each op stores its data, at most
// two children and the local gradient for each child, exactly as microgpt.py's Value does,
// and backward() walks the same depth-first topological order in reverse, so a computation
// written with the same operations in the same order reproduces Python's floats bit for bit.
//
// This engine is for teaching and for bit-exact parity; models train through explicit
// kernels (see models/microgpt/tensor_engine.cpp).
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace tinylm::autograd {

using NodeId = uint32_t;

class Graph {
 public:
  // A leaf: a parameter or an input. Leaves have no children.
  NodeId leaf(double data);

  // The primitive operations of microgpt.py's Value.
  NodeId add(NodeId a, NodeId b);         // a + b
  NodeId mul(NodeId a, NodeId b);         // a * b
  NodeId pow(NodeId a, double exponent);  // a ** exponent
  NodeId log(NodeId a);
  NodeId exp(NodeId a);
  NodeId relu(NodeId a);
  // Operations with a Python number on one side. Python wraps the number in a fresh leaf
  // Value; a childless leaf never changes the visiting order of other nodes, so it is left
  // out and only the local gradient of the Value operand is kept.
  NodeId add(NodeId a, double c);  // a + c
  NodeId mul(NodeId a, double c);  // a * c

  // Composite operations, expressed through the primitives the way microgpt.py does.
  NodeId neg(NodeId a) { return mul(a, -1.0); }
  NodeId sub(NodeId a, NodeId b) { return add(a, neg(b)); }
  NodeId div(NodeId a, NodeId b) { return mul(a, pow(b, -1.0)); }

  double data(NodeId n) const { return nodes_[n].data; }
  double grad(NodeId n) const { return nodes_[n].grad; }
  void set_data(NodeId n, double v) { nodes_[n].data = v; }
  void set_grad(NodeId n, double g) { nodes_[n].grad = g; }
  size_t size() const { return nodes_.size(); }

  // Sets root.grad = 1 and propagates, in reverse depth-first post-order from root,
  // child.grad += local_grad * node.grad. Gradients accumulate across calls.
  void backward(NodeId root);

  // Drops every node created after the first `n` (keeps parameters, frees a step's graph)
  // without releasing memory, so the next step reuses it.
  void truncate(size_t n);
  void reserve(size_t n) { nodes_.reserve(n); }

 private:
  static constexpr NodeId kNone = UINT32_MAX;
  struct Node {
    double data;
    double grad;
    double local[2];
    NodeId child[2];
  };
  NodeId push(double data, NodeId c0, double l0, NodeId c1 = kNone, double l1 = 0.0);

  std::vector<Node> nodes_;
  // Scratch for backward(), kept to avoid reallocating every step.
  std::vector<NodeId> topo_;
  std::vector<uint32_t> visit_mark_;
  std::vector<std::pair<NodeId, uint8_t>> stack_;
  uint32_t epoch_ = 0;
};

}  // namespace tinylm::autograd
