// The error of tensor/inference_mode.h (out of line: version_counter.h stays light).
#include "tensor/inference_mode.h"

#include "tensor/error.h"

namespace mutagrad::detail {

void throw_inference_tensor_write() {
  // torch's text, word for word (its sentences run together).
  throw Error(
      "Inplace update to inference tensor outside InferenceMode is not allowed.You can make a "
      "clone to get a normal tensor before doing inplace update.See "
      "https://github.com/pytorch/rfcs/pull/17 for more details.");
}

}  // namespace mutagrad::detail
