// The restricted pickle reader and writer (Note [Restricted unpickler] in pickle.h).
#include "serialize/pickle.h"

#include <cstring>
#include <limits>
#include <map>
#include <unordered_map>

#include "mutagrad.h"
#include "serialize/errors.h"

namespace mutagrad {
namespace serialize {
namespace {

struct StorageName {
  const char* name;
  ScalarType dtype;
};
constexpr StorageName kStorages[] = {
    {"DoubleStorage", kFloat64},    {"FloatStorage", kFloat32}, {"HalfStorage", kFloat16},
    {"BFloat16Storage", kBFloat16}, {"LongStorage", kInt64},    {"IntStorage", kInt32},
    {"ShortStorage", kInt16},       {"CharStorage", kInt8},     {"ByteStorage", kUInt8},
    {"BoolStorage", kBool},
};

// ---- reading ----

enum class NodeKind { None, Bool, Int, Double, String, Tensor, List, Tuple, Dict, Global, Storage };

struct Node {
  NodeKind kind = NodeKind::None;
  int64_t i = 0;
  double d = 0;
  std::string s;  // a string; a Global's "module name"; a Storage's dtype name
  Tensor tensor;
  std::vector<int> items;                    // list/tuple
  std::vector<std::pair<int, int>> entries;  // dict
  bool ordered = false;
  int attributes = -1;  // an OrderedDict's BUILD state
  // A Storage: its memory and the version counter every tensor over it shares.
  Storage storage;
  ScalarType dtype = kFloat32;
  VersionCounter version;
};

const char* kGlobals[] = {
    "torch._utils _rebuild_tensor_v2",
    "torch._utils _rebuild_parameter",
    "collections OrderedDict",
};

class Unpickler {
 public:
  Unpickler(const char* data, size_t size, const StorageLoader& load)
      : p_(data), end_(data + size), load_(load) {}

  Value run() {
    for (;;) {
      uint8_t op = byte();
      if (op == '.') break;
      step(op);
    }
    if (stack_.size() != 1 || !marks_.empty()) {
      fail(str("STOP with ", stack_.size(), " objects on the stack (expected 1)"));
    }
    int64_t budget = kMaxObjects;
    return export_value(stack_.back(), 0, &budget);
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw UnpicklingError(str("load: the pickle is refused: ", what));
  }

  // -- input --
  void need(size_t n) const {
    if (static_cast<size_t>(end_ - p_) < n) fail("it ends in the middle of an opcode (truncated)");
  }
  uint8_t byte() {
    need(1);
    return static_cast<uint8_t>(*p_++);
  }
  uint64_t le(size_t n) {
    need(n);
    uint64_t v = 0;
    for (size_t k = 0; k < n; ++k)
      v |= static_cast<uint64_t>(static_cast<uint8_t>(p_[k])) << (8 * k);
    p_ += n;
    return v;
  }
  std::string bytes(uint64_t n) {
    if (n > static_cast<uint64_t>(end_ - p_)) fail("a string runs past the end of the pickle");
    std::string s(p_, static_cast<size_t>(n));
    p_ += n;
    return s;
  }
  std::string line() {
    const char* nl =
        static_cast<const char*>(std::memchr(p_, '\n', static_cast<size_t>(end_ - p_)));
    if (nl == nullptr) fail("a GLOBAL's name has no end of line");
    std::string s(p_, nl);
    p_ = nl + 1;
    return s;
  }

