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


def test_protobuf_bound_admits_the_generated_codes_runtime_check() -> None:
    text = (REPO / "src/projectops/v1/operations_pb2.py").read_text()
    found = re.search(r"Domain\.PUBLIC,\s*(\d+),\s*(\d+),\s*(\d+),", text)
    assert found
    generated = Version(".".join(found.groups()))
    (protobuf,) = [
        Requirement(r) for r in PYPROJECT["project"]["dependencies"] if r.startswith("protobuf")
    ]
    # The runtime must be at least the gencode version and of the same major version.
    assert generated in protobuf.specifier
    assert Version(f"{generated.major + 1}.0") not in protobuf.specifier
    assert Version(f"{generated.major}.{generated.minor - 1}") not in protobuf.specifier


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
