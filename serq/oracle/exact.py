"""Whether an instance is vLLM-exact, and the vLLM settings it says.

A *vLLM-exact instance* is one `serq oracle convert` writes (docs/vllm.md):
its declarations are the converter's, word for word, up to comments,
layout, the workload, `check` and `tick` lines, and `draw` statements that
give a program's `n`, `o` or `pri` instead of a parameter. `settings` reads
the scheduler's settings off the converter's spellings; `exact` converts
the scenario a counterexample gives and compares every declaration, a
difference being `NotExact` at the instance's line (`serq oracle replay`,
serq/oracle/replay.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from serq.oracle.convert import convert

LENGTHS = ("n", "o", "pri")  # the converter's parameters a vLLM-exact program may draw instead


class NotExact(ValueError):
    """The instance is not one the converter writes: at `line` (1-based), `col`."""

    def __init__(self, line: int, col: int, message: str, notes: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.line, self.col, self.notes = line, col, notes


# ------------------------------------------------------------------ declarations


@dataclass
class Decl:
    kind: str  # const, prefix, pool, stage, session, workload, check, tick, ...
    name: str
    text: str  # comments dropped, whitespace collapsed
    line: int
    col: int
    pos: list = field(default_factory=list)  # (line, col) in the instance of each character of `text`

    def at(self, i: int) -> tuple[int, int]:
        """Where the text's character i is (the declaration's end past it)."""
        return self.pos[min(i, len(self.pos) - 1)] if self.pos else (self.line, self.col)


def _strip_comments(text: str) -> str:
    out = []
    for raw in text.splitlines():
        i = raw.find("//")
        out.append(raw if i < 0 else raw[:i])
    return "\n".join(out)


def declarations(text: str) -> list[Decl]:
    """The top-level declarations of an instance's text, in order: each
    ends at a `;` or a closing `}` outside braces (a `}` followed by more
    of its statement, `} keep (...);`, is inside the session's braces)."""
    src = _strip_comments(text)
    decls, depth, start = [], 0, None
    line, col = 1, 0
    for i, ch in enumerate(src):
        if ch == "\n":
            line, col = line + 1, 0
            continue
        col += 1
        if start is None and not ch.isspace():
            start = (i, line, col)
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0 and start is not None:
                at, at_line, at_col = start
                if src[at:].split(None, 1)[0] in ("pool", "stage", "session", "workload"):
                    decls.append(_decl(src[at:i + 1], at_line, at_col))
                    start = None
        elif ch == ";" and depth == 0 and start is not None:
            at, at_line, at_col = start
            decls.append(_decl(src[at:i + 1], at_line, at_col))
            start = None
    return decls


def _decl(raw: str, line: int, col: int) -> Decl:
    chars, pos, gap = [], [], False
    ln, c = line, col - 1
    for ch in raw:
        if ch == "\n":
            ln, c = ln + 1, 0
        else:
            c += 1
        if ch.isspace():
            gap = bool(chars)
            continue
        if gap:
            chars.append(" ")
            pos.append((ln, c))
            gap = False
        chars.append(ch)
        pos.append((ln, c))
    text = "".join(chars)
    words = re.match(r"(\w+)\s*(\w*)", text)
    kind = words.group(1) if words else text
    name = words.group(2) if words and kind in ("const", "prefix", "pool", "stage", "session") else ""
    return Decl(kind, name, text, line, col, pos)


_SESSION = re.compile(r"session (\w+)\s*(?:\(([^)]*)\))? \{ (.*) \}$")
_THINK = re.compile(r"turn think [^;]*;")  # think times: the counterexample's, not the instance's
_DRAW = re.compile(r"draw (\w+) in [^;]*; ")


def _program(d: Decl) -> tuple[list[str], str, list[str]]:
    """(parameters, body without the draws of LENGTHS, the drawn names)."""
    m = _SESSION.match(d.text)
    if not m:
        raise NotExact(d.line, d.col, f"session `{d.name}` is not written as the converter writes a program")
    params = [p.strip() for p in (m.group(2) or "").split(",") if p.strip()]
    body, drawn = m.group(3) + " ", []
    for dm in list(_DRAW.finditer(body)):
        if dm.group(1) in LENGTHS:
            drawn.append(dm.group(1))
    body = _DRAW.sub(lambda dm: "" if dm.group(1) in LENGTHS else dm.group(0), body)
    return params, body.strip(), drawn


# ------------------------------------------------------------------ the scheduler's settings


def settings(text: str, file: str) -> dict:
    """The vLLM settings a vLLM-exact instance was converted from, read off
    the converter's spellings (`exact` then checks every declaration)."""
    decls = {(d.kind, d.name): d for d in declarations(text)}

    def need(kind, name, pattern, what):
        d = decls.get((kind, name))
        m = re.search(pattern, d.text) if d else None
        if not m:
            where = d or next(iter(decls.values()), Decl("", "", "", 1, 1))
            raise NotExact(where.line, where.col, f"no {what}",
                           ("replay reads instances `serq oracle convert` writes (docs/vllm.md)",))
        return m

    for (kind, name), d in decls.items():
        if kind == "prefix":
            raise NotExact(d.line, d.col, f"`prefix {name}`: replay does not write shared prompts yet",
                           ("a scenario would need explicit prompts whose full blocks the counterexample's "
                            "sessions share",))
    bs = int(need("const", "BS", r"^const BS = (\d+);$", "`const BS = N;`").group(1))
    cap = int(need("pool", "kv", r"\bcap (\d+) \* BS;", "`pool kv { cap N * BS; ... }`").group(1))
    seqs = int(need("pool", "seqs", r"\bcap (\d+);", "`pool seqs { cap N; ... }`").group(1))
    budget = int(need("stage", "gpu", r"\bbudget (\d+);", "`stage gpu { budget N; ... }`").group(1))
    kv, gpu = decls[("pool", "kv")].text, decls[("stage", "gpu")].text
    sessions = [d for (k, _), d in decls.items() if k == "session"]
    body = " ".join(d.text for d in sessions)
    sc: dict = {"block_size": bs, "num_gpu_blocks": cap + 1, "max_num_seqs": seqs,
                "enable_prefix_caching": " evict lru;" in kv,
                "scheduler_reserve_full_isl": not re.search(r"need (0|\(min\()", body)}
    if "admit if" in body:  # chunked prefill off: vLLM then wants max_num_batched_tokens >= max_model_len
        sc.update(enable_chunked_prefill=False, max_num_batched_tokens=8192, max_num_scheduled_tokens=budget)
    else:
        sc["max_num_batched_tokens"] = budget
    th = re.search(r"chunk if holders\(seqs\) \+ waiting\(seqs\) > 1 then (\d+) else", gpu)
    if th:
        sc["long_prefill_token_threshold"] = int(th.group(1))
    wm = decls.get(("const", "WM"))
    if wm:
        w = int(need("const", "WM", r"^const WM = (\d+);$", "`const WM = N;`").group(1))
        sc["watermark"] = (w + 0.5) / (cap + 1)  # the converter writes int(watermark * num_gpu_blocks)
    if "queue (pri, arrived)" in text:
        sc["policy"] = "priority"
    return sc


def exact(text: str, file: str, sc: dict, used: dict[str, str]) -> None:
    """Raise NotExact unless the instance's declarations are the
    converter's for scenario `sc`. `used`: program name -> the request id
    of one of its sessions in `sc` (the converter's program of that
    request is compared with the instance's)."""
    mine = declarations(text)
    conv = convert(sc, "replay")
    theirs = declarations(conv.text)
    ours = {(d.kind, d.name): d for d in theirs if d.kind not in ("session", "workload")}
    prog_of = {}
    for rid, label in conv.labels.items():
        prog_of[rid] = label.split("#")[0]
    progs = {d.name: d for d in theirs if d.kind == "session"}
    first = mine[0] if mine else Decl("", "", "", 1, 1)
    seen = set()
    for d in mine:
        if d.kind in ("workload", "check", "tick"):
            continue
        if d.kind == "session":
            if d.name not in used:
                continue  # a program no session of the counterexample runs
            want = progs[prog_of[used[d.name]]]
            p, body, drawn = _program(d)
            wp, wbody, _ = _program(want)
            body, wbody = _THINK.sub("turn think _;", body), _THINK.sub("turn think _;", wbody)
            # turns the counterexample does not reach are not in the converter's program: the
            # instance's may go on where the converter's ends
            cut = wbody.removesuffix("end;").rstrip()
            if body != wbody and not (cut != wbody and body.startswith(cut + " turn think")):
                i = _mismatch(body, wbody)
                ln, c = d.at(d.text.find(body[:i]) + i if body[:i] in d.text else 0)
                raise NotExact(ln, c, f"session `{d.name}` is not the converter's program for its requests",
                               _first_difference(body, wbody))
            if sorted(p + drawn) != sorted(wp) or len(set(p + drawn)) != len(p + drawn):
                raise NotExact(d.line, d.col, f"session `{d.name}` has parameters ({', '.join(p)})"
                               + (f" and draws {', '.join(drawn)}" if drawn else "")
                               + f"; the converter's program has ({', '.join(wp)})")
            continue
        key = (d.kind, d.name)
        want = ours.get(key)
        if want is None:
            raise NotExact(d.line, d.col, f"`{d.text[:60]}` is not in the converter's instance for these settings",
                           ("replay reads instances `serq oracle convert` writes (docs/vllm.md)",))
        if d.text != want.text:
            ln, c = d.at(_mismatch(d.text, want.text))
            raise NotExact(ln, c, f"`{d.kind} {d.name}` is not written as the converter writes it",
                           (f"the converter writes: {want.text}",))
        seen.add(key)
    for key, want in ours.items():
        if key not in seen:
            raise NotExact(first.line, first.col, f"no `{want.text}`: the converter writes it for these settings")


def _mismatch(a: str, b: str) -> int:
    """Where a and b first differ, at the start of that word."""
    i = next((k for k, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    word = lambda ch: ch.isalnum() or ch == "_"  # noqa: E731
    while 0 < i < len(a) and word(a[i]) and word(a[i - 1]):
        i -= 1
    return i


def _first_difference(a: str, b: str) -> tuple[str, ...]:
    i = _mismatch(a, b)
    lo = max(0, i - 20)
    return (f"here: …{a[lo:i + 40]}…", f"the converter writes: …{b[lo:i + 40]}…")
