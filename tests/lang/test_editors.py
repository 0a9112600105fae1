"""Editors: the Pygments lexer (serq/lang/lexer.py) and the TextMate
grammar (editors/vscode/) classify every token of every shipped instance
and of every `sq` code block of the docs, and know every keyword of the
parser's grammar. The TextMate grammar is run by a small TextMate engine
below (earliest match wins, ties by rule order; begin/end across lines),
on Python's `re` (the grammar's patterns use the syntax both share)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from pygments.token import Comment, Error, Keyword, Name, Operator, Whitespace

from serq.lang.lexer import SerqLexer, builtins, keywords

ROOT = Path(__file__).resolve().parents[2]
TM = ROOT / "editors" / "vscode" / "syntaxes" / "serq.tmLanguage.json"
INSTANCES = sorted((ROOT / "instances").glob("*.sq"))


def sources() -> list[tuple[str, str]]:
    out = [(p.name, p.read_text()) for p in INSTANCES]
    for md in sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]:
        for k, m in enumerate(re.finditer(r"^```sq\n(.*?)^```", md.read_text(), re.S | re.M)):
            out.append((f"{md.name}#{k}", m.group(1)))
    return out


SOURCES = sources()


def test_there_is_something_to_lex():
    assert len(INSTANCES) >= 10 and any("#" in n for n, _ in SOURCES)


@pytest.mark.parametrize("name,text", SOURCES, ids=[n for n, _ in SOURCES])
def test_pygments_classifies_every_token(name, text):
    toks = list(SerqLexer().get_tokens(text))
    assert "".join(v for _, v in toks).rstrip("\n") == text.rstrip("\n")
    bad = [(t, v) for t, v in toks if t in Error]
    assert not bad, f"{name}: error tokens {bad[:5]}"


def test_pygments_knows_the_grammar():
    lex = SerqLexer()
    kinds = {}
    for word in keywords():
        # `x` is a keyword before a count (`2 x chat`), a name elsewhere
        probe = f"{word} y" if word == "x" else word
        (t, v), *_ = lex.get_tokens(probe)
        kinds[word] = t
        assert v == word and (t in Keyword or t in Operator.Word), (word, t)
    for word in builtins():
        (t, _), *_ = lex.get_tokens(word)
        assert t in Name.Builtin or t in Keyword, (word, t)
    assert [t for t, _ in lex.get_tokens("let x = 1; // one")][:3] == [Keyword, Whitespace, Name]
    assert any(t in Comment for t, _ in lex.get_tokens("/* a\n b */"))
    assert "pool" in keywords() and "cache" in keywords() and "x" in keywords()


def test_pygments_finds_the_lexer_by_name_and_file():
    from pygments.lexers import find_lexer_class_for_filename, get_lexer_by_name

    from importlib.metadata import entry_points

    if not any(e.name == "serq" for e in entry_points(group="pygments.lexers")):
        pytest.skip("serq is not installed (the entry point comes with `pip install`)")
    assert type(get_lexer_by_name("serq")) is SerqLexer
    assert find_lexer_class_for_filename("x.sq") is SerqLexer


# ---------------------------------------------------------------- TextMate


class TextMate:
    """The subset of TextMate's tokenizer the grammar uses: `match` rules,
    `begin`/`end` rules (no nested patterns), `include` of the repository."""

    def __init__(self, grammar: dict) -> None:
        self.rules = []
        self._flat(grammar["patterns"], grammar["repository"])

    def _flat(self, patterns, repo) -> None:
        for p in patterns:
            if "include" in p:
                self._flat(repo[p["include"].lstrip("#")]["patterns"], repo)
            elif "match" in p:
                self.rules.append((re.compile(p["match"], re.M), None, p["name"]))
            else:
                self.rules.append((re.compile(p["begin"]), re.compile(p["end"]), p["name"]))

    def tokens(self, text: str) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        for line in text.split("\n"):
            self._line(line, out)
            out.append(("\n", "text"))
        return out

    _open: tuple | None = None

    def _line(self, line: str, out) -> None:
        pos = 0
        while pos < len(line):
            if self._open is not None:
                end, name = self._open
                m = end.search(line, pos)
                stop = m.end() if m else len(line)
                out.append((line[pos:stop], name))
                pos = stop
                if m:
                    self._open = None
                continue
            best = None
            for k, (rx, end, name) in enumerate(self.rules):
                m = rx.search(line, pos)
                if m and m.end() > m.start() and (best is None or m.start() < best[0].start()):
                    best = (m, end, name)
            if best is None:
                out.append((line[pos:], None))
                return
            m, end, name = best
            if m.start() > pos:
                out.append((line[pos:m.start()], None))
            out.append((m.group(0), name))
            pos = m.end()
            if end is not None:
                self._open = (end, name)


def tm() -> TextMate:
    return TextMate(json.loads(TM.read_text()))


def test_the_textmate_grammar_is_what_the_tool_writes():
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import editors
    finally:
        sys.path.pop(0)
    assert TM.read_text() == editors.text(), "editors/vscode/syntaxes/serq.tmLanguage.json is stale: " \
                                             "run `python tools/editors.py`"
    pkg = json.loads((ROOT / "editors" / "vscode" / "package.json").read_text())
    assert pkg["contributes"]["grammars"][0]["path"] == "./syntaxes/serq.tmLanguage.json"
    assert json.loads(TM.read_text())["scopeName"] == pkg["contributes"]["grammars"][0]["scopeName"]


@pytest.mark.parametrize("name,text", SOURCES, ids=[n for n, _ in SOURCES])
def test_textmate_classifies_every_token(name, text):
    toks = tm().tokens(text)
    assert "".join(v for v, _ in toks)[: len(text)] == text
    loose = [v for v, scope in toks if scope is None and v.strip()]
    assert not loose, f"{name}: text no rule classifies: {loose[:5]}"


def test_textmate_scopes():
    g = tm()
    scope = {v: s for v, s in g.tokens("pool kv { cap 8; preempt lifo; } workload { 2 x chat every 1.5s; }") if s}
    assert scope["pool"] == "storage.type.serq" and scope["lifo"] == "keyword.other.serq"
    assert scope["x"] == "keyword.other.serq" and scope["1.5s"] == "constant.numeric.duration.serq"
    assert scope["chat"] == "variable.other.serq" and scope["{"] == "punctuation.serq"
    assert dict((v, s) for v, s in g.tokens("let x = floor(n / 2);") if s)["floor"] == "support.function.serq"
    assert dict((v, s) for v, s in g.tokens("let x = 1;") if s)["x"] == "variable.other.serq"
    for word in keywords():
        probe = f"{word} y" if word == "x" else word
        first = g.tokens(probe)[0]
        assert first[0] == word and first[1].startswith(("keyword", "storage", "constant.language")), first
    lines = g.tokens("a /* one\ntwo */ b")
    assert ("two */", "comment.block.serq") in lines
