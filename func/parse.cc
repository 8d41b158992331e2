// func::parse_graph: the reader of Graph::code(), its exact inverse (Note [Reading code back]).
#include <cerrno>
#include <cstdlib>
#include <set>
#include <sstream>
#include <string>

#include "func/graph.h"

namespace mutagrad::func {

// Note [Reading code back]
// parse_graph reads what Graph::code() prints, line by line: the header with each input's
// dtype, shape and device (printed only when not the CPU), one `constant()` line per closed-over
// tensor (its values are not printed: the caller passes the tensor by id), one line per node
// and the return line. A node's kind is its annotation: "view of %a" is kView, "writes %a" is
// kInPlace, none is kFunctional, as code() prints them from the kind capture recorded. A number
// with '.', 'e', "inf" or "nan" in it is a double Scalar, one without an int64 Scalar, True and
// False bool Scalars, as print_arg writes them, so each Scalar keeps its type. What code() does
// not print cannot come back: write sites, the write_path mark of functionalized scatters (it
// changes only the signs of zeros in gradients) and the saved tensors. An id code() never
// prints (a value no node made) stays a default ValueInfo. A list of no element is read as an
// int list (code() prints an empty list of values the same way).

namespace {

class LineReader {
 public:
  LineReader(std::string text, int number) : text_(std::move(text)), number_(number) {}

  [[noreturn]] void fail(const std::string& expected) const {
    throw ValueError(str("parse_graph(): line ", number_, ": \"", text_, "\": expected ", expected,
                         " at column ", pos_ + 1, "; pass the text Graph::code() printed"));
  }
  std::string where() const { return str("line ", number_, ": \"", text_, "\""); }
  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return at_end() ? '\0' : text_[pos_]; }
  bool starts_with(const std::string& s) const { return text_.compare(pos_, s.size(), s) == 0; }
  bool consume(const std::string& s) {
    if (!starts_with(s)) return false;
    pos_ += s.size();
    return true;
  }
  void expect(const std::string& s) {
    if (!consume(s)) fail(str("\"", s, "\""));
  }
  void skip_spaces() {
    while (peek() == ' ') ++pos_;
  }
  void expect_end() {
    skip_spaces();
    if (!at_end()) fail("the end of the line");
  }
  // The characters from here while `ok` holds.
  template <typename F>
  std::string take_while(F ok) {
    const size_t start = pos_;
    while (!at_end() && ok(text_[pos_])) ++pos_;
    return text_.substr(start, pos_ - start);
  }
  int64_t integer(const char* what) {
    const std::string digits =
        take_while([](char c) { return c == '-' || (c >= '0' && c <= '9'); });
    if (digits.empty() || digits == "-") fail(what);
    errno = 0;
    char* end = nullptr;
    const long long v = std::strtoll(digits.c_str(), &end, 10);
    if (errno != 0 || *end != '\0') fail(what);
    return v;
  }
  int64_t value_id() {
    if (!consume("%")) fail("a value (%N)");
    return integer("a value id after '%'");
  }

 private:
  std::string text_;
  int number_;
  size_t pos_ = 0;
};

bool is_word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

std::optional<ScalarType> dtype_of_name(const std::string& name) {
  for (int i = 0; i <= static_cast<int>(ScalarType::Float64); ++i) {
    const auto t = static_cast<ScalarType>(i);
    if (name == dtype_name(t)) return t;
  }
  return std::nullopt;
}

// "float32[2, 3]" and, off the CPU, " cuda:0" (info_string in graph.cc).
ValueInfo read_info(LineReader& r) {
  ValueInfo info;
  const std::string name = r.take_while(is_word_char);
  const std::optional<ScalarType> dtype = dtype_of_name(name);
  if (!dtype) r.fail("a dtype (float32, int64, ...)");
  info.dtype = *dtype;
  r.expect("[");
  if (!r.consume("]")) {
    do {
      r.skip_spaces();
      info.shape.push_back(r.integer("a size"));
    } while (r.consume(","));
    r.expect("]");
  }
  if (r.starts_with(" ") && !r.starts_with("  ")) {
    r.expect(" ");
    const std::string device = r.take_while([](char c) { return is_word_char(c) || c == ':'; });
    if (device.empty()) r.fail("a device (cuda:0)");
    try {
      info.device = parse_device(device);
    } catch (const ValueError&) {
      r.fail("a device (cuda:0)");
    }
  }
  return info;
}

// A number as print_arg writes it: an int64, or a double when it has '.', 'e', inf or nan.
Scalar read_number(LineReader& r) {
  const std::string text =
      r.take_while([](char c) { return c == '-' || c == '+' || c == '.' || is_word_char(c); });
  if (text.find_first_of(".einf") == std::string::npos) {
    errno = 0;
    char* end = nullptr;
    const long long v = std::strtoll(text.c_str(), &end, 10);
    if (text.empty() || errno != 0 || *end != '\0')
      r.fail("a number, None, %N, a list or a string");
    return Scalar(static_cast<int64_t>(v));
  }
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);  // ERANGE on subnormals is no error here
  if (text.empty() || *end != '\0') r.fail("a number, None, %N, a list or a string");
  return Scalar(v);
}

