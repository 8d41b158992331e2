"""Writes the relocatable mutagrad C++ distribution (see dist.bzl) from a manifest:

    header <path in the project> <path to read>   (every project header of the deps)
    archive <path>                                 (the project's static archives, PIC)
    linkflag <flag>                                (the deps' link flags: -lgvc, -lpthread)
    root <path in the project>                     (the public headers to start from)

Run by Bazel (//packaging:dist); stops with a message on a header it cannot resolve and on any
output that names the build tree.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

# An include written the project's way ("tensor/tensor.h"), in a directive or in a comment.
INCLUDE = re.compile(r'#(\s*)include "([^"]+)"')


def fail(message):
    sys.exit("make_dist.py: " + message)


def read_manifest(path):
    headers, archives, flags, roots = {}, [], [], []
    with open(path) as f:
        for line in f:
            kind, _, rest = line.rstrip("\n").partition(" ")
            if kind == "header":
                rel, src = rest.split(" ", 1)
                headers[rel] = src
            elif kind == "archive":
                archives.append(rest)
            elif kind == "linkflag":
                flags.append(rest)
            elif kind == "root":
                roots.append(rest)
    return headers, archives, flags, roots


def public_headers(headers, roots):
    """The headers reachable from roots through quoted includes, in walk order."""
    seen, stack = [], list(reversed(roots))
    while stack:
        rel = stack.pop()
        if rel in seen:
            continue
        if rel not in headers:
            fail(f"{rel} is not a header of the packaged libraries")
        seen.append(rel)
        with open(headers[rel]) as f:
            for line in f:
                m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
                if m:
                    if m.group(1) not in headers:
                        fail(f'{rel} includes "{m.group(1)}", which is not a header of the '
                             f"packaged libraries (add its library to the deps of :dist)")
                    stack.append(m.group(1))
    return seen


def install_headers(headers, public, out):
    for rel in public:
        with open(headers[rel]) as f:
            text = f.read()
        text = INCLUDE.sub(
            lambda m: f"#{m.group(1)}include <mutagrad/{m.group(2)}>"
            if m.group(2) in headers else m.group(0), text)
        dst = os.path.join(out, "include", "mutagrad", rel)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        with open(dst, "w") as f:
            f.write(text)


def run(*cmd):
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        fail(" ".join(cmd) + " failed:\n" + result.stdout + result.stderr)


def build_libraries(archives, flags, version, out):
    """libmutagrad.a and libmutagrad.so.<version>, both from one relocatable object: every
    object of every archive, so the self-registering backends (alwayslink in Bazel) are always
    in, whichever symbols a program uses."""
    lib = os.path.join(out, "lib")
    os.makedirs(lib, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        obj = os.path.join(tmp, "mutagrad.o")
        run("ld", "-r", "-o", obj, "--whole-archive", *archives, "--no-whole-archive")
        run("ar", "rcsD", os.path.join(lib, "libmutagrad.a"), obj)
        soname = f"libmutagrad.so.{version}"
        run("g++", "-shared", "-o", os.path.join(lib, soname), f"-Wl,-soname,{soname}",
            "-Wl,--no-undefined", obj, *flags)


PC = """\
# mutagrad {version}: pkg-config --cflags --libs mutagrad. C++17 (-std=c++17 or later).
# The public headers also include Boost.Container (header-only; Debian: libboost-dev).
# libmutagrad.so is not on the default library path: add -Wl,-rpath,${{libdir}} or set
# LD_LIBRARY_PATH. Static linking: ${{libdir}}/libmutagrad.a and pkg-config --static --libs.
prefix=${{pcfiledir}}/../..
libdir=${{prefix}}/lib
includedir=${{prefix}}/include

Name: mutagrad
Description: Tensors with an autograd-aware mutation engine
Version: {version}
Libs: -L${{libdir}} -lmutagrad
Libs.private: {private}
Cflags: -I${{includedir}}
"""

CONFIG = """\
# mutagrad {version}: find_package(mutagrad REQUIRED) defines
#   mutagrad::mutagrad         libmutagrad.so (the usual choice)
#   mutagrad::mutagrad_static  libmutagrad.a, with the system libraries it needs
# Both carry the include directory (#include <mutagrad/mutagrad.h>) and require C++17.
# Relocatable: everything is found relative to this file.
get_filename_component(_mutagrad_prefix "${{CMAKE_CURRENT_LIST_DIR}}/../../.." ABSOLUTE)

include(CMakeFindDependencyMacro)
find_dependency(Threads)
# The public headers include Boost.Container (header-only).
find_dependency(Boost 1.74)

