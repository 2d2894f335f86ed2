"""The schema gates bite: stale generated code, an undocumented field, a breaking change."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))
import protolib  # noqa: E402

RUM = Path("proto/projectops/v1/rum_environment.proto")


def run(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(REPO / "scripts" / script), *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    """A scratch copy of the schema, the config and the committed generated code."""
    shutil.copytree(REPO / "proto", tmp_path / "proto")
    shutil.copy(REPO / "buf.yaml", tmp_path / "buf.yaml")
    shutil.copytree(
        REPO / "src" / "projectops" / "v1",
        tmp_path / "src" / "projectops" / "v1",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    return tmp_path


SESSION_COUNT = "  int64 session_count = 4 [(buf.validate.field).int64.gte = 0];"


def edit(root: Path, old: str, new: str) -> None:
    path = root / RUM
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


@pytest.mark.slow
def test_committed_generated_code_is_current() -> None:
    result = run("generate", "--check")
    assert result.returncode == 0, result.stderr


@pytest.mark.slow
def test_generate_check_names_stale_files(copy: Path) -> None:
    edit(
        copy,
        SESSION_COUNT,
        SESSION_COUNT + "\n  // A new count.\n  int64 page_view_count = 5;",
    )
    (copy / "src/projectops/v1/stray_pb2.py").write_text("")
    result = run("generate", "--check", "--root", str(copy))
    assert result.returncode == 1
    assert "src/projectops/v1/rum_environment_pb2.py" in result.stderr
    assert "src/projectops/v1/rum_environment_pb2.pyi" in result.stderr
    assert "src/projectops/v1/projectops.binpb" in result.stderr
    assert "src/projectops/v1/stray_pb2.py" in result.stderr
    assert "operations_pb2.py" not in result.stderr


@pytest.mark.slow
def test_generation_is_deterministic(copy: Path) -> None:
    assert run("generate", "--root", str(copy)).returncode == 0
    assert run("generate", "--check", "--root", str(copy)).returncode == 0
    for name in (
        "v1/release_pb2.py",
        "v1/release_pb2.pyi",
        "v1/projectops.binpb",
        "client/_services.py",
        "server/_services.py",
    ):
        assert (copy / "src/projectops" / name).read_bytes() == (
            REPO / "src/projectops" / name
        ).read_bytes()


@pytest.mark.slow
def test_gates_pass_on_the_committed_schema() -> None:
    result = run("check-proto")
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.slow
def test_an_undocumented_field_fails_lint(copy: Path) -> None:
    edit(
        copy,
        SESSION_COUNT,
        SESSION_COUNT + "\n  int64 page_views = 5;",
    )
    result = run("check-proto", "--root", str(copy))
    assert result.returncode == 1
    assert 'Field "page_views" should have a non-empty comment' in result.stdout
    assert "buf lint" in result.stderr and "buf breaking" not in result.stderr


@pytest.mark.slow
def test_a_documented_added_field_passes(copy: Path) -> None:
    edit(
        copy,
        SESSION_COUNT,
        SESSION_COUNT + "\n  // Page views in the last 30 days. Zero when none.\n"
        "  int64 page_view_count = 5;",
    )
    result = run("check-proto", "--root", str(copy))
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.slow
def test_renaming_a_released_field_fails_breaking(copy: Path) -> None:
    edit(copy, "first_seen_time = 2;", "first_seen = 2;")
    result = run("check-proto", "--root", str(copy))
    assert result.returncode == 1
    assert 'changed name from "first_seen_time" to "first_seen"' in result.stdout
    assert 'changed option "json_name" from "firstSeenTime"' in result.stdout
    assert "buf breaking" in result.stderr


@pytest.mark.slow
def test_renumbering_a_released_field_fails_breaking(copy: Path) -> None:
    edit(copy, "int64 session_count = 4 [", "int64 session_count = 9 [")
    result = run("check-proto", "--root", str(copy))
    assert result.returncode == 1
    assert "buf breaking" in result.stderr
    assert '"4" with name "session_count"' in result.stdout or "deleted" in result.stdout


@pytest.mark.slow
def test_misformatted_proto_fails_format(copy: Path) -> None:
    edit(
        copy,
        SESSION_COUNT,
        SESSION_COUNT.replace(" session_count = 4", "    session_count   =   4"),
    )
    result = run("check-proto", "--root", str(copy))
    assert result.returncode == 1
    assert "buf format" in result.stderr


@pytest.mark.slow
def test_breaking_against_a_git_ref(copy: Path) -> None:
    git = ["git", "-C", str(copy), "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "proto"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "released"], check=True)
    assert run("check-proto", "--root", str(copy), "--against-ref", "HEAD").returncode == 0
    edit(copy, "first_seen_time = 2;", "first_seen = 2;")
    result = run("check-proto", "--root", str(copy), "--against-ref", "HEAD")
    assert result.returncode == 1
    assert 'changed name from "first_seen_time" to "first_seen"' in result.stdout
    missing = run("check-proto", "--root", str(copy), "--against-ref", "no-such-ref")
    assert missing.returncode == 1 and "cannot read proto/ at no-such-ref" in missing.stderr


@pytest.mark.slow
def test_the_gates_run_at_once_and_print_each_output_whole_in_order(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    py = sys.executable
    commands = {
        "late": [py, "-c", "import time; print('late: began', flush=True); time.sleep(30)"],
        "fails": [
            py,
            "-c",
            "import sys; print('fails: out', flush=True); sys.stderr.write('fails: err\\n');"
            " sys.exit(1)",
        ],
        "passes": [py, "-c", "print('passes: out')"],
    }
    assert protolib.run_together(commands, cwd=tmp_path, timeout=1.0) == ["late", "fails"]
    out, err = capfd.readouterr()
    assert out.splitlines() == ["late: began", "fails: out", "fails: err", "passes: out"]
    assert err.splitlines() == ["error: late did not finish within 1 s"]


def test_a_script_module_imported_elsewhere_never_replaces_the_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A test run by another interpreter imports codegen: it must fail there, not re-exec.
    monkeypatch.setattr(sys, "argv", [str(REPO / "tests" / "runner")])
    with pytest.raises(ImportError, match="no-such-dist is not installed"):
        protolib.ensure_dev_python("no_such_module_here", "no-such-dist")
    # A script of scripts/ still exits with one line when .venv lacks it too.
    monkeypatch.setattr(sys, "argv", [str(REPO / "scripts" / "generate")])
    monkeypatch.setattr(sys, "executable", str(REPO / ".venv" / "bin" / "python"))
    with pytest.raises(SystemExit, match="error: no-such-dist is not installed"):
        protolib.ensure_dev_python("no_such_module_here", "no-such-dist")


@pytest.mark.slow
def test_a_rule_that_does_not_compile_fails_lint(copy: Path) -> None:
    """buf lint's PROTOVALIDATE (in STANDARD) checks every rule against its field: a string
    rule on a count fails the schema gates (a CEL expression that does not compile too)."""
    edit(copy, "[(buf.validate.field).int64.gte = 0]", "[(buf.validate.field).string.min_len = 1]")
    result = run("check-proto", "--root", str(copy))
    assert result.returncode == 1
    assert "session_count" in result.stdout and "buf lint" in result.stderr
