"""A real build and install: the sdist and wheel build, and the wheel works where users install it.

`python -m build` makes the sdist and, from it, the wheel (so the sdist is complete enough to
build), with the build backend of the dev environment (``pip install -e .`` proves the isolated
build every run). The wheel is installed, not editable, into a fresh venv with protobuf,
googleapis-common-protos and httpx at the floors pyproject.toml declares; there the CLI answers,
`projectops operations` shows the proto comments (so the descriptor set with source info is in
the wheel), and the Python API's first example (docs/python.md) runs as written. The example
runs again in a venv of its own with the newest protobuf and googleapis-common-protos the range
admits.

Each test stands alone (pytest-xdist may run them on different workers); the build is once per
worker.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement

import projectops

REPO = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
VERSION = PROJECT["version"]

pytestmark = pytest.mark.slow


def floor_pins() -> list[str]:
    """``name==floor`` of the core's and the `client` extra's dependencies."""
    pins = []
    for line in PROJECT["dependencies"] + PROJECT["optional-dependencies"]["client"]:
        requirement = Requirement(line)
        (lower,) = [s.version for s in requirement.specifier if s.operator == ">="]
        pins.append(f"{requirement.name}=={lower}")
    return pins


#: The environment of every process started here: no PYTHONPATH, so a venv's python imports its
#: own installed copy only (also when this suite runs from a copy of the repository).
ENV = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}


def run(*argv: str | Path, cwd: Path = REPO, timeout: float = 600) -> str:
    result = subprocess.run(
        [str(a) for a in argv],
        cwd=cwd,
        env=ENV,
        capture_output=True,
        text=True,
        check=False,
        timeout=timeout,
    )
    assert result.returncode == 0, f"{argv}\n{result.stdout}\n{result.stderr}"
    return result.stdout


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    build = [sys.executable, "-m", "build", "--no-isolation", "--sdist", "--wheel"]
    run(*build, "--outdir", out, REPO)
    return out


@pytest.fixture(scope="module")
def wheel(dist: Path) -> Path:
    (found,) = dist.glob(f"projectops-{VERSION}-py3-none-any.whl")
    return found


def venv_with(root: Path, *requirements: str | Path) -> Path:
    """A fresh venv at `root` with `requirements` installed, by uv (a tenth of pip's time;
    the resolution of exact pins is the same)."""
    uv = Path(sys.executable).with_name("uv")
    run(uv, "venv", "--quiet", "--python", sys.executable, root)
    run(uv, "pip", "install", "--quiet", "--python", root / "bin" / "python", *requirements)
    return root


def test_the_wheel_holds_the_typing_markers_stubs_and_descriptor_set(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "projectops/py.typed" in names
    assert "projectops/v1/projectops.binpb" in names
    for module in sorted(path.stem for path in (REPO / "proto/projectops/v1").glob("*.proto")):
        assert f"projectops/v1/{module}_pb2.py" in names
        assert f"projectops/v1/{module}_pb2.pyi" in names
    assert not [n for n in names if "__pycache__" in n or n.startswith("tests/")]


def test_the_sdist_holds_the_schema(dist: Path) -> None:
    (sdist,) = dist.glob(f"projectops-{VERSION}.tar.gz")
    names = {n.split("/", 1)[1] for n in tarfile.open(sdist).getnames() if "/" in n}
    for name in (
        "proto/projectops/v1/operations.proto",
        "proto/released.binpb",
        "buf.yaml",
        "README.md",
        "pyproject.toml",
        "src/projectops/v1/projectops.binpb",
    ):
        assert name in names


def test_the_wheel_works_at_the_floors(tmp_path: Path, wheel: Path) -> None:
    """The wheel (and its `client` extra) in a venv where every dependency is at its floor."""
    venv = venv_with(tmp_path / "venv", f"{wheel}[client]", *floor_pins())
    listing = "import importlib.metadata as m\nfor d in m.distributions(): print(d.name, d.version)"
    installed = run(venv / "bin" / "python", "-c", listing, cwd=venv)
    versions = dict(line.split() for line in installed.splitlines())
    for pin in floor_pins():
        name, floor = pin.split("==")
        assert versions[name] == floor or versions[name].startswith(floor + "."), (pin, versions)
    # Not editable: the package is a copy in the venv's site-packages.
    location = run(
        venv / "bin" / "python", "-c", "import projectops; print(projectops.__file__)", cwd=venv
    )
    assert location.startswith(str(venv)), location

    assert run(venv / "bin" / "projectops", "--version", cwd=venv).strip() == (
        f"projectops {VERSION}"
    )
    listing = run(venv / "bin" / "projectops", "operations", cwd=venv)
    # The proto comments come from the descriptor set with source info shipped in the wheel.
    for op in projectops.operations():
        assert op.tool_name in listing and op.path in listing, op.name
    assert projectops.operations()[0].summary in listing

    check_example(venv)


def python_block(page: str, heading: str) -> str:
    """The first ```python block (```python test too) of `page` after the line `heading`."""
    text = (REPO / page).read_text()
    example = re.search(rf"^{re.escape(heading)}\n.*?```python[^\n]*\n(.*?)```", text, re.S | re.M)
    assert example, (page, heading)
    return example.group(1)


def readme_example() -> str:
    """The Python API's first example: messages, the registry and the codec."""
    return python_block("docs/python.md", "## Messages, the registry and the codec")


