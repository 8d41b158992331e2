// Tensor printing, as PyTorch 1.13's repr (torch/_tensor_str.py) with its default print options:
// by default precision 4, summarization above 1000 elements with 3 edge items, 80-column
// lines; set_print_options (tensor/print_options.h) changes them.
//
//   tensor([[0., 1., 2.],
//           [3., 4., 5.]], dtype=float64, requires_grad=True)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <mutex>
#include <ostream>
#include <string>
#include <vector>

#include "tensor/native/copy.h"
#include "tensor/native/factories.h"
#include "tensor/print_options.h"
#include "tensor/tensor.h"

namespace mutagrad {
namespace {

// Read once per to_string (set_print_options between two prints takes effect at the next).
// Guarded by a mutex: options are set rarely, from any thread.
std::mutex& options_mutex() {
  static auto* m = new std::mutex();
  return *m;
}
PrintOptions& current_options() {
  static auto* o = new PrintOptions();
  return *o;
}
thread_local PrintOptions opts;  // the options of the print in progress on this thread

// One element, widened: floating dtypes as double (exact for float32), the others as int64.
struct Value {
  double f = 0;
  int64_t i = 0;
};

// Reads elements of a CPU tensor by storage position.
class Reader {
 public:
  explicit Reader(const Tensor& t) : t_(t), floating_(t.is_floating_point()) {
    MG_INTERNAL_ASSERT(t.device().is_cpu(), "printing reads a host copy, got a tensor on ",
                       t.device());
  }
  Value at(int64_t pos) const {
    Value v;
    dispatch_dtype(t_.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      T x = static_cast<const T*>(t_.storage().data())[pos];
      if (floating_) {
        v.f = static_cast<double>(x);
      } else {
        v.i = static_cast<int64_t>(x);
      }
    });
    return v;
  }

 private:
  const Tensor& t_;
  bool floating_;
};

// The indices of a dim of size n that are shown: all, or the edge items when summarizing.
std::vector<int64_t> shown_indices(int64_t n, bool summarize) {
  std::vector<int64_t> out;
  if (summarize && n > 2 * opts.edgeitems) {
    for (int64_t i = 0; i < opts.edgeitems; ++i) out.push_back(i);
    for (int64_t i = n - opts.edgeitems; i < n; ++i) out.push_back(i);
  } else {
    for (int64_t i = 0; i < n; ++i) out.push_back(i);
  }
  return out;
}

// Calls fn(storage position) for every shown element, in row-major order.
template <typename Fn>
void visit_shown(const Tensor& t, int64_t d, int64_t pos, bool summarize, Fn& fn) {
  if (d == t.dim()) {
    fn(pos);
    return;
  }
  for (int64_t i : shown_indices(t.sizes()[d], summarize)) {
    visit_shown(t, d + 1, pos + i * t.strides()[d], summarize, fn);
  }
}

// Python's "{:W.4e}", "{:.4f}" and "{:.0f}" for finite values.
std::string sci_str(double v, int width) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%*.*e", width, opts.precision, v);
  return buf;
}
std::string fixed_str(double v) {
  char buf[512];
  std::snprintf(buf, sizeof(buf), "%.*f", opts.precision, v);
  return buf;
}
std::string integer_str(double v) {
  char buf[512];
  std::snprintf(buf, sizeof(buf), "%.0f", v);
  return buf;
}

// Python's str() of a non-finite float: "nan" (never "-nan"), "inf", "-inf".
std::string nonfinite_str(double v) { return std::isnan(v) ? "nan" : v > 0 ? "inf" : "-inf"; }

std::string pad_left(const std::string& s, int width) {
  int n = static_cast<int>(s.size());
  return n >= width ? s : std::string(static_cast<size_t>(width - n), ' ') + s;
}

