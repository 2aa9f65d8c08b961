"""Re-run every ```console example in README.md and docs/*.md and write its real output.

The doc test (tests/test_docs.py) fails when an example's output changes; after a
deliberate change, run this and review the diff: python scripts/update_doc_examples.py
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.test_docs import run_example  # noqa: E402  (one runner for docs and tests)

BLOCK = re.compile(r"(```console\n)(.*?)(```)", re.S)


def refresh(block: str) -> str:
    lines: list[str] = []
    for line in block.splitlines():
        if line.startswith("$ "):
            lines.append(line)
            output = run_example(line[2:])
            if output:
                lines.append(output)
    return "\n".join(lines) + "\n"


def main() -> None:
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = doc.read_text()
        new = BLOCK.sub(lambda m: m.group(1) + refresh(m.group(2)) + m.group(3), text)
        if new != text:
            doc.write_text(new)
            print(f"updated {doc.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
