// An optimizer step as a pure program (docs/functionalization.md): SGD with momentum and weight
// decay on flat parameters (one buffer; the weight and the bias are views of it, as fused
// optimizers keep them), written with in-place ops. The example captures it, prints it and its
// functional form, the alias/mutation report and verify's verdict, and writes the side-by-side
// picture (step.svg) and its DOT text (step.dot) into the folder given (default: .).
//
//   ./bazelw run //examples:functionalize_step -- "$PWD"
#include <fstream>
#include <iostream>

#include "func/func.h"
#include "mutagrad.h"

using namespace mutagrad;

// in: flat parameters [8] (weight [2, 3], then bias [2]), their gradient [8], the momentum [8].
std::vector<Tensor> sgd_step(const std::vector<Tensor>& in) {
  Tensor flat = in[0];
  Tensor grad = in[1];
  Tensor momentum = in[2];
  Tensor weight = flat.slice(0, 0, 6).view({2, 3});
  Tensor bias = flat.slice(0, 6, 8);
  grad.slice(0, 0, 6).view({2, 3}).add_(weight * 0.01);  // weight decay, the weight only
  momentum.mul_(0.9).add_(grad);
  flat.sub_(momentum * 0.1);
  return {weight, bias};  // views of the updated parameters
}

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : ".";
  const std::vector<Tensor> inputs{
      from_vector<float>({0.5f, -1.0f, 0.25f, 2.0f, -0.5f, 1.5f, 0.1f, -0.2f}, {8}),
      from_vector<float>({0.1f, 0.2f, -0.3f, 0.4f, 0.0f, -0.1f, 1.0f, -1.0f}, {8}),
      from_vector<float>({0.0f, 0.5f, 0.5f, -0.5f, 0.25f, 0.0f, 0.1f, 0.2f}, {8})};
  try {
    func::Graph program =
        func::capture(sgd_step, {inputs[0].clone(), inputs[1].clone(), inputs[2].clone()});
    func::Graph pure = func::functionalize(program);
    std::cout << "# The program\n"
              << program.code() << "\n# Its functional form\n"
              << pure.code() << "\n# Writes and aliases\n"
              << func::alias_report(program).text();
    const func::VerifyResult verdict = func::verify(sgd_step, inputs);
    std::cout << "\n# Verify\n" << verdict.summary();

    const std::string dot = func::side_by_side_dot(program, pure);
    std::ofstream(dir + "/step.dot") << dot;
    func::render_side_by_side(program, pure, dir + "/step.svg");
    std::cout << "\nwrote " << dir << "/step.svg and " << dir << "/step.dot\n";
    return verdict.ok() ? 0 : 1;
  } catch (const Error& e) {
    std::cerr << "functionalize_step: " << e.what() << "\n";
    return 1;
  }
}
