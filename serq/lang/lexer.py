"""A Pygments lexer for `.sq` (`pygmentize -l serq x.sq`; code blocks
marked ```sq in Markdown renderers that use Pygments).

Its keywords are read from the parser's own grammar (grammar.lark: every
quoted word and every keyword terminal), so the lexer and the language
cannot drift apart; the builtin names come from serq.vocab. The TextMate
grammar in editors/ is written from the same lists (`python
tools/editors.py`)."""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from pygments.lexer import RegexLexer, words
from pygments.token import Comment, Keyword, Name, Number, Operator, Punctuation, String, Whitespace

from serq.vocab import CTX_NAMES, DIST_NAMES, FUNCS, POOL_FUNCS, SEQ_EVENTS

GRAMMAR = Path(__file__).with_name("grammar.lark")
DECLARATIONS = ("const", "prefix", "tick", "pool", "stage", "session", "workload", "check")
CONSTANTS = ("true", "false")
WORD_OPERATORS = ("and", "or", "not")


@lru_cache(maxsize=None)
def keywords() -> tuple[str, ...]:
    """Every word the grammar spells: quoted words in rules and terminals
    that are one word (`LIFO: "lifo"`), sorted."""
    text = re.sub(r"//[^\n]*", "", GRAMMAR.read_text())
    found = set(re.findall(r'"([a-z_][a-z_]*)"', text))
    return tuple(sorted(found - set(CONSTANTS)))


@lru_cache(maxsize=None)
def builtins() -> tuple[str, ...]:
    """Functions, pool functions, `count` (of sessions), context
    variables, distributions and the order's tie events."""
    return tuple(sorted(set(FUNCS) | set(POOL_FUNCS) | {"count"} | set(CTX_NAMES) | set(DIST_NAMES)
                        | set(SEQ_EVENTS)))


# the token patterns, shared with tools/editors.py's TextMate grammar
DURATION = r"\d+(?:\.\d+)?(?:ns|us|ms|s)(?![A-Za-z0-9_])"
NUMBER = r"\d+(?:\.\d+)?"
OPERATORS = r"==|!=|<=|>=|\.\.|[<>+\-*/%=~]"
PUNCTUATION = r"[{}();,.:]"  # `.` of `c.g`, `:` of `forall P x:`
COUNT_X = r"\bx(?=\s+[A-Za-z0-9_(])"


class SerqLexer(RegexLexer):
    """serq's instance language (docs/language.md)."""

    name = "serq"
    aliases = ["serq", "sq"]
    filenames = ["*.sq"]
    mimetypes = ["text/x-serq"]
    url = "https://github.com/serq/serq"

    tokens = {
        "root": [
            (r"\s+", Whitespace),
            (r"//[^\n]*", Comment.Single),
            (r"/\*", Comment.Multiline, "comment"),
            (r'"[^"\n]*"', String.Double),
            (DURATION, Number.Float),
            (NUMBER, Number),
            (words(DECLARATIONS, suffix=r"\b"), Keyword.Declaration),
            (words(CONSTANTS, suffix=r"\b"), Keyword.Constant),
            (words(WORD_OPERATORS, prefix=r"\b", suffix=r"\b"), Operator.Word),
            (words(tuple(k for k in keywords() if k not in DECLARATIONS + WORD_OPERATORS + ("x",)),
                   prefix=r"\b", suffix=r"\b"), Keyword),
            (COUNT_X, Keyword),  # `2 x chat`, `spawn sub x 3`; elsewhere `x` is a name
            (words(builtins(), prefix=r"\b", suffix=r"\b"), Name.Builtin),
            (r"[A-Za-z_][A-Za-z0-9_]*", Name),
            (OPERATORS, Operator),
            (PUNCTUATION, Punctuation),
        ],
        "comment": [
            (r"[^*]+", Comment.Multiline),
            (r"\*/", Comment.Multiline, "#pop"),
            (r"\*", Comment.Multiline),
        ],
    }


__all__ = ["SerqLexer", "keywords", "builtins"]
