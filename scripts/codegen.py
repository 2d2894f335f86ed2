"""Regenerate the Python bindings of proto/ into src/projectops/v1/ (never edit those by hand).

The module behind ``scripts/generate``.

Usage:
    scripts/generate            write *_pb2.py, *_pb2.pyi, projectops.binpb and __init__.py, and
                                the typed service bindings (client/_services.py,
                                server/_services.py; our own generator, scripts/bindings.py)
    scripts/generate --check    regenerate into a temporary folder; exit 1 and name every file
                                that differs from what is committed (stale, missing or extra)

Both exit 1 with one line per file if any generated module does not compile, and with the
interpreter's complaint if the generated modules do not import (in a fresh interpreter, from a
copy of the package), before anything is written to src/ (proto comments become docstrings;
scripts/bindings.py keeps them inert).

The generator is pinned in pyproject.toml (grpcio-tools' protoc, mypy-protobuf) and runs
offline: include roots come from the installed packages (see scripts/protolib.py).
"""

from __future__ import annotations

import argparse
import filecmp
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import protolib

protolib.ensure_dev_python()

import bindings  # noqa: E402
from google.protobuf import descriptor_pb2  # noqa: E402

from projectops._text import escape  # noqa: E402

#: Our generator's outputs, relative to src/: (module path, renderer).
BINDINGS = {
    "projectops/client/_services.py": bindings.render_client,
    "projectops/server/_services.py": bindings.render_server,
}

#: The packages of src/projectops the bindings land in.
BINDING_PACKAGES = ("client", "server")

INIT = '''"""Generated protobuf bindings of the `projectops.v1` proto package.

Made by scripts/generate from proto/projectops/v1/*.proto; never edit these files by hand.
"""
'''


def generate(proto_root: Path, out_root: Path) -> Path:
    """Generate into `out_root`/projectops/v1 and return that folder; the typed bindings go to
    `out_root`/bindings/projectops/{client,server}/_services.py.

    Exits (``SystemExit``, status 1, with a message) if protoc fails or a generated module does
    not compile.
    """
    plugin = Path(sys.executable).parent / "protoc-gen-mypy"
    target = out_root / protolib.PROTO_PACKAGE_DIR
    target.mkdir(parents=True, exist_ok=True)
    protolib.protoc(
        proto_root,
        [
            f"--plugin=protoc-gen-mypy={plugin}",
            f"--python_out={out_root}",
            "--mypy_opt=quiet",
            f"--mypy_out={out_root}",
        ],
    )
    protolib.protoc(
        proto_root,
        ["--include_source_info", f"--descriptor_set_out={target / protolib.DESCRIPTOR_SET_NAME}"],
    )
    (target / "__init__.py").write_text(INIT)
    files = descriptor_pb2.FileDescriptorSet.FromString(
        (target / protolib.DESCRIPTOR_SET_NAME).read_bytes()
    )
    package = protolib.PROTO_PACKAGE_DIR.as_posix().replace("/", ".")
    for rel, render in BINDINGS.items():
        out = out_root / "bindings" / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(render(files, package), encoding="utf-8")
    broken = syntax_errors(
        [
            *sorted(target.glob("*.py")),
            *sorted(target.glob("*.pyi")),
            *(out_root / "bindings" / rel for rel in BINDINGS),
        ]
    )
    if broken:
        # Never hand on modules that cannot be imported: the mock server and typed clients would
        # stop importing while the drift check still found them "current".
        sys.exit("error: generated code does not compile:\n" + "\n".join(broken))
    return target


def syntax_errors(paths: list[Path]) -> list[str]:
    """One line per file of `paths` that is not valid Python (``compile`` fails): its path and
    the compiler's complaint, escaped. Empty when all compile."""
    out = []
    for path in paths:
        try:
            compile(path.read_bytes(), str(path), "exec", dont_inherit=True)
        except (SyntaxError, ValueError) as exc:
            out.append(f"  {path}: {escape(str(exc))}")
    return out


