#include "autograd/stack_trace.h"

#include <cxxabi.h>
#include <dlfcn.h>
#include <elf.h>
#include <execinfo.h>
#include <link.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace mutagrad::autograd {
namespace {

// The demangled name, without the suffixes GCC gives the copies it makes of a function
// ("f() [clone .localalias]" under -fno-semantic-interposition, ".constprop.0", ".isra.0",
// ".part.0", ".cold"): the user wrote f().
std::string demangle(const char* name) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> out(abi::__cxa_demangle(name, nullptr, nullptr, &status),
                                             std::free);
  std::string text = status == 0 && out ? std::string(out.get()) : std::string(name);
  const size_t clone = text.find(" [clone .");
  if (clone != std::string::npos) text.erase(clone);
  return text;
}

// The function symbols of one ELF binary (its .symtab, else .dynsym), sorted by address.
class SymbolTable {
 public:
  explicit SymbolTable(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) return;
    std::vector<char> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    if (bytes.size() < sizeof(Elf64_Ehdr) || std::memcmp(bytes.data(), ELFMAG, SELFMAG) != 0 ||
        bytes[EI_CLASS] != ELFCLASS64) {
      return;
    }
    Elf64_Ehdr eh;
    std::memcpy(&eh, bytes.data(), sizeof eh);
    is_executable_ = eh.e_type == ET_EXEC;
    if (eh.e_shoff == 0 || eh.e_shentsize != sizeof(Elf64_Shdr) ||
        eh.e_shoff + uint64_t{eh.e_shnum} * sizeof(Elf64_Shdr) > bytes.size()) {
      return;
    }
    std::vector<Elf64_Shdr> sections(eh.e_shnum);
    std::memcpy(sections.data(), bytes.data() + eh.e_shoff, eh.e_shnum * sizeof(Elf64_Shdr));
    for (uint32_t want : {uint32_t{SHT_SYMTAB}, uint32_t{SHT_DYNSYM}}) {
      for (const Elf64_Shdr& s : sections) {
        if (s.sh_type != want || s.sh_link >= sections.size()) continue;
        const Elf64_Shdr& strtab = sections[s.sh_link];
        if (s.sh_offset + s.sh_size > bytes.size() ||
            strtab.sh_offset + strtab.sh_size > bytes.size()) {
          continue;
        }
        const size_t n = s.sh_size / sizeof(Elf64_Sym);
        for (size_t i = 0; i < n; ++i) {
          Elf64_Sym sym;
          std::memcpy(&sym, bytes.data() + s.sh_offset + i * sizeof(Elf64_Sym), sizeof sym);
          if (ELF64_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_value == 0 ||
              sym.st_name >= strtab.sh_size) {
            continue;
          }
          const char* name = bytes.data() + strtab.sh_offset + sym.st_name;
          const size_t len = strnlen(name, strtab.sh_size - sym.st_name);
          symbols_.push_back(
              {sym.st_value, std::max<uint64_t>(sym.st_size, 1), std::string(name, len)});
        }
      }
      if (!symbols_.empty()) break;
    }
    std::sort(symbols_.begin(), symbols_.end(),
              [](const Symbol& a, const Symbol& b) { return a.address < b.address; });
  }

  // The symbol containing `address` (an address in the binary's own numbering), or null.
  const std::string* find(uint64_t address) const {
    auto it = std::upper_bound(symbols_.begin(), symbols_.end(), address,
                               [](uint64_t a, const Symbol& s) { return a < s.address; });
    if (it == symbols_.begin()) return nullptr;
    --it;
    return address < it->address + it->size ? &it->name : nullptr;
  }
  bool is_executable() const { return is_executable_; }

 private:
  struct Symbol {
    uint64_t address;
    uint64_t size;
    std::string name;
  };
  std::vector<Symbol> symbols_;
  bool is_executable_ = false;
};

const SymbolTable& symbol_table(const std::string& path) {
  static std::mutex* mu = new std::mutex();  // never destroyed (errors during static exit)
  static auto* tables = new std::map<std::string, std::unique_ptr<SymbolTable>>();
  std::lock_guard<std::mutex> lock(*mu);
  std::unique_ptr<SymbolTable>& t = (*tables)[path];
  if (!t) t = std::make_unique<SymbolTable>(path);
  return *t;
}

}  // namespace