  // -- objects --
  int add(Node n) {
    if (nodes_.size() >= static_cast<size_t>(kMaxObjects)) fail("too many objects");
    nodes_.push_back(std::move(n));
    return static_cast<int>(nodes_.size() - 1);
  }
  int add_kind(NodeKind k) {
    Node n;
    n.kind = k;
    return add(std::move(n));
  }
  void push(int id) { stack_.push_back(id); }
  int pop() {
    if (stack_.size() <= (marks_.empty() ? 0 : marks_.back())) fail("it pops an empty stack");
    int id = stack_.back();
    stack_.pop_back();
    return id;
  }
  int top() {
    if (stack_.size() <= (marks_.empty() ? 0 : marks_.back())) fail("it reads an empty stack");
    return stack_.back();
  }
  std::vector<int> pop_mark() {
    if (marks_.empty()) fail("it closes a MARK that was never opened");
    size_t m = marks_.back();
    marks_.pop_back();
    std::vector<int> items(stack_.begin() + static_cast<std::ptrdiff_t>(m), stack_.end());
    stack_.resize(m);
    return items;
  }
  Node& node(int id) { return nodes_[static_cast<size_t>(id)]; }
  Node& expect(int id, NodeKind k, const char* what) {
    if (node(id).kind != k) fail(str(what, " is not of the expected type"));
    return node(id);
  }
  int64_t int_of(int id, const char* what) {
    Node& n = node(id);
    if (n.kind != NodeKind::Int && n.kind != NodeKind::Bool) fail(str(what, " is not an int"));
    return n.i;
  }
  void memo_put(uint64_t key) {
    if (memo_.size() >= static_cast<size_t>(kMaxObjects)) fail("the memo is too large");
    memo_[key] = top();
  }
  void memo_get(uint64_t key) {
    auto it = memo_.find(key);
    if (it == memo_.end()) fail(str("memo key ", key, " was never stored"));
    push(it->second);
  }
  int tuple_of(std::vector<int> items) {
    Node n;
    n.kind = NodeKind::Tuple;
    n.items = std::move(items);
    return add(std::move(n));
  }
  void set_items(int dict, const std::vector<int>& kv) {
    Node& d = expect(dict, NodeKind::Dict, "SETITEMS' target");
    if (kv.size() % 2 != 0) fail("SETITEMS with an odd number of objects");
    for (size_t k = 0; k < kv.size(); k += 2) {
      NodeKind key = node(kv[k]).kind;
      if (key != NodeKind::String && key != NodeKind::Int && key != NodeKind::Bool &&
          key != NodeKind::Double && key != NodeKind::None) {
        fail("a dict key that is not a string or a number");
      }
      d.entries.emplace_back(kv[k], kv[k + 1]);
    }
  }
  void global(const std::string& module, const std::string& name) {
    std::string full = module + " " + name;
    bool allowed =
        module == "torch" && (name.size() > 7 && name.compare(name.size() - 7, 7, "Storage") == 0);
    for (const char* g : kGlobals) allowed = allowed || full == g;
    if (full == "torch._utils _rebuild_tensor_v3") {
      // torch 2 rebuilds through v3 exactly the dtypes without a storage type (uint16/32/64,
      // float8_*, complex32, bits*): none is one of mutagrad's.
      throw UnknownDTypeError(
          "load: the file holds a tensor rebuilt by torch._utils._rebuild_tensor_v3, which "
          "torch 2 writes for dtypes mutagrad does not have (uint16/32/64, float8_*, "
          "complex32, bits*); convert it to a supported dtype before saving");
    }
    if (!allowed) {
      fail(str("the global '", module, ".", name,
               "' is not one a weights file needs (only tensor rebuilds, storage types and "
               "collections.OrderedDict are accepted); the file may run code in a full "
               "unpickler, so it is not loaded"));
    }
    Node n;
    n.kind = NodeKind::Global;
    n.s = full;
    push(add(std::move(n)));
  }
  void persistent_load() {
    int id = pop();
    Node& t = expect(id, NodeKind::Tuple, "a persistent id");
    if (t.items.size() != 5 || node(t.items[0]).kind != NodeKind::String ||
        node(t.items[0]).s != "storage") {
      fail("a persistent id that is not ('storage', type, key, location, numel)");
    }
    std::vector<int> f = t.items;
    Node& type = expect(f[1], NodeKind::Global, "a storage's type");
    if (type.s.compare(0, 6, "torch ") != 0) fail("a storage type outside torch");
    ScalarType dtype = dtype_of_storage_type(type.s.substr(6));
    std::string key = expect(f[2], NodeKind::String, "a storage key").s;
    std::string location = expect(f[3], NodeKind::String, "a storage location").s;
    int64_t numel = int_of(f[4], "a storage's size");
    auto it = storages_.find(key);
    if (it != storages_.end()) {
      if (node(it->second).dtype != dtype) fail(str("storage '", key, "' is read as two dtypes"));
      push(it->second);
      return;
    }
    if (numel < 0) fail(str("storage '", key, "' has a negative size ", numel));
    Node n;
    n.kind = NodeKind::Storage;
    n.dtype = dtype;
    n.i = numel;
    n.storage = load_(key, dtype, numel, location);
    int sid = add(std::move(n));
    storages_[key] = sid;
    push(sid);
  }
  std::vector<int64_t> ints_of(int id, const char* what) {
    Node& t = expect(id, NodeKind::Tuple, what);
    std::vector<int64_t> out;
    for (int e : t.items) out.push_back(int_of(e, what));
    return out;
  }
  int rebuild_tensor(const std::vector<int>& args) {
    if (args.size() < 4) fail("_rebuild_tensor_v2 with fewer than 4 arguments");
    Node& st = expect(args[0], NodeKind::Storage, "_rebuild_tensor_v2's storage");
    int64_t offset = int_of(args[1], "a tensor's storage offset");
    std::vector<int64_t> sizes = ints_of(args[2], "a tensor's size");
    std::vector<int64_t> strides = ints_of(args[3], "a tensor's stride");
    bool requires_grad = args.size() > 4 && int_of(args[4], "requires_grad") != 0;
    if (sizes.size() != strides.size()) fail("a tensor whose size and stride differ in length");
    // Every element must lie inside the storage: offset + sum((size-1)*stride) < numel.
    int64_t last = offset, count = 1;
    bool bad = offset < 0;
    for (size_t k = 0; k < sizes.size(); ++k) {
      int64_t step;
      if (sizes[k] < 0 || strides[k] < 0 || __builtin_mul_overflow(count, sizes[k], &count)) {
        bad = true;
      } else if (sizes[k] > 0 && (__builtin_mul_overflow(sizes[k] - 1, strides[k], &step) ||
                                  __builtin_add_overflow(last, step, &last))) {
        bad = true;
      }
    }
    if (bad)
      throw SizeMismatchError(
          "load: a tensor's size, stride or offset is negative or overflows int64");
    if (count > 0 && last >= st.i) {
      throw OffsetError(
          str("load: a tensor reaches element ", last, " of a storage of ", st.i, " elements"));
    }
    Tensor t(make_pooled<TensorImpl>(st.storage, DimVector(sizes), DimVector(strides), offset,
                                     st.dtype, st.version));
    if (requires_grad) t.requires_grad_(true);
    Node n;
    n.kind = NodeKind::Tensor;
    n.tensor = t;
    return add(std::move(n));
  }
  void reduce() {
    int args_id = pop();
    int callable = pop();
    Node& g = expect(callable, NodeKind::Global, "REDUCE's callable");
    std::vector<int> args = expect(args_id, NodeKind::Tuple, "REDUCE's arguments").items;
    if (g.s == "collections OrderedDict") {
      if (!args.empty()) fail("OrderedDict called with arguments");
      int d = add_kind(NodeKind::Dict);
      node(d).ordered = true;
      push(d);
    } else if (g.s == "torch._utils _rebuild_tensor_v2") {
      push(rebuild_tensor(args));
    } else if (g.s == "torch._utils _rebuild_parameter") {
      if (args.size() < 2) fail("_rebuild_parameter with fewer than 2 arguments");
      Node& t = expect(args[0], NodeKind::Tensor, "_rebuild_parameter's data");
      Node n;
      n.kind = NodeKind::Tensor;
      n.tensor = t.tensor.detach();
      if (int_of(args[1], "requires_grad") != 0) n.tensor.requires_grad_(true);
      push(add(std::move(n)));
    } else {
      fail(str("a REDUCE of '", g.s, "', which is not a callable a weights file needs"));
    }
  }

