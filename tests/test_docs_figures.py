"""Every figure the docs quote from a command is that command's output today.

A figure is marked in the Markdown source by an HTML comment (invisible
when rendered) naming the command that prints it:

- inline, right after a number: `94,278<!-- figure: serq explore
  instances/vllm_chat.sq --no-symmetry --no-timing ~ distinct=(\\d+) -->`:
  the regular expression's group, on the command's output, is that number
  (commas aside);
- on the line before a fenced block: `<!-- figure: python
  tools/show_lowered.py instances/multiturn_chat.sq -->`: the block is
  lines of the output, in order and consecutive, where a line that is only
  `...` stands for any number of lines and `...` inside a line for any
  text.

A command is `serq ...` (run in this process) or `python tools/X.py ...`,
from the repository's root; a figure that no cheap command prints (a
benchmark's) is dated in the docs as measured, not marked. `theorem_kv.sq`
is `instances/theorem.sq` with its capacity a constant, as
docs/explorer.md ("Sweeps") says; `prob_loop.sq` is
`instances/prob_chat.sq` with one looping chat ("Probabilities of the
declared draws").

Also here: the exit codes the docs' verdict tables give, against
`serq.cli.exits.EXIT_CODES`; every repository path the docs quote
exists; and claims about the code that the docs once got wrong.
"""

from __future__ import annotations

import contextlib
import io
import re
import runpy
import shlex
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

MARK = re.compile(r"(?<!`)<!-- figure: (?P<cmd>[^~]+?)(?: ~ (?P<re>.+?))? -->")  # quoted in backticks: an example
NUMBER = re.compile(r"(\d[\d,]*(?:\.\d+)?(?:e\d+)?)$")

DERIVED = {  # inputs a figure's command names, made as the docs say
    "theorem_kv.sq": lambda: (ROOT / "instances" / "theorem.sq").read_text().replace(
        "pool kv { cap 8;", "const KV = 8;\npool kv { cap KV;"),
    "theorem_b2.sq": lambda: (ROOT / "instances" / "theorem.sq").read_text().replace("budget 4;", "budget 2;"),
    "prob_loop.sq": lambda: (ROOT / "instances" / "prob_chat.sq").read_text().replace(
        "repeat 2 {", "let more = 1;\n  while more == 1 {").replace(
        "    }\n  }\n  end;", "    }\n    draw d in {0, 1} ~ weights(1, 1);\n    set more = d;\n  }\n  end;").replace(
        "2 x chat", "1 x chat"),
}


def figures() -> list[tuple[str, int, str, str | None, str]]:
    """(doc, line, command, regexp or None, the figure or the block)."""
    out = []
    for doc in DOCS:
        text = doc.read_text()
        for m in MARK.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            where = f"{doc.relative_to(ROOT)}:{line}"
            if m.group("re"):
                num = NUMBER.search(text[:m.start()])
                assert num, f"{where}: an inline figure marker must follow a number"
                out.append((where, line, m.group("cmd"), m.group("re"), num.group(1)))
            else:
                rest = text[m.end():].split("\n")
                assert rest[0] == "" and rest[1].startswith("```"), f"{where}: a block marker must precede a fence"
                block = []
                for ln in rest[2:]:
                    if ln.startswith("```"):
                        break
                    block.append(ln)
                out.append((where, line, m.group("cmd"), None, "\n".join(block)))
    return out


_outputs: dict[str, str] = {}


def run(cmd: str, tmp: Path) -> str:
    """stdout of a figure's command (run once per test session)."""
    if cmd in _outputs:
        return _outputs[cmd]
    argv = shlex.split(cmd)
    for i, a in enumerate(argv):
        if a in DERIVED:
            f = tmp / a
            f.write_text(DERIVED[a]())
            argv[i] = str(f)
    buf, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(err):
        if argv[0] == "serq":
            from serq.cli import main

            main(argv[1:])
        elif argv[0] == "python" and len(argv) > 1 and argv[1].startswith("tools/"):
            saved = sys.argv
            sys.argv = argv[1:]
            try:
                runpy.run_path(str(ROOT / argv[1]), run_name="__main__")
            except SystemExit:
                pass
            finally:
                sys.argv = saved
        else:
            raise AssertionError(f"a figure's command is `serq ...` or `python tools/...`, not `{cmd}`")
    _outputs[cmd] = buf.getvalue()
    return _outputs[cmd]


def block_pattern(block: str) -> re.Pattern:
    parts = []
    for ln in block.rstrip("\n").split("\n"):
        ln = ln.rstrip()
        if ln.strip() == "...":
            parts.append(r"(?:[^\n]*\n)*?")
        else:
            parts.append("[^\\n]*?".join(re.escape(p) for p in ln.split("...")) + r"\n")
    return re.compile("^" + "".join(parts), re.M)