if(NOT TARGET mutagrad::mutagrad)
  add_library(mutagrad::mutagrad SHARED IMPORTED)
  set_target_properties(mutagrad::mutagrad PROPERTIES
    IMPORTED_LOCATION "${{_mutagrad_prefix}}/lib/libmutagrad.so.{version}"
    IMPORTED_SONAME "libmutagrad.so.{version}"
    INTERFACE_INCLUDE_DIRECTORIES "${{_mutagrad_prefix}}/include"
    INTERFACE_COMPILE_FEATURES cxx_std_17
    INTERFACE_LINK_LIBRARIES "Boost::headers;Threads::Threads")

  add_library(mutagrad::mutagrad_static STATIC IMPORTED)
  set_target_properties(mutagrad::mutagrad_static PROPERTIES
    IMPORTED_LOCATION "${{_mutagrad_prefix}}/lib/libmutagrad.a"
    IMPORTED_LINK_INTERFACE_LANGUAGES CXX
    INTERFACE_INCLUDE_DIRECTORIES "${{_mutagrad_prefix}}/include"
    INTERFACE_COMPILE_FEATURES cxx_std_17
    INTERFACE_LINK_LIBRARIES "Boost::headers;{static_libs}")
endif()

unset(_mutagrad_prefix)
"""

CONFIG_VERSION = """\
# find_package(mutagrad <version>): before 1.0 every minor release may change the API, so
# {version} satisfies a request for the same MAJOR.MINOR and a patch level up to its own.
set(PACKAGE_VERSION "{version}")
if(PACKAGE_FIND_VERSION_RANGE)
  if(PACKAGE_VERSION VERSION_GREATER_EQUAL PACKAGE_FIND_VERSION_MIN AND
     (PACKAGE_FIND_VERSION_RANGE_MAX STREQUAL "INCLUDE" AND
      PACKAGE_VERSION VERSION_LESS_EQUAL PACKAGE_FIND_VERSION_MAX OR
      PACKAGE_FIND_VERSION_RANGE_MAX STREQUAL "EXCLUDE" AND
      PACKAGE_VERSION VERSION_LESS PACKAGE_FIND_VERSION_MAX))
    set(PACKAGE_VERSION_COMPATIBLE TRUE)
  else()
    set(PACKAGE_VERSION_COMPATIBLE FALSE)
  endif()
elseif(PACKAGE_VERSION VERSION_LESS PACKAGE_FIND_VERSION)
  set(PACKAGE_VERSION_COMPATIBLE FALSE)
elseif(PACKAGE_FIND_VERSION_MAJOR STREQUAL "{major}" AND
       ("{major}" STRGREATER "0" OR PACKAGE_FIND_VERSION_MINOR STREQUAL "{minor}"))
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
  if(PACKAGE_FIND_VERSION STREQUAL PACKAGE_VERSION)
    set(PACKAGE_VERSION_EXACT TRUE)
  endif()
else()
  set(PACKAGE_VERSION_COMPATIBLE FALSE)
endif()
# A 64-bit library.
if(NOT CMAKE_SIZEOF_VOID_P STREQUAL "" AND NOT CMAKE_SIZEOF_VOID_P STREQUAL "8")
  set(PACKAGE_VERSION "${{PACKAGE_VERSION}} (64bit)")
  set(PACKAGE_VERSION_UNSUITABLE TRUE)
endif()
"""


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def cmake_link_item(flag):
    return "Threads::Threads" if flag in ("-lpthread", "-pthread") else flag


def write_package_files(flags, version, out):
    major, minor = version.split(".")[:2]
    write(os.path.join(out, "lib", "pkgconfig", "mutagrad.pc"),
          PC.format(version=version, private=" ".join(flags)))
    static_libs = ";".join(dict.fromkeys(cmake_link_item(f) for f in flags))
    cmake = os.path.join(out, "lib", "cmake", "mutagrad")
    write(os.path.join(cmake, "mutagradConfig.cmake"),
          CONFIG.format(version=version, static_libs=static_libs))
    write(os.path.join(cmake, "mutagradConfigVersion.cmake"),
          CONFIG_VERSION.format(version=version, major=major, minor=minor))


def check_no_build_paths(out, forbidden):
    """No installed text file may name the build tree (execroot, sandbox, checkout)."""
    for dirpath, _, files in os.walk(out):
        for name in files:
            path = os.path.join(dirpath, name)
            if name.endswith((".a", ".so")) or ".so." in name:
                continue
            with open(path, errors="replace") as f:
                text = f.read()
            for word in forbidden:
                if word in text:
                    fail(f"{os.path.relpath(path, out)} names the build tree ({word!r})")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--manifest", required=True)
    parser.add_argument("--version", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    headers, archives, flags, roots = read_manifest(args.manifest)
    if not archives:
        fail("no project archives in the manifest")
    install_headers(headers, public_headers(headers, roots), args.out)
    build_libraries(archives, flags, args.version, args.out)
    write_package_files(flags, args.version, args.out)
    checkout = os.path.dirname(os.path.realpath(headers[roots[0]]))
    check_no_build_paths(args.out, ["bazel-out", "execroot", os.getcwd(), checkout])


if __name__ == "__main__":
    main()
