// The C++ caller of a forward op, for anomaly mode in programs without a site provider.
//
//   StackTrace st = StackTrace::capture();      // cheap: return addresses only
//   ...
//   std::string who = st.user_frame();          // "build_model(int) (train+0x4f2d0)", later
//
// See Note [Anomaly mode in C++] in autograd/anomaly_mode.h.
#pragma once

#include <cstdint>
#include <string>

namespace mutagrad::autograd {

class StackTrace {
 public:
  static constexpr int kMaxFrames = 32;

  // The return addresses of the calling thread's stack (glibc's backtrace()). No symbol lookup.
  static StackTrace capture();

  // The innermost frame outside the library (see the Note), as "function (binary+0xoffset)",
  // the function demangled from the binary's own symbol table (no debug info or -rdynamic
  // needed); "" when every frame is the library's or none can be named.
  std::string user_frame() const;

  // The public op running at the innermost frames, for a refusal that names it ("cumsum"):
  // walking outwards through the library's frames (past the caller's own, mutagrad::func::),
  // the outermost one named mutagrad::NAME(...) or mutagrad::Tensor::NAME(...) before the
  // program's code (a frame outside the library, mutagrad::func:: or the Python bindings;
  // a C++ program's own lambdas match no op name). "" when none is named (an op inlined or
  // tail-called away, a frame the unwinder cannot follow, a stripped binary).
  std::string public_op() const;

  int size() const { return size_; }

 private:
  void* frames_[kMaxFrames] = {};
  int size_ = 0;
};

namespace detail {
// The demangled name of the function containing `address` (from dladdr, else the ELF symbol
// table of its binary) and its binary's path and offset; false when none is found.
bool symbolize(const void* address, std::string& function, std::string& binary, uintptr_t& offset);
// Whether a demangled function name is the library's (skipped by StackTrace::user_frame()).
bool is_library_frame(const std::string& function);
// "cumsum" for "mutagrad::cumsum(...)" or "mutagrad::Tensor::cumsum(...) const"; "" for any
// other name (a nested namespace, a class, a template).
std::string public_op_name(const std::string& function);
}  // namespace detail

}  // namespace mutagrad::autograd