namespace detail {

bool symbolize(const void* address, std::string& function, std::string& binary, uintptr_t& offset) {
  Dl_info info{};
  void* entry = nullptr;  // the symbol's ElfW(Sym)
  if (dladdr1(address, &info, &entry, RTLD_DL_SYMENT) == 0 || info.dli_fbase == nullptr) {
    return false;
  }
  const uintptr_t a = reinterpret_cast<uintptr_t>(address);
  offset = a - reinterpret_cast<uintptr_t>(info.dli_fbase);
  // The main program's path may be given as its argv[0] or not at all.
  binary = info.dli_fname != nullptr && info.dli_fname[0] == '/' ? info.dli_fname
                                                                 : std::string("/proc/self/exe");
  // dladdr names the nearest exported symbol at or below the address, which for a function
  // with internal linkage (an anonymous namespace's helper) is some other function: only a
  // symbol whose extent covers the address names it; else the binary's full symbol table does.
  const auto* sym = static_cast<const ElfW(Sym)*>(entry);
  const bool covers =
      sym != nullptr && info.dli_saddr != nullptr &&
      (sym->st_size == 0 || a < reinterpret_cast<uintptr_t>(info.dli_saddr) + sym->st_size);
  if (info.dli_sname != nullptr && covers) {
    function = demangle(info.dli_sname);
    return true;
  }
  const SymbolTable& table = symbol_table(binary);
  const std::string* name = table.find(table.is_executable() ? a : offset);
  if (name == nullptr) return false;
  function = demangle(name->c_str());
  return true;
}

bool is_library_frame(const std::string& function) {
  // Everything in namespace mutagrad (the library's ops, including their anonymous helpers) and
  // the standard library's call wrappers (std::function, std::invoke).
  // A template's demangled name starts with its return type ("void mutagrad::f<...>(...)"),
  // which may itself hold parentheses ("decltype(auto) mutagrad::dispatch<...>(...)").
  constexpr const char kDecltypeAuto[] = "decltype(auto) ";
  const std::string rest =
      function.rfind(kDecltypeAuto, 0) == 0 ? function.substr(sizeof kDecltypeAuto - 1) : function;
  const std::string name = rest.substr(0, rest.find('('));
  const size_t space = name.find(' ');
  const std::string qualified =
      space != std::string::npos && name.find('<') > space ? name.substr(space + 1) : name;
  static constexpr const char* kPrefixes[] = {"mutagrad::", "std::", "__"};
  for (const char* p : kPrefixes) {
    if (qualified.rfind(p, 0) == 0) return true;
  }
  return false;
}

std::string public_op_name(const std::string& function) {
  for (const char* prefix : {"mutagrad::Tensor::", "mutagrad::"}) {
    const size_t n = std::strlen(prefix);
    if (function.rfind(prefix, 0) != 0) continue;
    size_t end = n;
    while (end < function.size() &&
           (std::isalnum(static_cast<unsigned char>(function[end])) || function[end] == '_')) {
      ++end;
    }
    if (end == n || end >= function.size() || function[end] != '(') continue;
    if (std::isupper(static_cast<unsigned char>(function[n]))) continue;  // a class or ctor
    return function.substr(n, end - n);
  }
  return "";
}

}  // namespace detail

StackTrace StackTrace::capture() {
  StackTrace st;
  st.size_ = backtrace(st.frames_, kMaxFrames);
  return st;
}

std::string StackTrace::user_frame() const {
  // Frame 0 is capture() itself. A return address points after the call: look up address - 1
  // so that a call ending a function is named by the caller's symbol.
  for (int i = 1; i < size_; ++i) {
    const void* pc = static_cast<const char*>(frames_[i]) - 1;
    std::string function, binary;
    uintptr_t offset = 0;
    if (!detail::symbolize(pc, function, binary, offset)) continue;
    if (function.empty() || detail::is_library_frame(function)) continue;
    char hex[32];
    std::snprintf(hex, sizeof hex, "0x%zx", static_cast<size_t>(offset));
    const size_t slash = binary.rfind('/');
    return function + " (" + (slash == std::string::npos ? binary : binary.substr(slash + 1)) +
           "+" + hex + ")";
  }
  return "";
}

std::string StackTrace::public_op() const {
  std::string best;
  bool inside = false;  // past the caller's own frames (the tracer asking, the read hook)
  for (int i = 1; i < size_; ++i) {
    const void* pc = static_cast<const char*>(frames_[i]) - 1;
    std::string function, binary;
    uintptr_t offset = 0;
    if (!detail::symbolize(pc, function, binary, offset) || function.empty()) continue;
    // capture() itself: frame 1 where backtrace() is intercepted (ASan adds the interceptor's
    // frame 0), else already skipped; it must not count as the first library frame.
    if (function.rfind("mutagrad::autograd::StackTrace::", 0) == 0) continue;
    const bool program = !detail::is_library_frame(function) ||
                         function.rfind("mutagrad::func::", 0) == 0 ||
                         function.rfind("mutagrad::python::", 0) == 0;
    if (program && !inside) continue;
    if (program) break;
    inside = true;
    if (const std::string op = detail::public_op_name(function); !op.empty()) best = op;
  }
  return best;
}

}  // namespace mutagrad::autograd
