// Uses mutagrad from another Bazel workspace: a write through a view, a backward pass, a step.
#include <iostream>

#include "mutagrad.h"
#include "optim/optim.h"

using namespace mutagrad;

int main() {
  std::cout << "mutagrad " << version() << "\n";
  Tensor x = arange(6, kFloat64).view({2, 3}).requires_grad_();
  Tensor y = (x * x).sum();
  y.backward();
  std::cout << "x.grad = " << x.grad() << "\n";

  optim::SGD opt({x}, optim::SGDOptions(0.1));
  opt.step();  // x -= 0.1 * 2x, in place: one version bump
  std::cout << "after one SGD step, x.version() = " << x.version() << "\n";
  return x.version() == 1 ? 0 : 1;
}