// As PyTorch's _Formatter: one format for every element, chosen from the shown values.
class Formatter {
 public:
  Formatter(const Tensor& t, const Reader& reader, bool summarize)
      : floating_(t.is_floating_point()), bool_(t.dtype() == kBool) {
    std::vector<Value> values;
    auto collect = [&](int64_t pos) { values.push_back(reader.at(pos)); };
    visit_shown(t, 0, t.storage_offset(), summarize, collect);
    if (!floating_) {
      for (const Value& v : values) {
        max_width_ = std::max(max_width_, static_cast<int>(int_str(v.i).size()));
      }
      return;
    }
    std::vector<double> nonzero_finite;
    for (const Value& v : values) {
      if (std::isfinite(v.f) && v.f != 0) nonzero_finite.push_back(v.f);
    }
    if (nonzero_finite.empty()) return;
    double min_abs = std::abs(nonzero_finite[0]);
    double max_abs = min_abs;
    for (double v : nonzero_finite) {
      min_abs = std::min(min_abs, std::abs(v));
      max_abs = std::max(max_abs, std::abs(v));
      if (v != std::ceil(v)) int_mode_ = false;
    }
    if (int_mode_) {
      sci_mode_ = max_abs / min_abs > 1000.0 || max_abs > 1.0e8;
    } else {
      sci_mode_ = max_abs / min_abs > 1000.0 || max_abs > 1.0e8 || min_abs < 1.0e-4;
    }
    for (double v : nonzero_finite) {
      size_t w = sci_mode_   ? sci_str(v, 0).size()
                 : int_mode_ ? integer_str(v).size() + 1
                             : fixed_str(v).size();
      max_width_ = std::max(max_width_, static_cast<int>(w));
    }
    if (opts.sci_mode) sci_mode_ = *opts.sci_mode;  // after the widths, as torch's _Formatter
  }

  int width() const { return max_width_; }

  std::string format(const Value& v) const {
    if (!floating_) return pad_left(int_str(v.i), max_width_);
    std::string s;
    if (!std::isfinite(v.f)) {
      s = nonfinite_str(v.f);
    } else if (sci_mode_) {
      s = sci_str(v.f, max_width_);
    } else if (int_mode_) {
      s = integer_str(v.f) + ".";
    } else {
      s = fixed_str(v.f);
    }
    return pad_left(s, max_width_);
  }

 private:
  std::string int_str(int64_t i) const {
    if (bool_) return i ? "True" : "False";
    return std::to_string(i);
  }

  bool floating_;
  bool bool_;
  bool int_mode_ = true;
  bool sci_mode_ = false;
  int max_width_ = 1;
};

std::string vector_str(const Tensor& t, int64_t pos, int indent, bool summarize,
                       const Reader& reader, const Formatter& fmt) {
  int element_length = fmt.width() + 2;
  int per_line = std::max(1, (opts.linewidth - indent) / element_length);
  int64_t n = t.sizes()[t.dim() - 1];
  int64_t stride = t.strides()[t.dim() - 1];
  std::vector<std::string> data;
  std::vector<int64_t> shown = shown_indices(n, summarize);
  bool elided = static_cast<int64_t>(shown.size()) < n;
  for (size_t k = 0; k < shown.size(); ++k) {
    if (elided && k == static_cast<size_t>(opts.edgeitems)) data.push_back(" ...");
    data.push_back(fmt.format(reader.at(pos + shown[k] * stride)));
  }
  std::string out = "[";
  for (size_t k = 0; k < data.size(); ++k) {
    if (k > 0) {
      out += k % static_cast<size_t>(per_line) == 0
                 ? ",\n" + std::string(static_cast<size_t>(indent + 1), ' ')
                 : ", ";
    }
    out += data[k];
  }
  return out + "]";
}

