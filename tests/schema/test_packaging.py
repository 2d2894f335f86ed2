"""The package metadata agrees with what the generated code and the README promise."""

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.version import Version

REPO = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())


def test_core_depends_only_on_protobuf_and_googleapis() -> None:
    names = {Requirement(r).name for r in PYPROJECT["project"]["dependencies"]}
    assert names == {"protobuf", "googleapis-common-protos"}


def generated_version() -> Version:
    text = (REPO / "src/projectops/v1/operations_pb2.py").read_text()
    found = re.search(r"Domain\.PUBLIC,\s*(\d+),\s*(\d+),\s*(\d+),", text)
    assert found
    return Version(".".join(found.groups()))


def dependency(name: str) -> Requirement:
    (found,) = [
        Requirement(r) for r in PYPROJECT["project"]["dependencies"] if Requirement(r).name == name
    ]
    return found


def floor(requirement: Requirement) -> Version:
    (lower,) = [Version(s.version) for s in requirement.specifier if s.operator == ">="]
    return lower


def test_protobuf_range_starts_at_the_generated_codes_runtime_check() -> None:
    generated = generated_version()
    protobuf = dependency("protobuf").specifier
    # The runtime must be at least the gencode version: the floor is exactly that version.
    assert floor(dependency("protobuf")) == generated
    assert Version(f"{generated.major}.{generated.minor - 1}") not in protobuf
    # A runtime accepts gencode of its own major version and of the one before, never older.
    assert Version(f"{generated.major}.{generated.minor + 5}") in protobuf
    assert Version(f"{generated.major + 1}.0") in protobuf  # 7.x, up to the newest release tested
    assert Version(f"{generated.major + 2}.0") not in protobuf


def test_the_floors_the_readme_promises() -> None:
    """The dependency floors are stated where users read them (README.md or a docs/ page)."""
    readme = "\n".join(
        path.read_text() for path in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    )
    readme = " ".join(readme.split())  # a wrapped sentence reads as one
    protobuf = dependency("protobuf")
    assert f"protobuf {floor(protobuf)}" in readme
    assert "up to 7.x" in readme
    googleapis = dependency("googleapis-common-protos")
    assert f"googleapis-common-protos {floor(googleapis)}" in readme


def test_generator_and_buf_are_pinned_exactly() -> None:
    dev = {
        Requirement(r).name: Requirement(r)
        for r in PYPROJECT["project"]["optional-dependencies"]["dev"]
    }
    for name in ("grpcio-tools", "mypy-protobuf", "buf-bin"):
        assert str(dev[name].specifier).startswith("=="), name


def test_readme_test_command_is_what_ci_runs() -> None:
    readme = (REPO / "README.md").read_text()
    assert "./scripts/test" in readme and "./scripts/demo" in readme
    assert "./scripts/test" in (REPO / ".ci/run").read_text()
