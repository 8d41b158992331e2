#include "tensor/error.h"

namespace mutagrad::detail {

void internal_assert_fail(const char* cond, const char* file, int line, const std::string& msg) {
  throw InternalError(str("internal assert failed: ", cond, " at ", file, ":", line,
                          msg.empty() ? "" : ": ", msg,
                          ". This is a bug in mutagrad; please report it with the program that "
                          "triggered it."));
}

}  // namespace mutagrad::detail