std::string tensor_str(const Tensor& t, int64_t d, int64_t pos, int indent, bool summarize,
                       const Reader& reader, const Formatter& fmt) {
  int64_t dims_left = t.dim() - d;
  if (dims_left == 0) return fmt.format(reader.at(pos));
  if (dims_left == 1) {
    // vector_str reads the last dim's size and stride from t; d == t.dim() - 1 here.
    return vector_str(t, pos, indent, summarize, reader, fmt);
  }
  int64_t n = t.sizes()[d];
  std::vector<int64_t> shown = shown_indices(n, summarize);
  bool elided = static_cast<int64_t>(shown.size()) < n;
  std::string sep = "," + std::string(static_cast<size_t>(dims_left - 1), '\n') +
                    std::string(static_cast<size_t>(indent + 1), ' ');
  std::string out = "[";
  for (size_t k = 0; k < shown.size(); ++k) {
    if (k > 0) out += sep;
    if (elided && k == static_cast<size_t>(opts.edgeitems)) out += "..." + sep;
    out +=
        tensor_str(t, d + 1, pos + shown[k] * t.strides()[d], indent + 1, summarize, reader, fmt);
  }
  return out + "]";
}

// Python's str(tuple(sizes)): (2, 3), (0,), ().
std::string tuple_str(IntArrayRef sizes) {
  std::string s = "(";
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(sizes[i]);
  }
  if (sizes.size() == 1) s += ",";
  return s + ")";
}

std::string add_suffixes(std::string body, const std::vector<std::string>& suffixes, int indent) {
  size_t nl = body.rfind('\n');
  int64_t last_line_len = static_cast<int64_t>(body.size()) -
                          (nl == std::string::npos ? -1 : static_cast<int64_t>(nl)) + 1;
  for (const std::string& suffix : suffixes) {
    int64_t len = static_cast<int64_t>(suffix.size());
    if (last_line_len + len + 2 > opts.linewidth) {
      body += ",\n" + std::string(static_cast<size_t>(indent), ' ') + suffix;
      last_line_len = indent + len;
    } else {
      body += ", " + suffix;
      last_line_len += len + 2;
    }
  }
  return body + ")";
}

}  // namespace

PrintOptions print_options() {
  std::lock_guard<std::mutex> lock(options_mutex());
  return current_options();
}

void set_print_options(const PrintOptions& options) {
  if (options.precision < 0 || options.precision > 100 || options.threshold < 0 ||
      options.edgeitems < 0 || options.linewidth < 1) {
    throw ValueError(
        str("set_print_options: precision must be in [0, 100], threshold and "
            "edgeitems >= 0 and linewidth >= 1, got precision=",
            options.precision, ", threshold=", options.threshold, ", edgeitems=", options.edgeitems,
            ", linewidth=", options.linewidth));
  }
  std::lock_guard<std::mutex> lock(options_mutex());
  current_options() = options;
}

std::string Tensor::to_string() const {
  if (!defined()) return "tensor(undefined)";
  opts = print_options();
  const std::string prefix = "tensor(";
  const int indent = static_cast<int>(prefix.size());
  std::vector<std::string> suffixes;
  if (!device().is_cpu()) suffixes.push_back(str("device='", device(), "'"));
  bool default_dtype = dtype() == kFloat32 || dtype() == kInt64 || dtype() == kBool;
  std::string body;
  if (numel() == 0) {
    if (dim() != 1) suffixes.push_back("size=" + tuple_str(sizes()));
    if (dtype() != kFloat32) suffixes.push_back(str("dtype=", dtype_name(dtype())));
    body = "[]";
  } else {
    if (!default_dtype) suffixes.push_back(str("dtype=", dtype_name(dtype())));
    Tensor host = *this;
    if (!device().is_cpu()) {
      host = empty(sizes(), dtype());
      native::copy_(host, *this);
    }
    bool summarize = numel() > opts.threshold;
    Reader reader(host);
    Formatter fmt(host, reader, summarize);
    body = tensor_str(host, 0, host.storage_offset(), indent, summarize, reader, fmt);
  }
  if (AutogradMetaInterface* meta = impl_->autograd_meta()) {
    std::string fn = meta->grad_fn_name();
    if (!fn.empty()) {
      suffixes.push_back("grad_fn=<" + fn + ">");
    } else if (meta->requires_grad()) {
      suffixes.push_back("requires_grad=True");
    }
  }
  return add_suffixes(prefix + body, suffixes, indent);
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.to_string(); }

}  // namespace mutagrad