NodeArg read_arg(LineReader& r) {
  if (r.peek() == '%') return ValueRef{r.value_id()};
  if (r.peek() == '"') {
    r.expect("\"");
    const std::string text = r.take_while([](char c) { return c != '"'; });
    r.expect("\"");
    return text;
  }
  if (r.peek() == '[') {
    r.expect("[");
    if (r.consume("]")) return std::vector<int64_t>{};
    std::vector<int64_t> ints;
    ValueList values;
    bool of_values = false;
    size_t count = 0;
    do {
      r.skip_spaces();
      const bool value = r.peek() == '%' || r.starts_with("None");
      if (count > 0 && value != of_values)
        r.fail("a list of ints or of values (%N, None), not both");
      of_values = value;
      if (r.consume("None")) {
        values.ids.push_back(-1);
      } else if (value) {
        values.ids.push_back(r.value_id());
      } else {
        ints.push_back(r.integer("an int or a value (%N, None) in the list"));
      }
      ++count;
    } while (r.consume(","));
    r.expect("]");
    if (of_values) return values;
    return ints;
  }
  if (r.peek() == '-' || r.peek() == '.' || (r.peek() >= '0' && r.peek() <= '9')) {
    return read_number(r);
  }
  const std::string word = r.take_while(is_word_char);
  if (word == "None") return std::monostate{};
  if (word == "True") return Scalar(true);
  if (word == "False") return Scalar(false);
  if (word == "inf" || word == "nan") {
    return Scalar(word == "inf" ? std::strtod("inf", nullptr) : std::strtod("nan", nullptr));
  }
  if (const std::optional<ScalarType> dtype = dtype_of_name(word)) return *dtype;
  r.fail("an argument: None, %N, a number, a list, a dtype or a \"string\"");
}

class GraphReader {
 public:
  GraphReader(Graph& g, const std::map<int64_t, Tensor>& constants)
      : g_(g), constants_(constants) {}

  void define(LineReader& r, int64_t id, ValueInfo info) {
    if (id < 0) r.fail("a value id of 0 or more");
    if (defined_.count(id) != 0) r.fail(str("a new value, not %", id, " again"));
    defined_.insert(id);
    if (static_cast<size_t>(id) >= g_.values.size()) g_.values.resize(id + 1);
    g_.values[id] = std::move(info);
  }
  void use(LineReader& r, int64_t id) {
    if (defined_.count(id) == 0) r.fail(str("a value defined above, not %", id));
  }

  void header(LineReader& r) {
    r.expect("graph(");
    if (!r.consume(")")) {
      do {
        r.skip_spaces();
        const int64_t id = r.value_id();
        r.expect(": ");
        define(r, id, read_info(r));
        g_.inputs.push_back(id);
      } while (r.consume(","));
      r.expect(")");
    }
    r.expect(":");
    r.expect_end();
  }