  void step(uint8_t op) {
    switch (op) {
      case 0x80:
        byte();
        break;  // PROTO
      case 0x95:
        le(8);
        break;  // FRAME
      case '(':
        marks_.push_back(stack_.size());
        break;  // MARK
      case 'N':
        push(add_kind(NodeKind::None));
        break;  // NONE
      case 0x88:
      case 0x89: {  // NEWTRUE/NEWFALSE
        int id = add_kind(NodeKind::Bool);
        node(id).i = op == 0x88;
        push(id);
        break;
      }
      case 'K':
      case 'M':
      case 'J': {  // BININT1/2, BININT
        uint64_t v = le(op == 'K' ? 1 : op == 'M' ? 2 : 4);
        int id = add_kind(NodeKind::Int);
        node(id).i = op == 'J' ? static_cast<int32_t>(v) : static_cast<int64_t>(v);
        push(id);
        break;
      }
      case 0x8a: {  // LONG1
        uint8_t n = byte();
        if (n > 8) fail("an integer wider than int64");
        uint64_t v = le(n);
        if (n > 0 && n < 8 && (v >> (8 * n - 1)) & 1) v |= ~uint64_t{0} << (8 * n);
        int id = add_kind(NodeKind::Int);
        node(id).i = static_cast<int64_t>(v);
        push(id);
        break;
      }
      case 'G': {  // BINFLOAT
        uint64_t v = 0;
        need(8);
        for (int k = 0; k < 8; ++k) v = (v << 8) | static_cast<uint8_t>(p_[k]);
        p_ += 8;
        int id = add_kind(NodeKind::Double);
        std::memcpy(&node(id).d, &v, 8);
        push(id);
        break;
      }
      case 'X':
      case 0x8c:
      case 0x8d: {  // BINUNICODE, SHORT_, 8
        uint64_t n = le(op == 'X' ? 4 : op == 0x8c ? 1 : 8);
        Node s;
        s.kind = NodeKind::String;
        s.s = bytes(n);
        push(add(std::move(s)));
        break;
      }
      case ')':
        push(tuple_of({}));
        break;  // EMPTY_TUPLE
      case 't':
        push(tuple_of(pop_mark()));
        break;  // TUPLE
      case 0x85:
      case 0x86:
      case 0x87: {  // TUPLE1/2/3
        std::vector<int> items(static_cast<size_t>(op - 0x84));
        for (size_t k = items.size(); k-- > 0;) items[k] = pop();
        push(tuple_of(std::move(items)));
        break;
      }
      case ']':
        push(add_kind(NodeKind::List));
        break;  // EMPTY_LIST
      case '}':
        push(add_kind(NodeKind::Dict));
        break;     // EMPTY_DICT
      case 'a': {  // APPEND
        int v = pop();
        expect(top(), NodeKind::List, "APPEND's target").items.push_back(v);
        break;
      }
      case 'e': {  // APPENDS
        std::vector<int> items = pop_mark();
        Node& l = expect(top(), NodeKind::List, "APPENDS' target");
        l.items.insert(l.items.end(), items.begin(), items.end());
        break;
      }
      case 's': {  // SETITEM
        int v = pop();
        int k = pop();
        set_items(top(), {k, v});
        break;
      }
      case 'u': {  // SETITEMS
        std::vector<int> kv = pop_mark();
        set_items(top(), kv);
        break;
      }
      case 'q':
        memo_put(le(1));
        break;  // BINPUT
      case 'r':
        memo_put(le(4));
        break;  // LONG_BINPUT
      case 0x94:
        memo_put(memo_.size());
        break;  // MEMOIZE
      case 'h':
        memo_get(le(1));
        break;  // BINGET
      case 'j':
        memo_get(le(4));
        break;     // LONG_BINGET
      case 'c': {  // GLOBAL
        std::string module = line();
        std::string name = line();
        global(module, name);
        break;
      }
      case 0x93: {  // STACK_GLOBAL
        std::string name = expect(pop(), NodeKind::String, "STACK_GLOBAL's name").s;
        std::string module = expect(pop(), NodeKind::String, "STACK_GLOBAL's module").s;
        global(module, name);
        break;
      }
      case 'Q':
        persistent_load();
        break;  // BINPERSID
      case 'R':
        reduce();
        break;     // REDUCE
      case 'b': {  // BUILD
        int state = pop();
        Node& d = node(top());
        if (d.kind != NodeKind::Dict || !d.ordered || node(state).kind != NodeKind::Dict) {
          fail("BUILD of something other than an OrderedDict's attributes");
        }
        d.attributes = state;
        break;
      }
      default:
        fail(str("opcode 0x", std::hex, static_cast<int>(op), std::dec,
                 " is not one a weights file needs"));
    }
    if (stack_.size() > static_cast<size_t>(kMaxObjects)) fail("the stack is too deep");
  }

