// Typed errors and internal checks.
//
// Every user-facing error derives from mutagrad::Error and its message says what was wrong,
// the values involved, what was expected and how to fix it. Internal invariants use
// MG_INTERNAL_ASSERT, which throws InternalError: seeing one is a bug in mutagrad.
//
//   if (dim >= ndim) {
//     throw IndexError(str("select(): dim ", dim, " is out of range for a tensor of ", ndim,
//                          " dimensions; expected a dim in [", -ndim, ", ", ndim - 1, "]"));
//   }
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace mutagrad {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

// An index out of range, too many indices, or index tensors that do not broadcast.
class IndexError : public Error {
  using Error::Error;
};
// An index value outside the range its op accepts: an element of an index tensor (x[idx],
// index_put_, gather, scatter_*, take, put_, index_select, index_add_/copy_/fill_), an integer
// index or select(), a class index (nll_loss). Both an IndexError and (through Error) a
// std::runtime_error, as Python's mutagrad.IndexOutOfRangeError is both an IndexError and a
// RuntimeError: torch raises IndexError for some of these ops and RuntimeError for others
// (docs/indexing.md, "Errors").
class IndexOutOfRangeError : public IndexError {
  using IndexError::IndexError;
};
// Shapes that do not match, broadcast, or fit a view.
class ShapeError : public Error {
  using Error::Error;
};
// A dtype that an op does not accept, or a cast it refuses.
class DTypeError : public Error {
  using Error::Error;
};
// Tensors on different devices, or an op the device's backend does not implement.
class DeviceError : public Error {
  using Error::Error;
};
// An argument outside its allowed range (a negative size, a zero step, ...).
class ValueError : public Error {
  using Error::Error;
};
// A read or write of a tensor that an unfinished asynchronous writer (a collective started
// with an *_async_ call of mutagrad::distributed) still writes: wait() on its Work first.
class PendingWriteError : public Error {
  using Error::Error;
};
// A broken internal invariant: a bug in mutagrad, never the caller's fault.
class InternalError : public Error {
  using Error::Error;
};

// Concatenates streamable values into a string: str("size ", n, " at dim ", d).
template <typename... Args>
std::string str(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

namespace detail {
[[noreturn]] void internal_assert_fail(const char* cond, const char* file, int line,
                                       const std::string& msg);
}  // namespace detail

}  // namespace mutagrad

#define MG_INTERNAL_ASSERT(cond, ...)                                         \
  do {                                                                        \
    if (__builtin_expect(!(cond), 0)) {                                       \
      ::mutagrad::detail::internal_assert_fail(#cond, __FILE__, __LINE__,     \
                                               ::mutagrad::str(__VA_ARGS__)); \
    }                                                                         \
  } while (0)