  void constant(LineReader& r, int64_t id) {
    r.skip_spaces();
    r.expect("#");
    r.skip_spaces();
    ValueInfo info = read_info(r);
    r.expect_end();
    const auto it = constants_.find(id);
    if (it == constants_.end()) {
      r.fail(str("constant %", id,
                 " among the constants passed (code() does not print its "
                 "values: pass {",
                 id, ": tensor})"));
    }
    const Tensor& t = it->second;
    if (!t.defined() || t.dtype() != info.dtype || !t.sizes().equals(info.shape) ||
        t.device() != info.device) {
      r.fail(str("a tensor of ", dtype_name(info.dtype), IntArrayRef(info.shape), " on ",
                 info.device, " passed as constant %", id));
    }
    define(r, id, std::move(info));
    g_.constants[id] = t;
  }

  void node(LineReader& r, int64_t id, const std::string& op) {
    Node node;
    node.op = op;
    node.output = id;
    if (find_op(op) == nullptr) {
      throw CaptureError(op, str("parse_graph(): ", r.where(), ": ", op,
                                 "() is not an op of the graph IR; expected an op find_op knows"));
    }
    r.skip_spaces();
    if (!r.consume(")")) {
      do {
        r.skip_spaces();
        NodeArg arg = read_arg(r);
        if (const auto* v = std::get_if<ValueRef>(&arg)) use(r, v->id);
        if (const auto* vl = std::get_if<ValueList>(&arg)) {
          for (int64_t i : vl->ids) {
            if (i >= 0) use(r, i);
          }
        }
        node.args.push_back(std::move(arg));
      } while (r.consume(","));
      r.expect(")");
    }
    r.skip_spaces();
    r.expect("#");
    r.skip_spaces();
    ValueInfo info = read_info(r);
    r.skip_spaces();
    const bool view = r.consume("view of ");
    const bool writes = !view && r.consume("writes ");
    if (view || writes) {
      const int64_t self = r.value_id();
      const auto* first = node.args.empty() ? nullptr : std::get_if<ValueRef>(&node.args[0]);
      if (first == nullptr || first->id != self)
        r.fail("the node's first argument after view of/writes");
      node.kind = view ? OpKind::kView : OpKind::kInPlace;
    }
    r.expect_end();
    define(r, id, std::move(info));
    g_.nodes.push_back(std::move(node));
  }

  void result(LineReader& r) {
    r.expect("(");
    if (!r.consume(")")) {
      do {
        r.skip_spaces();
        const int64_t id = r.value_id();
        use(r, id);
        g_.outputs.push_back(id);
      } while (r.consume(","));
      r.expect(")");
    }
    r.expect_end();
  }

  void check_all_constants_used() const {
    for (const auto& [id, t] : constants_) {
      if (g_.constants.count(id) == 0) {
        throw ValueError(str("parse_graph(): constant %", id, " was passed but the code has no \"%",
                             id, " = constant()\" line; pass only the graph's constants"));
      }
    }
  }

 private:
  Graph& g_;
  const std::map<int64_t, Tensor>& constants_;
  std::set<int64_t> defined_;
};

}  // namespace

Graph parse_graph(const std::string& code, const std::map<int64_t, Tensor>& constants) {
  Graph g;
  GraphReader reader(g, constants);
  std::istringstream in(code);
  std::string text;
  int number = 0;
  enum { kHeader, kBody, kDone } state = kHeader;
  while (std::getline(in, text)) {
    ++number;
    LineReader r(text, number);
    r.skip_spaces();
    if (r.at_end()) continue;
    if (state == kHeader) {
      reader.header(r);
      state = kBody;
    } else if (state == kDone) {
      r.fail("nothing after the return line");
    } else if (r.consume("return ")) {
      reader.result(r);
      state = kDone;
    } else {
      const int64_t id = r.value_id();
      r.skip_spaces();
      r.expect("=");
      r.skip_spaces();
      const std::string op = r.take_while(is_word_char);
      if (op.empty()) r.fail("an op name");
      r.expect("(");
      if (op == "constant" && r.consume(")")) {
        if (!g.nodes.empty()) r.fail("a node: constants come before the nodes");
        reader.constant(r, id);
      } else {
        reader.node(r, id, op);
      }
    }
  }
  if (state != kDone) {
    throw ValueError(str("parse_graph(): the code ends at line ", number, " without ",
                         state == kHeader ? "the header \"graph(...):\"" : "\"return (...)\"",
                         "; pass the whole text Graph::code() printed"));
  }
  reader.check_all_constants_used();
  return g;
}

}  // namespace mutagrad::func
