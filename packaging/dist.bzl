"""mutagrad_dist: the installable C++ distribution of some cc_library targets, as one directory.

    mutagrad_dist(
        name = "dist",
        deps = ["//:mutagrad", "//optim"],
        roots = ["mutagrad.h", "optim/optim.h"],
    )

makes bazel-bin/<package>/dist/, a relocatable tree (make_dist.py writes it):

    include/mutagrad/...               the project headers reachable from `roots`, their
                                       includes rewritten to <mutagrad/...>
    lib/libmutagrad.so.<version>       every project object file of `deps` (not the system
    lib/libmutagrad.a                  libraries), pre-linked into one relocatable object
    lib/pkgconfig/mutagrad.pc          prefix = ${pcfiledir}/../..
    lib/cmake/mutagrad/*.cmake         mutagrad::mutagrad (shared), mutagrad::mutagrad_static

The link flags of `deps` (-lgvc, -lpthread, ...) go into the .so's dependencies, the .pc's
Libs.private and the static CMake target. install.sh copies the tree to a prefix.
"""

load("//:version.bzl", "MUTAGRAD_VERSION")

def _repo_relative(f):
    # short_path is "tensor/tensor.h" in the main repository, "../mutagrad/tensor/tensor.h"
    # when this project is an external repository.
    p = f.short_path
    if p.startswith("../"):
        p = p.split("/", 2)[2]
    return p

def _mutagrad_dist_impl(ctx):
    repo = ctx.label.workspace_name
    headers = {}
    archives = {}
    link_flags = []
    for dep in ctx.attr.deps:
        cc = dep[CcInfo]
        for h in cc.compilation_context.headers.to_list():
            if h.is_source and h.owner.workspace_name == repo:
                headers[_repo_relative(h)] = h
        for linker_input in cc.linking_context.linker_inputs.to_list():
            for flag in linker_input.user_link_flags:
                if flag not in link_flags:
                    link_flags.append(flag)
            for lib in linker_input.libraries:
                archive = lib.pic_static_library or lib.static_library
                if archive and archive.owner.workspace_name == repo:
                    archives[archive.path] = archive

    manifest = ctx.actions.declare_file(ctx.label.name + ".manifest")
    lines = ["header %s %s" % (rel, f.path) for rel, f in sorted(headers.items())]
    lines += ["archive %s" % path for path in sorted(archives.keys())]
    lines += ["linkflag %s" % flag for flag in link_flags]
    lines += ["root %s" % root for root in ctx.attr.roots]
    ctx.actions.write(manifest, "\n".join(lines) + "\n")

    out = ctx.actions.declare_directory(ctx.label.name)
    ctx.actions.run(
        executable = "/usr/bin/python3",
        arguments = [
            ctx.file._script.path,
            "--manifest",
            manifest.path,
            "--version",
            MUTAGRAD_VERSION,
            "--out",
            out.path,
        ],
        inputs = [manifest, ctx.file._script] + headers.values() + archives.values(),
        outputs = [out],
        mnemonic = "MutagradDist",
        progress_message = "Packaging the mutagrad C++ distribution (%s)" % out.short_path,
        # ar, ld and g++ from PATH: the same system toolchain Bazel's cc rules use here.
        use_default_shell_env = True,
    )
    return [DefaultInfo(files = depset([out]), runfiles = ctx.runfiles(files = [out]))]

mutagrad_dist = rule(
    implementation = _mutagrad_dist_impl,
    attrs = {
        "deps": attr.label_list(providers = [CcInfo]),
        "roots": attr.string_list(doc = "Public headers; everything they include is installed."),
        "_script": attr.label(
            default = Label("//packaging:make_dist.py"),
            allow_single_file = True,
        ),
    },
)
