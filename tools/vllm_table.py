"""Rewrite docs/vllm.md's agreement table from the recorded traces
(tests/vllm/): the same computation tests/sim/test_vllm_agreement.py checks.

    python tools/vllm_table.py
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "sim")]

from test_vllm_agreement import DOC, table  # noqa: E402


def main() -> int:
    text = DOC.read_text()
    new, n = re.subn(r"(<!-- agreement table: begin -->\n)(?:.*?\n)?(<!-- agreement table: end -->)",
                     lambda m: m.group(1) + table() + "\n" + m.group(2), text, flags=re.S)
    if n != 1:
        print(f"{DOC}: no agreement table markers", file=sys.stderr)
        return 1
    DOC.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
