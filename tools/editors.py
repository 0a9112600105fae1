"""Write the TextMate grammar of `.sq` (editors/vscode/syntaxes/serq.tmLanguage.json)
from the same lists the Pygments lexer uses (serq/lang/lexer.py: the
parser's keywords, serq.vocab's builtins, the token patterns).
tests/lang/test_editors.py checks that the shipped file is what this writes.

    python tools/editors.py
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]

from serq.lang import lexer as L  # noqa: E402

OUT = ROOT / "editors" / "vscode" / "syntaxes" / "serq.tmLanguage.json"


def _alt(names) -> str:
    return r"\b(?:" + "|".join(re.escape(n) for n in sorted(names, key=lambda n: (-len(n), n))) + r")\b"


def grammar() -> dict:
    plain = [k for k in L.keywords() if k not in L.DECLARATIONS + L.WORD_OPERATORS + ("x",)]
    return {
        "$schema": "https://raw.githubusercontent.com/martinring/tmlanguage/master/tmlanguage.json",
        "name": "serq",
        "scopeName": "source.serq",
        "fileTypes": ["sq"],
        "comment": "Written by tools/editors.py from serq's grammar; do not edit by hand.",
        "patterns": [{"include": "#comments"}, {"include": "#strings"}, {"include": "#numbers"},
                     {"include": "#keywords"}, {"include": "#builtins"}, {"include": "#names"},
                     {"include": "#operators"}, {"include": "#punctuation"}],
        "repository": {
            "comments": {"patterns": [
                {"name": "comment.line.double-slash.serq", "match": r"//.*$"},
                {"name": "comment.block.serq", "begin": r"/\*", "end": r"\*/"}]},
            "strings": {"patterns": [{"name": "string.quoted.double.serq", "match": r'"[^"\n]*"'}]},
            "numbers": {"patterns": [
                {"name": "constant.numeric.duration.serq", "match": L.DURATION},
                {"name": "constant.numeric.serq", "match": L.NUMBER}]},
            "keywords": {"patterns": [
                {"name": "storage.type.serq", "match": _alt(L.DECLARATIONS)},
                {"name": "constant.language.serq", "match": _alt(L.CONSTANTS)},
                {"name": "keyword.operator.word.serq", "match": _alt(L.WORD_OPERATORS)},
                {"name": "keyword.other.serq", "match": _alt(plain)},
                {"name": "keyword.other.serq", "match": L.COUNT_X}]},
            "builtins": {"patterns": [{"name": "support.function.serq", "match": _alt(L.builtins())}]},
            "names": {"patterns": [{"name": "variable.other.serq", "match": r"\b[A-Za-z_][A-Za-z0-9_]*\b"}]},
            "operators": {"patterns": [{"name": "keyword.operator.serq", "match": L.OPERATORS}]},
            "punctuation": {"patterns": [{"name": "punctuation.serq", "match": L.PUNCTUATION}]},
        },
    }


def text() -> str:
    return json.dumps(grammar(), indent=2) + "\n"


def main() -> int:
    OUT.write_text(text())
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
