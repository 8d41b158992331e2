"""mutagrad_wheel: a platform wheel of the mutagrad Python package (make_wheel.py writes it).

    mutagrad_wheel(
        name = "wheel",
        extension = ":mutagrad/_C.so",
        srcs = glob(["src/mutagrad/**/*.py"]),
        strip_prefix = "src/",
    )

makes bazel-bin/<package>/mutagrad-<version>-cp311-cp311-linux_x86_64.whl (under `subdir`
when given): the package's .py files, the extension as mutagrad/_C.so, and the dist-info
(METADATA, WHEEL, RECORD). The version is version.bzl's, the one compiled into _C.
"""

load("//:version.bzl", "MUTAGRAD_VERSION")

# The interpreter the extension is built for: Debian 12's /usr/bin/python3 (WORKSPACE @python).
PYTHON_TAG = "cp311"
PLATFORM_TAG = "linux_x86_64"

def _repo_relative(f):
    p = f.short_path
    if p.startswith("../"):
        p = p.split("/", 2)[2]
    return p

def _mutagrad_wheel_impl(ctx):
    name = "mutagrad-%s-%s-%s-%s.whl" % (MUTAGRAD_VERSION, PYTHON_TAG, PYTHON_TAG, PLATFORM_TAG)
    out = ctx.actions.declare_file(ctx.attr.subdir + "/" + name if ctx.attr.subdir else name)
    args = ctx.actions.args()
    args.add(ctx.file._script)
    args.add("--out", out)
    args.add("--version", MUTAGRAD_VERSION)
    args.add("--tag", "%s-%s-%s" % (PYTHON_TAG, PYTHON_TAG, PLATFORM_TAG))
    args.add("--file", "mutagrad/_C.so=" + ctx.file.extension.path)
    prefix = ctx.label.package + "/" + ctx.attr.strip_prefix
    for src in ctx.files.srcs:
        rel = _repo_relative(src)
        if not rel.startswith(prefix):
            fail("%s is not under %s" % (rel, prefix))
        args.add("--file", rel[len(prefix):] + "=" + src.path)
    ctx.actions.run(
        executable = "/usr/bin/python3",
        arguments = [args],
        inputs = ctx.files.srcs + [ctx.file.extension, ctx.file._script],
        outputs = [out],
        mnemonic = "MutagradWheel",
        progress_message = "Packaging %s" % out.short_path,
    )
    return [DefaultInfo(files = depset([out]))]

mutagrad_wheel = rule(
    implementation = _mutagrad_wheel_impl,
    attrs = {
        "extension": attr.label(allow_single_file = [".so"], mandatory = True),
        "srcs": attr.label_list(allow_files = [".py"]),
        "strip_prefix": attr.string(doc = "Removed from srcs' paths (relative to the package)."),
        "subdir": attr.string(doc = "Output directory under the package, if any."),
        "_script": attr.label(
            default = Label("//packaging:make_wheel.py"),
            allow_single_file = True,
        ),
    },
)
