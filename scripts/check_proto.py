"""Schema gates: buf format, buf lint, buf breaking and the API contract, offline.

The module behind ``scripts/check-proto``.

Usage:
    scripts/check-proto                     format diff + lint + breaking + contract vs the
                                            released baseline
    scripts/check-proto --against-ref REF   breaking and contract against proto/ as it was at
                                            git REF instead
    scripts/check-proto --update-baseline   record the current schema as the released baseline
                                            (do this when cutting a release, never to silence
                                            a breaking finding)

buf cannot reach its registry here, so grpcio-tools' protoc builds a buf image
(--include_imports --include_source_info) and buf checks it limited to `--path projectops`.
The baseline of the released schema is the committed image proto/released.binpb.
The limits (scripts/schema_limits.py) refuse what the features cannot serve (a streaming rpc, a
tool name the CLI has, a request field named a Python keyword, google.protobuf.Any, a REQUIRED
cycle), one `limit: <element>: <reason>` line each (docs/schema.md, "Limits").
After buf, the contract check (src/projectops/contract.py) compares the operations of both
images: HTTP method, path and body, REQUIRED request fields, the fields, enum values and REQUIRED
of released responses, and the protovalidate rules of both, which buf does not see; and that
every REQUIRED field of the current schema restates it for protovalidate, and no other field
does (`required_drift`). It prints one `contract: <finding>` line each; a finding
listed in proto/contract-exceptions.toml (word for word, with its reason) is accepted (never a
REQUIRED drift), and an entry whose finding no longer occurs fails.
Exits 1 when any gate reports a finding.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import tomllib
from collections import deque
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import protolib

protolib.ensure_dev_python()
sys.path.insert(0, str(protolib.REPO / "src"))
import schema_limits  # noqa: E402
from google.protobuf import descriptor_pb2  # noqa: E402

from projectops import contract, rules  # noqa: E402
from projectops.validation import required_rules  # noqa: E402

BASELINE = Path("proto") / "released.binpb"
# Contract findings accepted on purpose, each with its reason (the file says how to keep it).
EXCEPTIONS = Path("proto") / "contract-exceptions.toml"


def accepted_findings(root: Path) -> dict[str, str]:
    """finding -> reason of every entry of `root`/EXCEPTIONS (none when the file is absent)."""
    path = root / EXCEPTIONS
    if not path.exists():
        return {}
    with path.open("rb") as f:
        entries = tomllib.load(f).get("accepted", [])
    return {entry["finding"]: entry["reason"] for entry in entries}


def required_drift(current: bytes, prefix: str = "projectops/") -> list[str]:
    """Every field of a schema whose two declarations of REQUIRED disagree (docs/contract.md
    §4.1): ``google.api.field_behavior`` says REQUIRED and the ``buf.validate`` rules that
    restate it for protovalidate (:func:`projectops.validation.required_rules`) are not all
    declared, or they are declared on a field that is not REQUIRED.

    Args:
        current: the schema, a serialized ``FileDescriptorSet`` built with
            ``--include_imports``.
        prefix: only the messages of files whose name starts with it count; default
            ``projectops/``.

    Returns:
        One sentence per field that disagrees, naming what it lacks or should not have; empty
        when every field agrees.

    Raises:
        ValueError: the image lacks an imported file.
    """
    fds = descriptor_pb2.FileDescriptorSet.FromString(current)
    pool = contract.load(fds)
    findings: list[str] = []
    queue: deque[Any] = deque(
        message
        for f in fds.file
        if f.name.startswith(prefix)
        for message in pool.FindFileByName(f.name).message_types_by_name.values()
    )
    while queue:
        message = queue.popleft()
        queue.extend(message.nested_types)
        for field in message.fields:
            wanted, declared = required_rules(field), rules.rule_items(field, restated=True)
            if wanted != declared:
                findings.append(_drift(field, wanted, declared))
    return findings


def _drift(field: Any, wanted: dict[str, Any], declared: dict[str, Any]) -> str:
    if not wanted:
        return f"{field.full_name}: not REQUIRED, yet declares {', '.join(declared)}"
    differing = [name for name in rules.REQUIRED_ITEMS if wanted.get(name) != declared.get(name)]
    return (
        f"{field.full_name}: REQUIRED (google.api.field_behavior), but its buf.validate "
        f"{' and '.join(differing)} not as REQUIRED needs (docs/schema.md, 'Adding an operation')"
    )


def image_at_ref(root: Path, ref: str, out: Path, tmp: Path) -> None:
    """Build an image of proto/ as committed at git `ref`."""
    archive = subprocess.run(
        ["git", "-C", str(root), "archive", ref, "proto"], capture_output=True, check=False
    )
    if archive.returncode != 0:
        sys.exit(f"error: cannot read proto/ at {ref}: {archive.stderr.decode().strip()}")
    subprocess.run(["tar", "-x", "-C", str(tmp)], input=archive.stdout, check=True)
    protolib.build_image(tmp / "proto", out)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--root", type=Path, default=protolib.REPO, help="repository root")
    parser.add_argument("--against-ref", metavar="REF", help="git ref to compare against")
    parser.add_argument("--update-baseline", action="store_true", help="rewrite the baseline")
    args = parser.parse_args()
    root: Path = args.root.resolve()
    buf = protolib.buf_binary()
    config = str(root / "buf.yaml")

    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        image = tmp / "image.binpb"
        protolib.build_image(root / "proto", image)
        if args.update_baseline:
            # No source info in the baseline: comments cannot break anything.
            protolib.protoc(
                root / "proto", ["--include_imports", f"--descriptor_set_out={root / BASELINE}"]
            )
            print(f"wrote {BASELINE}")
            return 0
        if args.against_ref:
            against = tmp / "against.binpb"
            (tmp / "ref").mkdir()
            image_at_ref(root, args.against_ref, against, tmp / "ref")
        else:
            against = root / BASELINE
        scope = ["--config", config, "--path", "projectops"]
        gates = {
            "buf format": [buf, "format", "--diff", "--exit-code", "proto"],
            "buf lint": [buf, "lint", str(image), *scope],
            # --exclude-imports: the well-known types come from whichever protoc is pinned; only
            # our files are the contract.
            "buf breaking": [
                buf,
                "breaking",
                str(image),
                "--against",
                str(against),
                *scope,
                "--exclude-imports",
            ],
        }
        failed = protolib.run_together(gates, cwd=root)  # independent: at once
        findings = contract.check_files(against, image)
        files = descriptor_pb2.FileDescriptorSet.FromString(image.read_bytes())
        limits = schema_limits.findings(files, "projectops")
        # REQUIRED declared twice (field_behavior, buf.validate): never accepted, always fixed.
        drift = required_drift(image.read_bytes())
    for limit in limits:
        print(f"limit: {limit}")
    if limits:
        failed.append("limits (docs/schema.md)")
    for finding in drift:
        print(f"contract: {finding}")
    accepted = accepted_findings(root) if not args.against_ref else {}
    for finding in findings:
        if finding in accepted:
            print(f"accepted ({EXCEPTIONS}): {finding}")
        else:
            print(f"contract: {finding}")
    stale = [finding for finding in accepted if finding not in findings]
    for finding in stale:
        print(f"contract: {EXCEPTIONS} accepts a finding that no longer occurs: {finding}")
    if set(findings) - set(accepted) or stale or drift:
        failed.append("contract")
    if failed:
        print(f"error: schema gates failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    print("schema gates passed: " + ", ".join([*gates, "contract", "limits"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
