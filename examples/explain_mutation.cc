// explain_mutation: what an in-place write does to a backward graph, shown three ways — a
// picture (stale saved tensors in red, with the line that wrote them), a dry run of backward,
// and a log of every write. The pictures in docs/mutation-semantics.md are made by it:
//
//   ./bazelw run //examples:explain_mutation -- "$PWD/docs/images"
//
// writes safe.svg, stale.svg, snapshot.svg, check.txt and writes.jsonl into that folder, which
// it creates if needed.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "mutagrad.h"

using namespace mutagrad;

namespace {

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  if (!out) throw ValueError("explain_mutation: cannot write " + path + "; pass a writable folder");
  out << text;
}

// The three programs, their pictures and reports in `dir`; 0 when the stale write was found.
int explain(const std::string& dir) {
  autograd::MutationLog log;

  // 1. A safe write into a view of a non-leaf: CopySlices takes over the base's history.
  Tensor a = arange(6, kFloat64).view({2, 3}).requires_grad_();
  Tensor h = a * 2.0;
  h.select(0, 1).mul_(3.0);  // a view of h, written in place: nothing saved goes stale
  Tensor safe = h.sum();
  autograd::render({safe}, dir + "/safe.svg");

  // 2. A stale write: MulBackward0 saved h2 (for h2 * h2), then h2 is written.
  Tensor h2 = a.exp();
  Tensor loss = (h2 * h2).sum();
  log.watch({loss});  // the log names the saved tensors each later write makes stale
  h2.add_(1.0);       // backward would refuse: the picture shows this line in red
  autograd::render({loss}, dir + "/stale.svg");
  const autograd::BackwardCheck check = autograd::check_backward({loss});
  std::ostringstream report;
  report << check;
  write_text(dir + "/check.txt", report.str());
  std::cout << "dry run of backward:\n" << report.str() << "\n";

  // 3. The same program under kSnapshot: the write copies the saved value first.
  Tensor snap_loss;
  {
    autograd::MutationPolicyGuard guard(autograd::MutationPolicy::kSnapshot);
    Tensor h3 = a.exp();
    snap_loss = (h3 * h3).sum();
    h3.add_(1.0);
  }
  autograd::render({snap_loss}, dir + "/snapshot.svg");
  std::cout << "under kSnapshot the dry run is "
            << (autograd::check_backward({snap_loss}).ok() ? "clean" : "NOT clean") << "\n";
  snap_loss.backward();

  log.stop();
  log.write_jsonl(dir + "/writes.jsonl");
  std::cout << log.summary() << "\nwrote safe.svg, stale.svg, snapshot.svg, check.txt and "
            << "writes.jsonl to " << dir << "\n";
  return check.ok() ? 1 : 0;  // the stale write must have been found
}

}  // namespace

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : ".";
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) {
    std::cerr << "explain_mutation: cannot create the folder " << dir << " (" << error.message()
              << "); pass a folder that can be created or written\n";
    return 2;
  }
  try {
    return explain(dir);
  } catch (const std::exception& e) {
    std::cerr << "explain_mutation: " << e.what() << "\n";
    return 2;
  }
}