def check_example(venv: Path) -> None:
    """The Python API's first example (docs/python.md) runs as written with the venv's python."""
    # cwd is the checkout (the example opens a golden file), which has no importable
    # `projectops` at its top: the import below is the installed wheel's.
    where = "import projectops, sys; print(projectops.__file__, file=sys.stderr)\n"
    result = subprocess.run(
        [str(venv / "bin" / "python"), "-W", "error", "-c", where + readme_example()],
        cwd=REPO,
        env=ENV,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr.startswith(str(venv)), result.stderr
    lines = result.stdout.splitlines()
    assert lines[:2] == ["1.4.0", "9007199254740993"]


def test_the_readme_example_runs_on_the_newest_protobuf(tmp_path: Path, wheel: Path) -> None:
    (protobuf,) = [r for r in PROJECT["dependencies"] if r.startswith("protobuf")]
    venv = venv_with(tmp_path / "venv", wheel, "--upgrade", protobuf, "googleapis-common-protos")
    version = run(
        venv / "bin" / "python",
        "-c",
        "import google.protobuf; print(google.protobuf.__version__)",
        cwd=venv,
    )
    assert int(version.split(".")[0]) >= 7, version
    check_example(venv)


def readme_plugin_example() -> str:
    """The README's example test of the pytest plugin."""
    return python_block("README.md", "## Test code that calls the API")


def test_the_testing_extra_registers_the_pytest_plugin(tmp_path: Path, wheel: Path) -> None:
    """A user's test, the README's, passes in a venv with only the wheel's `testing` extra: the
    `pytest11` entry point gives it the `projectops_mock` fixture without any configuration."""
    venv = venv_with(tmp_path / "venv", f"{wheel}[testing]")
    user = tmp_path / "user"
    user.mkdir()
    (user / "test_user.py").write_text(readme_plugin_example())
    out = run(venv / "bin" / "python", "-m", "pytest", "-q", "-p", "no:cacheprovider", cwd=user)
    assert "1 passed" in out, out


def buf_package(root: Path) -> Path:
    """A wheel of "buf's own generated package" as the BSR's Python SDK or protovalidate 1.x's
    environment have it: ``buf/validate/validate_pb2.py`` (namespace packages, no
    ``__init__``), compiled by protoc from a validate.proto that differs from ours (one message
    more), as another release of protovalidate would."""
    from grpc_tools import protoc

    proto = root / "proto" / "buf" / "validate" / "validate.proto"
    proto.parent.mkdir(parents=True)
    vendored = REPO / "third_party" / "protovalidate" / "buf" / "validate" / "validate.proto"
    proto.write_text(
        vendored.read_text() + "\n// Not in ours: another release.\nmessage OtherRelease {}\n"
    )
    project = root / "project"
    project.mkdir()
    wkt = Path(protoc.__file__).parent / "_proto"
    assert (
        protoc.main(
            ["protoc", f"-I{root / 'proto'}", f"-I{wkt}", f"--python_out={project}", str(proto)]
        )
        == 0
    )
    (project / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["hatchling"]\nbuild-backend = "hatchling.build"\n'
        '[project]\nname = "buf-validate-generated"\nversion = "1.0"\n'
        '[tool.hatch.build.targets.wheel]\npackages = ["buf"]\n'
    )
    run(sys.executable, "-m", "build", "--no-isolation", "--wheel", "--outdir", root, project)
    (found,) = root.glob("buf_validate_generated-*.whl")
    return found


COEXIST = """
import sys
first = sys.argv[1]
if first == "buf":
    import buf.validate.validate_pb2 as theirs
import projectops
from projectops import rules
from projectops.v1 import buf_validate, release_pb2
from projectops.validation import rule_violations
if first != "buf":
    import buf.validate.validate_pb2 as theirs
assert theirs.OtherRelease  # buf's package is the one loaded, ours did not replace it
assert not buf_validate.REGISTERED_HERE
fd = release_pb2.Release.DESCRIPTOR.fields_by_name["git_sha"]
print(rules.rule_kind(fd)[1].pattern)
found = rule_violations(release_pb2.Release(version="1", git_sha="xyz"))
print([(v.field, v.rule) for v in found])
"""


def test_the_wheel_installs_beside_bufs_own_buf_validate_package(
    tmp_path: Path, wheel: Path
) -> None:
    """Our validate.proto never clashes with buf's generated ``buf.validate`` package: both
    install (no file of one overwrites the other) and import in either order, and the rules
    are read and enforced (docs/contract.md §4.6; ARCHITECTURE.md, "Generated code")."""
    assert not [n for n in zipfile.ZipFile(wheel).namelist() if n.startswith("buf/")]
    theirs = buf_package(tmp_path / "buf")
    venv = venv_with(tmp_path / "venv", f"{wheel}[server]", theirs)
    for first in ("buf", "projectops"):
        out = run(venv / "bin" / "python", "-c", COEXIST, first, cwd=tmp_path).splitlines()
        assert out == ["^([0-9a-f]{40})?$", "[('gitSha', 'string.pattern')]"], (first, out)
