// The printer's options (torch.set_printoptions): precision, summarization, line width and
// scientific notation, read by Tensor::to_string (tensor/print.cc). Process-wide, as torch's.
//
//   set_print_options(PrintOptions{.precision = 2});   // tensor([0.33, 0.67])
#pragma once

#include <cstdint>
#include <optional>

namespace mutagrad {

struct PrintOptions {
  int precision = 4;             // digits after the point
  int64_t threshold = 1000;      // more elements than this are summarized
  int64_t edgeitems = 3;         // items kept at each end of a summarized dim
  int linewidth = 80;            // characters per line
  std::optional<bool> sci_mode;  // nullopt: chosen from the values, as torch
};

PrintOptions print_options();
// ValueError for a negative precision, edgeitems or threshold, or a linewidth below 1.
void set_print_options(const PrintOptions& options);

}  // namespace mutagrad
