#include <gtest/gtest.h>

#include <cmath>

#include "tinylm/autograd/graph.h"

namespace tinylm::autograd {
namespace TINYLM_TEST_LOCAL {

TEST(Autograd, ProductPlusOperand) {
  // f(a, b) = a*b + a at (2, 3): value 8, df/da = b + 1 = 4, df/db = a = 2.
  Graph g;
  const NodeId a = g.leaf(2.0), b = g.leaf(3.0);
  const NodeId f = g.add(g.mul(a, b), a);
  g.backward(f);
  EXPECT_EQ(g.data(f), 8.0);
  EXPECT_EQ(g.grad(a), 4.0);
  EXPECT_EQ(g.grad(b), 2.0);
}

TEST(Autograd, UnaryOpsHaveTheirDerivatives) {
  Graph g;
  const NodeId x = g.leaf(1.7);
  const NodeId y = g.add(g.add(g.log(x), g.exp(x)), g.add(g.relu(x), g.pow(x, -0.5)));
  g.backward(y);
  EXPECT_DOUBLE_EQ(g.data(y), std::log(1.7) + std::exp(1.7) + 1.7 + std::pow(1.7, -0.5));
  EXPECT_DOUBLE_EQ(g.grad(x), 1 / 1.7 + std::exp(1.7) + 1.0 - 0.5 * std::pow(1.7, -1.5));
}

TEST(Autograd, ReluHasZeroGradientBelowZero) {
  Graph g;
  const NodeId x = g.leaf(-0.3);
  const NodeId y = g.relu(x);
  g.backward(y);
  EXPECT_EQ(g.data(y), 0.0);
  EXPECT_EQ(g.grad(x), 0.0);
}

TEST(Autograd, CompositesMatchTheirDefinitions) {
  Graph g;
  const NodeId a = g.leaf(5.0), b = g.leaf(4.0);
  EXPECT_EQ(g.data(g.sub(a, b)), 1.0);
  EXPECT_EQ(g.data(g.div(a, b)), 1.25);
  EXPECT_EQ(g.data(g.neg(a)), -5.0);
  const NodeId q = g.div(a, b);
  g.backward(q);
  EXPECT_DOUBLE_EQ(g.grad(a), 0.25);
  EXPECT_DOUBLE_EQ(g.grad(b), -5.0 / 16.0);
}

TEST(Autograd, SharedNodeAccumulatesFromEveryUse) {
  // x*x has x twice as a child: each use adds x * grad, so d(x*x)/dx = 2x.
  Graph g;
  const NodeId x = g.leaf(3.0);
  const NodeId y = g.mul(g.mul(x, x), x);  // x^3
  g.backward(y);
  EXPECT_EQ(g.grad(x), 27.0);
}

TEST(Autograd, TruncateKeepsLeavesAndDropsTheRest) {
  Graph g;
  const NodeId x = g.leaf(2.0);
  g.mul(x, 3.0);
  EXPECT_EQ(g.size(), 2u);
  g.truncate(1);
  EXPECT_EQ(g.size(), 1u);
  EXPECT_EQ(g.data(x), 2.0);
}

TEST(Autograd, DeepChainDoesNotOverflowTheStack) {
  Graph g;
  NodeId x = g.leaf(1.0);
  const NodeId x0 = x;
  for (int i = 0; i < 1'000'000; ++i) x = g.add(x, 1.0);
  g.backward(x);
  EXPECT_EQ(g.grad(x0), 1.0);
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm::autograd
