"""Shared helpers of the schema scripts: locate the pinned protoc and the include roots.

Nothing is fetched: `google/api/*.proto` come from the installed googleapis-common-protos wheel,
the well-known types from grpcio-tools; `buf/validate/validate.proto` (protovalidate's rules),
which no wheel of the google.protobuf line ships, is vendored in third_party/protovalidate.
This module is imported by `scripts/generate` and `scripts/check-proto`; it is not part of the
installed package.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PROTO_PACKAGE_DIR = Path("projectops") / "v1"
# protovalidate's validate.proto, vendored (third_party/protovalidate/README.md says which version).
VENDORED_ROOT = REPO / "third_party" / "protovalidate"
BUF_VALIDATE_PROTO = "buf/validate/validate.proto"
# Descriptor set with source info, shipped as package data: runtime descriptors carry no comments.
DESCRIPTOR_SET_NAME = "projectops.binpb"


def ensure_dev_python(module: str = "grpc_tools", distribution: str = "grpcio-tools") -> None:
    """Re-run the calling script with the repo's `.venv` interpreter if `module` (of the
    `distribution`) cannot be imported here; exit with one line if it is missing there too.

    Only a script of `scripts/` is re-run: imported by anything else (a test run by another
    interpreter), it raises ``ImportError`` rather than replace that process."""
    try:
        importlib.import_module(module)
    except ImportError:
        message = f"{distribution} is not installed; run `pip install -e '.[dev]'` first"
        running = Path(sys.argv[0]).resolve() if sys.argv and sys.argv[0] else None
        if running is None or not running.is_file() or running.parent != REPO / "scripts":
            raise ImportError(message) from None
        venv_python = REPO / ".venv" / "bin" / "python"
        if venv_python.exists() and Path(sys.executable) != venv_python:
            os.execv(str(venv_python), [str(venv_python), *sys.argv])
        sys.exit(f"error: {message}")


def include_roots() -> list[Path]:
    """The -I roots for protoc: googleapis-common-protos' and grpcio-tools' .proto sources and
    the vendored protovalidate."""
    import google.api.annotations_pb2 as annotations
    import grpc_tools

    googleapis_root = Path(annotations.__file__).resolve().parent.parent.parent
    wkt_root = Path(grpc_tools.__file__).resolve().parent / "_proto"
    return [googleapis_root, wkt_root, VENDORED_ROOT]


def proto_files(proto_root: Path) -> list[str]:
    """Our .proto files, relative to `proto_root`, sorted so every run passes the same order."""
    return sorted(
        p.relative_to(proto_root).as_posix()
        for p in (proto_root / PROTO_PACKAGE_DIR).glob("*.proto")
    )


def protoc(proto_root: Path, args: list[str], files: list[str] | None = None) -> None:
    """Run grpcio-tools' protoc on `files` (default: our files) with the include roots; exit on
    failure."""
    from grpc_tools import protoc as grpc_protoc

    includes = [f"-I{proto_root}", *(f"-I{root}" for root in include_roots())]
    argv = ["protoc", *includes, *args, *(proto_files(proto_root) if files is None else files)]
    if grpc_protoc.main(argv) != 0:
        sys.exit(f"error: protoc failed: {' '.join(argv)}")


def build_image(proto_root: Path, out: Path) -> None:
    """Write a buf-compatible image (a FileDescriptorSet with imports and source info)."""
    protoc(
        proto_root, ["--include_imports", "--include_source_info", f"--descriptor_set_out={out}"]
    )


def buf_binary() -> str:
    """Path of the pinned `buf` binary installed by the `buf-bin` wheel."""
    candidate = Path(sys.executable).parent / "buf"
    if candidate.exists():
        return str(candidate)
    sys.exit("error: buf is not installed; run `pip install -e '.[dev]'` first")


def run_together(commands: dict[str, list[str]], cwd: Path, timeout: float = 300.0) -> list[str]:
    """Run `commands` (name -> argv) at once; return the names of those that failed.

    Each one's output (stdout and stderr as one stream, in its own order) is printed to stdout
    after it ends, whole and in the order of `commands`, so the outputs never interleave. Any
    still running `timeout` seconds after the start (one deadline for all) is killed, says so
    on stderr and counts as failed.
    """
    started: dict[str, subprocess.Popen[str]] = {}
    try:
        for name, argv in commands.items():
            started[name] = subprocess.Popen(
                argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
            )
        deadline = time.monotonic() + timeout
        failed = []
        for name, process in started.items():
            try:
                out, _ = process.communicate(timeout=max(0.0, deadline - time.monotonic()))
                late = False
            except subprocess.TimeoutExpired:  # also raised at once, unread, past the deadline
                late = process.poll() is None
                if late:
                    process.kill()
                out, _ = process.communicate()
            sys.stdout.write(out)
            sys.stdout.flush()
            if late:
                print(f"error: {name} did not finish within {timeout:g} s", file=sys.stderr)
            if late or process.returncode != 0:
                failed.append(name)
        return failed
    finally:
        for process in started.values():
            if process.poll() is None:
                process.kill()
                process.wait()
