#include "tinylm/autograd/graph.h"

#include <cmath>

#include "tinylm/core/error.h"
#include "tinylm/core/py_math.h"

namespace tinylm::autograd {

NodeId Graph::push(double data, NodeId c0, double l0, NodeId c1, double l1) {
  check(nodes_.size() < kNone, "[autograd] graph exceeds 2^32-1 nodes");
  nodes_.push_back(Node{data, 0.0, {l0, l1}, {c0, c1}});
  return static_cast<NodeId>(nodes_.size() - 1);
}

NodeId Graph::leaf(double data) { return push(data, kNone, 0.0); }

NodeId Graph::add(NodeId a, NodeId b) {
  return push(nodes_[a].data + nodes_[b].data, a, 1.0, b, 1.0);
}

NodeId Graph::mul(NodeId a, NodeId b) {
  const double da = nodes_[a].data, db = nodes_[b].data;
  return push(da * db, a, db, b, da);
}

NodeId Graph::pow(NodeId a, double e) {
  const double d = nodes_[a].data;
  return push(py_pow(d, e), a, e * py_pow(d, e - 1.0));
}

NodeId Graph::log(NodeId a) {
  const double d = nodes_[a].data;
  return push(std::log(d), a, 1.0 / d);
}

NodeId Graph::exp(NodeId a) {
  const double e = std::exp(nodes_[a].data);
  return push(e, a, e);
}

NodeId Graph::relu(NodeId a) {
  const double d = nodes_[a].data;
  return push(d > 0.0 ? d : 0.0, a, d > 0.0 ? 1.0 : 0.0);
}

NodeId Graph::add(NodeId a, double c) { return push(nodes_[a].data + c, a, 1.0); }

NodeId Graph::mul(NodeId a, double c) { return push(nodes_[a].data * c, a, c); }

void Graph::backward(NodeId root) {
  // Iterative depth-first search producing exactly the post-order of microgpt.py's recursive
  // build_topo: children in order, each node appended after all of its children.
  if (visit_mark_.size() < nodes_.size()) visit_mark_.resize(nodes_.size(), 0);
  if (++epoch_ == 0) {
    std::fill(visit_mark_.begin(), visit_mark_.end(), 0);
    epoch_ = 1;
  }
  topo_.clear();
  stack_.clear();
  visit_mark_[root] = epoch_;
  stack_.push_back({root, 0});
  while (!stack_.empty()) {
    auto& [id, next] = stack_.back();
    if (next < 2) {
      const NodeId c = nodes_[id].child[next++];
      if (c != kNone && visit_mark_[c] != epoch_) {
        visit_mark_[c] = epoch_;
        stack_.push_back({c, 0});
      }
      continue;
    }
    topo_.push_back(id);
    stack_.pop_back();
  }
  nodes_[root].grad = 1.0;
  for (auto it = topo_.rbegin(); it != topo_.rend(); ++it) {
    const Node& v = nodes_[*it];
    for (int k = 0; k < 2; ++k) {
      if (v.child[k] != kNone) nodes_[v.child[k]].grad += v.local[k] * v.grad;
    }
  }
}

void Graph::truncate(size_t n) {
  check(n <= nodes_.size(), "[autograd] truncate past the end");
  nodes_.resize(n);
}

}  // namespace tinylm::autograd