  Value export_value(int id, int depth, int64_t* budget) {
    if (depth > kMaxDepth) {
      fail(str("objects nest deeper than ", kMaxDepth, " levels (or refer to themselves)"));
    }
    if (--*budget < 0) fail(str("the objects expand to more than ", kMaxObjects));
    const Node& n = node(id);
    switch (n.kind) {
      case NodeKind::None:
        return Value();
      case NodeKind::Bool:
        return Value(n.i != 0);
      case NodeKind::Int:
        return Value(n.i);
      case NodeKind::Double:
        return Value(n.d);
      case NodeKind::String:
        return Value(n.s);
      case NodeKind::Tensor:
        return Value(n.tensor);
      case NodeKind::List:
      case NodeKind::Tuple: {
        std::vector<Value> items;
        std::vector<int> ids = n.items;  // nodes_ is not resized here; copy for clarity
        for (int e : ids) items.push_back(export_value(e, depth + 1, budget));
        return n.kind == NodeKind::List ? Value::list(std::move(items))
                                        : Value::tuple(std::move(items));
      }
      case NodeKind::Dict: {
        std::vector<std::pair<Value, Value>> entries;
        std::vector<std::pair<int, int>> ids = n.entries;
        for (const auto& [k, v] : ids) {
          entries.emplace_back(export_value(k, depth + 1, budget),
                               export_value(v, depth + 1, budget));
        }
        Value out = Value::dict(std::move(entries), n.ordered);
        int attributes = n.attributes;
        if (attributes >= 0) {
          out.set_attributes(std::make_shared<Value>(export_value(attributes, depth + 1, budget)));
        }
        return out;
      }
      case NodeKind::Global:
        fail("a bare global as a value");
      case NodeKind::Storage:
        fail("a bare storage as a value");
    }
    fail("an unknown object");
  }