def _norm(s: str) -> str:
    return s.replace(",", "")


FIGURES = figures()


def test_the_docs_mark_their_figures():
    docs = {w.split(":")[0] for w, *_ in FIGURES}
    assert {"docs/explorer.md", "docs/ir.md"} <= docs
    assert len(FIGURES) >= 8


@pytest.mark.parametrize("where, line, cmd, regexp, figure", FIGURES, ids=[f[0] for f in FIGURES])
def test_a_figure_is_what_its_command_prints(tmp_path, where, line, cmd, regexp, figure):
    out = "\n".join(x.rstrip() for x in run(cmd, tmp_path).split("\n"))
    if regexp is not None:
        m = re.search(regexp, out)
        assert m, f"{where}: `{cmd}` printed nothing matching {regexp!r}"
        assert _norm(m.group(1)) == _norm(figure), f"{where}: the docs say {figure}; `{cmd}` prints {m.group(1)}"
    else:
        assert block_pattern(figure).search(out + "\n"), f"{where}: the block is not what `{cmd}` prints:\n{out}"


def test_the_block_pattern_reads_elisions():
    p = block_pattern("a 1\n  ...\nc ... d\n")
    assert p.search("x\na 1\nb\nb\nc 9 d\n") and p.search("a 1\nc  d\n")
    assert not p.search("a 1\nc 9 e\n") and not p.search("a 2\nc d\n")


# ---------------------------------------------------------------- exit codes


def _verdict_rows():
    """(doc, row, first cell, exit cell) of every table whose header has an
    `exit` column."""
    for doc in DOCS:
        col = None
        for ln in doc.read_text().splitlines():
            if not ln.startswith("|"):
                col = None
                continue
            cells = [c.strip() for c in ln.strip().strip("|").split("|")]
            if col is None:
                col = cells.index("exit") if "exit" in cells else -1
                continue
            if col > 0 and len(cells) > col and not set(cells[0]) <= set("- "):
                yield doc.name, ln, cells[0], cells[col]


def test_the_exit_codes_in_the_docs_tables_are_the_codes():
    from serq.cli.exits import EXIT_CODES

    words = {"pass": "pass", "interrupted": "interrupted", "failed": "failed", "inconclusive": "inconclusive",
             "deadlock": "deadlock", "livelock": "livelock", "bound": "bound", "THEOREM VIOLATED": "theorem",
             "violation": "violation", "theorem holds": "pass", "never admitted": "deadlock",
             "same": "pass", "differ": "differ"}
    checked = 0
    for doc, row, first, exit_cell in _verdict_rows():
        names = [next((v for k, v in words.items() if item.startswith(k)), None)
                 for item in re.findall(r"`([^`]+)`", first)]
        codes = [int(c) for c in re.findall(r"\b(\d+)\b", exit_cell)]
        if names and None not in names and len(names) == len(codes):
            checked += 1
            assert codes == [EXIT_CODES[n] for n in names], f"docs/{doc}: {row}"
    assert checked >= 12  # every verdict row of explorer.md and theorem.md, violations included


# ---------------------------------------------------------------- paths and claims


def test_every_path_the_docs_quote_exists():
    pat = re.compile(r"`((?:serq|explorer|tools|bench|instances|tests|docs)/[A-Za-z0-9_./-]+)`")
    missing = [(d.name, p) for d in DOCS for p in pat.findall(d.read_text()) if not (ROOT / p.rstrip("/")).exists()]
    assert missing == []


def test_the_layout_names_where_the_step_is():
    # the step runs in the compiled kernel, driven by the engine; serq/semantics/model.py only wraps it
    assert (ROOT / "serq/semantics/kernel/entry.py").exists()
    from serq.semantics.engine import Engine

    assert callable(Engine.run)
    layout = (ROOT / "README.md").read_text().split("## Layout", 1)[1]
    assert "`serq/semantics/kernel/`" in layout and "`serq/semantics/engine.py`" in layout
    for folder in ("lang", "ir", "semantics", "sim", "check", "cli"):  # the README's table names every folder
        assert f"`serq/{folder}/`" in layout and (ROOT / "serq" / folder / "__init__.py").exists(), folder


def test_the_explorer_report_is_plain_text_as_the_docs_say():
    for f in ("check/model.py", "cli/explore.py", "check/explore.py", "check/worst.py", "check/sweep.py", "cli/sweep.py",
              "check/theorem.py"):
        assert "rich" not in re.findall(r"^\s*(?:from|import) (\w+)", (ROOT / "serq" / f).read_text(), re.M), f
    text = (ROOT / "docs" / "language.md").read_text()
    bullet = text[text.index("- **rich**"):].split("\n- ", 1)[0]
    assert "explorer's\n  report itself is plain text" in bullet or "explorer's report itself is plain text" in bullet
