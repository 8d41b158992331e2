"""Writes a wheel (PEP 427) from files given as --file PATH_IN_WHEEL=PATH_TO_READ.

Run by Bazel (packaging/wheel.bzl). Reproducible: entries sorted, fixed timestamps.
"""

import argparse
import base64
import hashlib
import zipfile

METADATA = """\
Metadata-Version: 2.1
Name: mutagrad
Version: {version}
Summary: Tensors with an autograd-aware mutation engine (PyTorch's names)
Requires-Python: ==3.11.*
Provides-Extra: numpy
Requires-Dist: numpy; extra == "numpy"
"""

WHEEL = """\
Wheel-Version: 1.0
Generator: mutagrad make_wheel.py
Root-Is-Purelib: false
Tag: {tag}
"""


def record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--version", required=True)
    parser.add_argument("--tag", required=True)
    parser.add_argument("--file", action="append", default=[])
    args = parser.parse_args()

    entries = {}
    for spec in args.file:
        dst, src = spec.split("=", 1)
        with open(src, "rb") as f:
            entries[dst] = f.read()
    info = f"mutagrad-{args.version}.dist-info"
    entries[f"{info}/METADATA"] = METADATA.format(version=args.version).encode()
    entries[f"{info}/WHEEL"] = WHEEL.format(tag=args.tag).encode()
    entries[f"{info}/top_level.txt"] = b"mutagrad\n"
    record = [record_line(p, d) for p, d in sorted(entries.items())] + [f"{info}/RECORD,,"]
    entries[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()

    with zipfile.ZipFile(args.out, "w", zipfile.ZIP_DEFLATED) as whl:
        for path in sorted(entries, key=lambda p: (p.startswith(info), p)):
            item = zipfile.ZipInfo(path, date_time=(1980, 1, 1, 0, 0, 0))
            item.compress_type = zipfile.ZIP_DEFLATED
            executable = path.endswith(".so")
            item.external_attr = (0o100755 if executable else 0o100644) << 16
            whl.writestr(item, entries[path])


if __name__ == "__main__":
    main()
