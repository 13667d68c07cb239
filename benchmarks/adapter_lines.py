"""How long each built-in adapter is, and how many checks it runs: lines of adapter code against coverage.

    python benchmarks/adapter_lines.py                  # certify each (--no-training), then the table
    python benchmarks/adapter_lines.py --lines-only     # the line counts alone (no certify)
    python benchmarks/adapter_lines.py --rev main       # line counts of the same files at another git revision

A code line is a line with code on it: not blank, not a comment alone, not part of a docstring (a module's,
class's or function's first string). Counted on the adapter's file only: the implementation it adapts is
imported (``implementations/torch_nn/model.py``, ``implementations/variants/fused_qkv_model.py``, the reference's
``model.py``, the installed third-party packages). *Checks run* are the checks a ``certify --no-training`` of the
adapter reports with any status but *not implemented* (passed, failed, error, advisory, deviation, blocked), out
of all it reports. The walk-through's adapter (docs/walkthrough/my_adapter.py) is certified by path from its folder,
as docs/walkthrough.md does; the third-party ones need ``pip install -e '.[thirdparty]'`` (else: n/a).
docs/adapter-protocol.md ("How long an adapter is") has the figures.
"""

from __future__ import annotations

import argparse
import ast
import io
import json
import subprocess
import sys
import tempfile
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# name shown, what certify takes, the adapter's file (relative to the repository), the folder certify runs in
ADAPTERS = [
    ("reference", "reference", "implementations/reference/adapter.py", ROOT),
    ("numpy (no nn.Module)", "numpy", "implementations/numpy_impl/adapter.py", ROOT),
    ("torch-nn-transformer", "torch-nn-transformer", "implementations/torch_nn/adapter.py", ROOT),
    ("torch-nn-transformer-fixed", "torch-nn-transformer-fixed", "implementations/torch_nn/adapter.py", ROOT),
    ("torch-fused-qkv", "torch-fused-qkv", "implementations/variants/fused_qkv.py", ROOT),
    ("walk-through", "my_adapter.py", "docs/walkthrough/my_adapter.py", ROOT / "docs" / "walkthrough"),
    ("hf-marian", "hf-marian", "implementations/thirdparty/hf_marian.py", ROOT),
    ("hf-fsmt", "hf-fsmt", "implementations/thirdparty/hf_fsmt.py", ROOT),
    ("opennmt-py", "opennmt-py", "implementations/thirdparty/onmt_py.py", ROOT),
]


def code_lines(source: str) -> int:
    """The lines of ``source`` with code on them (docstrings, comments and blank lines left out).

    ``code_lines('\"\"\"Doc.\"\"\"\\n\\nx = 1  # one\\n# none\\n')`` is 1."""
    docstrings: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value,
                                                                                                     str):
                docstrings.update(range(first.lineno, first.end_lineno + 1))
    skip = (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER)
    lines: set[int] = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type not in skip:
            lines.update(range(token.start[0], token.end[0] + 1))
    return len(lines - docstrings)


def source_at(path: str, rev: str | None) -> str | None:
    if rev is None:
        return (ROOT / path).read_text()
    shown = subprocess.run(["git", "show", f"{rev}:{path}"], cwd=ROOT, capture_output=True, text=True)
    return shown.stdout if shown.returncode == 0 else None


def checks_run(spec: str, folder: Path) -> tuple[int, int] | None:
    """(checks run, checks reported) by ``certify spec --no-training``; None when it could not certify."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        subprocess.run([sys.executable, "-m", "conformance", "certify", spec, "--no-training", "--json", str(report)],
                       cwd=folder, capture_output=True, text=True)
        if not report.exists():
            return None
        statuses = [check["status"] for check in json.loads(report.read_text())["checks"]]
    return sum(status != "not_implemented" for status in statuses), len(statuses)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines-only", action="store_true", help="count lines, certify nothing")
    parser.add_argument("--rev", help="count the files as they are at this git revision (implies --lines-only)")
    args = parser.parse_args(argv)
    certify = not (args.lines_only or args.rev)
    print(f"{'adapter':28} {'file':44} {'code lines':>10}" + (f" {'checks run':>12}" if certify else ""))
    for name, spec, path, folder in ADAPTERS:
        source = source_at(path, args.rev)
        lines = "-" if source is None else str(code_lines(source))
        row = f"{name:28} {path:44} {lines:>10}"
        if certify:
            ran = checks_run(spec, folder)
            row += f" {'n/a' if ran is None else f'{ran[0]} of {ran[1]}':>12}"
        print(row, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