  const char* p_;
  const char* end_;
  const StorageLoader& load_;
  std::vector<Node> nodes_;
  std::vector<int> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, int> memo_;
  std::map<std::string, int> storages_;
};

// ---- writing ----

class Pickler {
 public:
  explicit Pickler(std::vector<PickledStorage>* storages) : storages_(storages) {}

  std::string run(const Value& v) {
    out_ += "\x80\x02";
    write(v, 0);
    out_ += '.';
    return std::move(out_);
  }

 private:
  void op(char c) { out_ += c; }
  void u32(uint32_t v) {
    for (int k = 0; k < 4; ++k) out_ += static_cast<char>((v >> (8 * k)) & 0xff);
  }
  void put() {  // memoizes the top of the stack
    uint32_t id = memo_++;
    if (id < 256) {
      op('q');
      out_ += static_cast<char>(id);
    } else {
      op('r');
      u32(id);
    }
  }
  void get(uint32_t id) {
    if (id < 256) {
      op('h');
      out_ += static_cast<char>(id);
    } else {
      op('j');
      u32(id);
    }
  }
  void write_int(int64_t v) {
    if (v >= 0 && v < 256) {
      op('K');
      out_ += static_cast<char>(v);
    } else if (v >= 0 && v < 65536) {
      op('M');
      out_ += static_cast<char>(v & 0xff);
      out_ += static_cast<char>(v >> 8);
    } else if (v >= std::numeric_limits<int32_t>::min() &&
               v <= std::numeric_limits<int32_t>::max()) {
      op('J');
      u32(static_cast<uint32_t>(v));
    } else {
      op('\x8a');
      out_ += '\x08';
      for (int k = 0; k < 8; ++k)
        out_ += static_cast<char>((static_cast<uint64_t>(v) >> (8 * k)) & 0xff);
    }
  }
  void write_string(const std::string& s) {
    op('X');
    u32(static_cast<uint32_t>(s.size()));
    out_ += s;
  }
  void global(const std::string& module_name) {  // "module\nname\n", memoized
    auto it = globals_.find(module_name);
    if (it != globals_.end()) return get(it->second);
    op('c');
    out_ += module_name;
    globals_[module_name] = memo_;
    put();
  }
  void write_ints(IntArrayRef v) {
    if (v.size() == 0) return op(')');
    op('(');
    for (int64_t x : v) write_int(x);
    op('t');
  }
  void write_tensor(const Tensor& t) {
    TensorImpl* impl = t.unsafe_impl();
    const Storage& storage = impl->storage();
    int64_t esize = element_size(t.dtype());
    int64_t numel = static_cast<int64_t>(storage.nbytes()) / esize;
    global("torch._utils\n_rebuild_tensor_v2\n");
    op('(');
    // The persistent id: ('storage', torch.<Type>Storage, key, location, numel), once per
    // storage; the location is its device as torch names it ("cpu", "cuda:0").
    auto it = keys_.begin();
    while (it != keys_.end() && !it->storage.is_same(storage)) ++it;
    std::string key;
    if (it == keys_.end()) {
      key = std::to_string(keys_.size());
      keys_.push_back({storage, key, t.dtype()});
      // The whole storage's memory as a flat tensor, on its device (the writer copies a CUDA
      // one to the CPU when it writes its record: Note [Streaming save] in checkpoint.cc).
      Tensor flat(make_pooled<TensorImpl>(storage, DimVector{numel}, DimVector{1}, 0, t.dtype(),
                                          VersionCounter()));
      storages_->push_back({key, flat});
    } else {
      if (it->dtype != t.dtype()) {
        throw ValueError(str("save: one storage is viewed as ", dtype_name(it->dtype), " and as ",
                             dtype_name(t.dtype()),
                             ", which torch's format cannot express; save a clone()"));
      }
      key = it->key;
    }
    op('(');
    write_string("storage");
    global(str("torch\n", storage_type_name(t.dtype()), "\n"));
    write_string(key);
    write_string(str(storage.device()));
    write_int(numel);
    op('t');
    op('Q');
    write_int(impl->storage_offset());
    write_ints(t.sizes());
    write_ints(t.strides());
    op(t.requires_grad() ? '\x88' : '\x89');
    global("collections\nOrderedDict\n");
    op(')');
    op('R');
    op('t');
    op('R');
  }
  void write(const Value& v, int depth) {
    if (depth > kMaxDepth) {
      throw ValueError(str("save: the object nests deeper than ", kMaxDepth, " levels"));
    }
    switch (v.kind()) {
      case Value::Kind::None:
        return op('N');
      case Value::Kind::Bool:
        return op(v.to_bool() ? '\x88' : '\x89');
      case Value::Kind::Int:
        return write_int(v.to_int());
      case Value::Kind::Double: {
        op('G');
        uint64_t bits;
        double d = v.to_double();
        std::memcpy(&bits, &d, 8);
        for (int k = 7; k >= 0; --k) out_ += static_cast<char>((bits >> (8 * k)) & 0xff);
        return;
      }
      case Value::Kind::String:
        return write_string(v.to_string());
      case Value::Kind::Tensor:
        if (!v.to_tensor().defined()) throw ValueError("save: an undefined tensor");
        return write_tensor(v.to_tensor());
      case Value::Kind::List:
        op(']');
        if (!v.items().empty()) {
          op('(');
          for (const Value& e : v.items()) write(e, depth + 1);
          op('e');
        }
        return;
      case Value::Kind::Tuple:
        op('(');
        for (const Value& e : v.items()) write(e, depth + 1);
        return op('t');
      case Value::Kind::Dict:
        if (v.ordered()) {
          global("collections\nOrderedDict\n");
          op(')');
          op('R');
        } else {
          op('}');
        }
        if (!v.entries().empty()) {
          op('(');
          for (const auto& [k, e] : v.entries()) {
            write(k, depth + 1);
            write(e, depth + 1);
          }
          op('u');
        }
        if (v.ordered() && v.attributes()) {
          write(*v.attributes(), depth + 1);
          op('b');
        }
        return;
    }
  }

