#include "autograd/render.h"

#if !__has_include(<graphviz/gvc.h>)
#error \
    "autograd/render.cc needs Graphviz's C library (cgraph + gvc): install Debian's \
libgraphviz-dev (./bazelw installs it: apt-get install libgraphviz-dev)"
#endif

#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>

#include <fstream>
#include <mutex>

#include "autograd/graph_export.h"
#include "tensor/error.h"

namespace mutagrad::autograd {
namespace {

// Note [Graphviz in process]
// Graphviz's library keeps global state (the error handler, the plugin list) and is not
// thread-safe, so every call holds one mutex. Errors reach us through agseterrf; the last
// message is put into the ValueError.
std::mutex& graphviz_mutex() {
  static std::mutex* mu = new std::mutex();
  return *mu;
}

std::string& last_error() {
  static std::string* message = new std::string();
  return *message;
}

// One Graphviz context for the process, made on first use and never freed: Graphviz 2.43 keeps
// a text-size cache across contexts that points into a freed context's plugin data (ASan:
// heap-use-after-free in libgvplugin_pango on the second render after a gvFreeContext).
GVC_t* graphviz_context() {
  static GVC_t* gvc = gvContext();
  return gvc;
}

int collect_error(char* message) {
  std::string& out = last_error();
  out += message;
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return 0;
}

}  // namespace

// Under LeakSanitizer (--config=asan): fontconfig and pango, which Graphviz's text layout loads,
// keep process-lifetime caches that LSan reports as leaks at exit. They are not ours; every
// program linking render (tests, examples) suppresses them here. Unused without LSan.
extern "C" const char* __lsan_default_suppressions() {
  return "leak:libfontconfig.so\nleak:libpango\nleak:libcairo\nleak:libglib\nleak:libgvc.so\n"
         "leak:libgvplugin\n";
}

std::string render_dot(const std::string& dot, const std::string& format) {
  std::lock_guard<std::mutex> lock(graphviz_mutex());
  last_error().clear();
  agseterrf(&collect_error);
  GVC_t* gvc = graphviz_context();
  Agraph_t* graph = agmemread(dot.c_str());
  if (graph == nullptr) {
    throw ValueError(str("render_dot: Graphviz cannot parse the DOT text (", last_error(),
                         "); pass the output of autograd::to_dot"));
  }
  if (gvLayout(gvc, graph, "dot") != 0) {
    agclose(graph);
    throw ValueError(str("render_dot: Graphviz's dot layout failed (", last_error(),
                         "); is the Graphviz dot layout plugin installed (libgvc6)?"));
  }
  char* data = nullptr;
  unsigned int length = 0;
  const int status = gvRenderData(gvc, graph, format.c_str(), &data, &length);
  std::string out = status == 0 && data != nullptr ? std::string(data, length) : std::string();
  if (data != nullptr) gvFreeRenderData(data);
  gvFreeLayout(gvc, graph);
  agclose(graph);
  if (status != 0) {
    throw ValueError(str("render_dot: Graphviz cannot write format '", format, "' (", last_error(),
                         "); use svg, png or another format of `dot -T?`"));
  }
  return out;
}

void render(TensorList roots, const std::string& path) {
  const size_t dot = path.rfind('.');
  const size_t slash = path.rfind('/');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash) ||
      dot + 1 == path.size()) {
    throw ValueError(str("render: the path '", path,
                         "' has no extension to name the format; use e.g. graph.svg or "
                         "graph.png"));
  }
  const std::string data = render_dot(to_dot(roots), path.substr(dot + 1));
  std::ofstream f(path, std::ios::binary);
  if (f) f.write(data.data(), static_cast<std::streamsize>(data.size()));
  if (!f) {
    throw ValueError(
        str("render: cannot write '", path, "'; pass a path in an existing, writable directory"));
  }
}

}  // namespace mutagrad::autograd
