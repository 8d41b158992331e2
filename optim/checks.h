// Internal to optim/: the options checks the optimizers share (torch.optim's "Invalid ..."
// ValueErrors, with the value and what is allowed).
//
//   check_option(ok, "SGD", "momentum", momentum, ">= 0");
#pragma once

#include "tensor/error.h"

namespace mutagrad::optim::detail {

inline void check_option(bool ok, const char* optimizer, const char* option, double value,
                         const char* requirement) {
  if (!ok) {
    throw ValueError(str(optimizer, ": invalid ", option, " value: ", value, "; ", option,
                         " must be ", requirement));
  }
}

}  // namespace mutagrad::optim::detail