  std::string out_;
  uint32_t memo_ = 0;
  std::map<std::string, uint32_t> globals_;
  struct Key {
    Storage storage;
    std::string key;
    ScalarType dtype;
  };
  std::vector<Key> keys_;  // a checkpoint has few storages
  std::vector<PickledStorage>* storages_;
};

}  // namespace

const char* storage_type_name(ScalarType dtype) {
  for (const StorageName& s : kStorages) {
    if (s.dtype == dtype) return s.name;
  }
  throw InternalError(str("no torch storage type for ", dtype_name(dtype)));
}

ScalarType dtype_of_storage_type(const std::string& name) {
  for (const StorageName& s : kStorages) {
    if (name == s.name) return s.dtype;
  }
  throw UnknownDTypeError(
      str("load: the storage type torch.", name, " holds a dtype mutagrad does not have"));
}

Value unpickle(const char* data, size_t size, const StorageLoader& load_storage) {
  return Unpickler(data, size, load_storage).run();
}

std::string pickle(const Value& value, std::vector<PickledStorage>* storages) {
  return Pickler(storages).run(value);
}

const Value& Value::at(const std::string& key) const {
  for (const auto& [k, v] : entries_) {
    if (k.kind() == Kind::String && k.to_string() == key) return v;
  }
  throw IndexError(str("no entry '", key, "'"));
}

}  // namespace serialize
}  // namespace mutagrad