def import_errors(src: Path, out_root: Path) -> str | None:
    """Import what :func:`generate` wrote to `out_root` in a fresh interpreter, as the package
    would hold it: a copy of `src`/projectops with the generated modules in place. None when
    every module imports; else the interpreter's complaint (last lines, escaped).

    Compiling is not enough: a module can be valid Python and still fail when imported (a bad
    name in a class body, a missing import), and the mock server and typed clients with it.
    """
    if not all((src / "projectops" / part / "__init__.py").is_file() for part in BINDING_PACKAGES):
        # A --root holding the protos and generated code only (as the gate tests make one):
        # this checkout's package around them.
        src = protolib.REPO / "src"
    with tempfile.TemporaryDirectory() as tmp:
        package = Path(tmp) / "projectops"
        shutil.copytree(src / "projectops", package, ignore=shutil.ignore_patterns("__pycache__"))
        shutil.rmtree(package / "v1")
        shutil.copytree(out_root / protolib.PROTO_PACKAGE_DIR, package / "v1")
        for rel in BINDINGS:
            shutil.copyfile(out_root / "bindings" / rel, Path(tmp) / rel)
        modules = [f"projectops.v1.{p.stem}" for p in sorted((package / "v1").glob("*_pb2.py"))]
        modules += [rel.removesuffix(".py").replace("/", ".") for rel in BINDINGS]
        probe = (
            "import importlib, sys\n"
            "sys.path.insert(0, sys.argv[1])\n"
            "import projectops\n"
            "assert projectops.__file__.startswith(sys.argv[1]), projectops.__file__\n"
            "for name in sys.argv[2:]:\n"
            "    importlib.import_module(name)\n"
        )
        try:
            run = subprocess.run(
                [sys.executable, "-c", probe, tmp, *modules],
                capture_output=True,
                text=True,
                timeout=120,
                cwd=tmp,
            )
        except subprocess.TimeoutExpired:
            return "importing the generated modules took over 120 s"
        if run.returncode == 0:
            return None
        return escape("\n".join(run.stderr.strip().splitlines()[-5:]))


def generated_files(folder: Path) -> set[str]:
    """The names of the files directly in `folder`."""
    return {p.name for p in folder.iterdir() if p.is_file()}


def _refuse_unimportable(src: Path, out_root: Path) -> None:
    problem = import_errors(src, out_root)
    if problem:
        sys.exit(f"error: generated code does not import:\n  {problem}")


def main() -> int:
    """Run ``scripts/generate [--check]``; the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if committed output is stale")
    parser.add_argument("--root", type=Path, default=protolib.REPO, help="repository root")
    args = parser.parse_args()
    proto_root = args.root / "proto"
    committed = args.root / "src" / protolib.PROTO_PACKAGE_DIR

    if not args.check:
        with tempfile.TemporaryDirectory() as tmp:
            fresh = generate(proto_root, Path(tmp))
            _refuse_unimportable(args.root / "src", Path(tmp))
            # Replace the whole folder so files of removed protos do not linger.
            if committed.exists():
                shutil.rmtree(committed)
            shutil.copytree(fresh, committed)
            for rel in BINDINGS:
                (args.root / "src" / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(Path(tmp) / "bindings" / rel, args.root / "src" / rel)
        print(f"generated {len(generated_files(committed)) + len(BINDINGS)} files")
        return 0

    with tempfile.TemporaryDirectory() as tmp:
        fresh = generate(proto_root, Path(tmp))
        _refuse_unimportable(args.root / "src", Path(tmp))
        have = generated_files(committed) if committed.exists() else set()
        want = generated_files(fresh)
        stale = sorted(
            name
            for name in have | want
            if name not in have
            or name not in want
            or not filecmp.cmp(committed / name, fresh / name, shallow=False)
        )
        stale = [f"{protolib.PROTO_PACKAGE_DIR.as_posix()}/{name}" for name in stale]
        for rel in BINDINGS:
            mine = args.root / "src" / rel
            if not mine.exists() or not filecmp.cmp(
                mine, Path(tmp) / "bindings" / rel, shallow=False
            ):
                stale.append(rel)
    if stale:
        print(
            "error: generated code is out of date; run scripts/generate. Differing files:",
            file=sys.stderr,
        )
        for name in stale:
            print(f"  src/{name}", file=sys.stderr)
        return 1
    print("generated code is current")
    return 0
