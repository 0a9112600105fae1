"""A vLLM scenario (docs/vllm.md) as a serq instance.

`convert(sc)` gives the `.sq` text, the session label of every request
(`PROGRAM#N`, the label `serq run --schedule` writes) and the list of vLLM
behaviours of the scenario that the language cannot say exactly (empty when
the instance is exact). How each scheduler option is written is the table
of docs/vllm.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from serq.oracle.driver import (DEFAULT_SAMPLED_TOKEN_ID, cache_salt, check_scenario, prompt_ids)

# what an exact translation of each behaviour needs, in the language's words
NEEDS_SHARED_PREFIX = "a prefix past a prompt (requests of different sessions share blocks of output tokens)"


@dataclass
class Converted:
    text: str  # the .sq instance
    labels: dict[str, str]  # request id -> session label
    needs: list[str] = field(default_factory=list)  # what the language cannot say yet


def _chains(sc: dict) -> list[list[dict]]:
    """Requests grouped into conversations: a request and its follow-ups, in
    order, headed by the request that arrives at a step."""
    reqs = sc["requests"]
    nxt = {r["follows"]: r for r in reqs if "follows" in r}
    chains = []
    for r in reqs:
        if "follows" in r:
            continue
        chain = [r]
        while chain[-1]["id"] in nxt:
            chain.append(nxt[chain[-1]["id"]])
        chains.append(chain)
    return chains


def _tokens(sc: dict, r: dict) -> list[int]:
    """The tokens request `r` computes: its prompt and its output tokens but the last."""
    sampled = int(sc.get("sampled_token_id", DEFAULT_SAMPLED_TOKEN_ID))
    return prompt_ids(sc, r["id"]) + [sampled] * (int(r["max_tokens"]) - 1)


def _key(sc: dict, rid: str, toks: list[int]) -> tuple:
    """A run of tokens as vLLM's block hashes see it: a cache salt enters
    the first block's hash, so blocks are shared only under one salt."""
    return (cache_salt(sc, rid) or "",) + tuple(toks)


def _prefixes(sc: dict, chains) -> tuple[list[tuple[str, int, str | None]], dict[str, str], bool]:
    """The shared prefixes of a scenario, as vLLM's cache shares them: a full
    block (hashed with every token before it) that requests of different
    conversations compute. Returns the declarations (name, length in tokens,
    parent), the prefix each request's hold names (its longest one, within
    its prompt's full blocks), and whether some requests share more than
    that where a request could hit it (output tokens: no prefix can say
    it; a hit leaves the last of at most prompt + max_tokens - 1 tokens to
    compute, so a block past that is computed, never hit)."""
    bs = int(sc["block_size"])
    users: dict[tuple, set[int]] = {}
    for ci, chain in enumerate(chains):
        for r in chain:
            toks = _tokens(sc, r)
            for k in range(1, len(toks) // bs + 1):
                users.setdefault(_key(sc, r["id"], toks[: k * bs]), set()).add(ci)
    depth: dict[str, int] = {}  # request id -> full blocks of its prefix
    beyond = False
    for chain in chains:
        for r in chain:
            toks, prompt = _tokens(sc, r), prompt_ids(sc, r["id"])
            shared = [k for k in range(1, len(toks) // bs + 1) if len(users[_key(sc, r["id"], toks[: k * bs])]) > 1]
            d = max((k for k in shared if k <= len(prompt) // bs), default=0)
            beyond |= any(d < k <= (len(toks) - 1) // bs for k in shared)
            if d:
                depth[r["id"]] = d
    key_of = {rid: _key(sc, rid, prompt_ids(sc, rid)[: d * bs]) for rid, d in depth.items()}
    keys = sorted(set(key_of.values()), key=lambda k: (len(k), k))
    names = {k: f"P{i}" for i, k in enumerate(keys, 1)}
    decls = []
    for k in keys:  # the salt is the key's first item: the length is the rest's
        parent = max((q for q in keys if len(q) < len(k) and k[: len(q)] == q), key=len, default=None)
        decls.append((names[k], len(k) - 1, names[parent] if parent else None))
    of = {rid: names[k] for rid, k in key_of.items()}
    return decls, of, beyond


def convert(sc: dict, name: str = "scenario") -> Converted:
    """The serq instance of scenario `sc` (a dict, checked first)."""
    check_scenario(sc, name)
    bs = int(sc["block_size"])
    usable = int(sc["num_gpu_blocks"]) - 1  # vLLM's block 0 is its null block
    # vLLM's token budget per step: max_num_scheduled_tokens (max_num_batched_tokens by default)
    budget = int(sc.get("max_num_scheduled_tokens", sc.get("max_num_batched_tokens", 2048)))
    chunked = bool(sc.get("enable_chunked_prefill", True))
    seqs = int(sc.get("max_num_seqs", 128))
    apc = bool(sc.get("enable_prefix_caching", True))
    gate = bool(sc.get("scheduler_reserve_full_isl", True))
    threshold = int(sc.get("long_prefill_token_threshold", 0))
    priority = sc.get("policy", "fcfs") == "priority"
    chains = _chains(sc)

    # vLLM keeps int(watermark * num_gpu_blocks) blocks free when it admits while others run
    wm = int(float(sc.get("watermark", 0.0)) * int(sc["num_gpu_blocks"]))
    decls, prefix_of, beyond = _prefixes(sc, chains) if apc else ([], {}, False)
    needs = []
    if beyond:
        needs.append(NEEDS_SHARED_PREFIX)

    out = []
    w = out.append
    desc = sc.get("description")
    w(f"// {name}: converted from a vLLM scenario by `serq oracle convert`.")
    if desc:
        for line in _wrap(desc, 76):
            w(f"// {line}")
    for n in needs:
        w(f"// NOT EXACT: vLLM's behaviour needs {n}.")
    w("")
    length_of = {pname: length for pname, length, _ in decls}
    for pname, length, parent in decls:  # shared token prefixes (full blocks only)
        w(f"prefix {pname} = {parent} + {length - length_of[parent]};" if parent else f"prefix {pname} = {length};")
    w(f"const BS = {bs};")
    if wm > 0:
        w(f"const WM = {wm};  // watermark blocks")
    # a hold waits in its first pool's queue (seqs); a preempted one re-enters it as the
    # pool whose growth preempted it (kv) says
    queue = " queue (pri, arrived);" if priority else ""
    victim = "preempt (desc pri, desc arrived); requeue order;" if priority else "preempt lifo;"
    evict = " evict lru;" if apc else ""
    # vLLM keeps every copy of a block two requests compute (its map holds them all)
    copies = " copies keep;" if decls else ""
    # vLLM caches a block when it allocates it for the tokens a step schedules; a
    # priority victim scheduled earlier in its step (FCFS's victim, the last running
    # request, never is) gives its tokens back and leaves those blocks cached
    copies += " cache scheduled;" if priority and apc else ""
    # long_prefill_token_threshold caps a prefill while running + waiting > 1 (at the
    # iteration's start): a hold waits in its first pool's queue (seqs)
    chunk = f" chunk if holders(seqs) + waiting(seqs) > 1 then {threshold} else {budget};" \
        if 0 < threshold < budget else ""
    selfp = " self_preempt continue;" if priority else ""
    for head, opts in (("pool seqs", f"cap {seqs}; admit via gpu;{queue}"),
                       ("pool kv", f"cap {usable} * BS; block BS; admit via gpu; {victim}{evict}{copies}"),
                       ("stage gpu", f"budget {budget};{chunk} serve (admitted);{selfp}")):
        one = f"{head} {{ {opts} }}"
        if len(one) <= 100:  # `serq fmt`'s layout: one line if it fits, else one option per line
            w(one)
        else:
            w(f"{head} {{")
            out.extend(f"  {o.strip()};" for o in opts.split(";") if o.strip())
            w("}")
    w("")
    # one hold per request: prompt n, answer o; g = answer tokens produced so far
    # (vLLM's num_output_tokens), which survive a preemption: a resumed request
    # recomputes n + g tokens (less its cache hit), its last prefill chunk gives
    # one more answer token, and it decodes only what is left.
    mark = " + (if holders(kv) > 0 then WM * BS else 0)" if wm > 0 else ""

    cap = f", if holders(seqs) + waiting(seqs) > 1 then {threshold} else {budget}" if chunk else ""

    def first_chunk(rest):
        # with the gate off, vLLM admits when the first chunk's blocks (and the watermark) fit
        return f"need (min({rest}, budget_left{cap}){mark}) take 0" if mark else "need 0"

    def whole(rest):
        # without chunked prefill vLLM stops admitting at a request whose next chunk exceeds the budget left
        first = f"min({rest}{cap})" if cap else f"{rest}"
        return [] if chunked else [f"admit if {first} <= budget_left"]

    def header(p, hold, clauses):
        # `serq fmt`'s layout: one line up to 100 columns, else each clause under the first pool
        one = " ".join([hold] + clauses) + " {"
        if len(one) <= 100 or not clauses:
            return [one]
        return [hold] + [f"{p}     {x}" for x in clauses[:-1]] + [f"{p}     {clauses[-1]} {{"]

    def request(indent, turn=0, rid=None):
        # a binding is declared once per session: the cache hit of turn k is c, c2, c3, ...
        c = "c" if turn == 0 else f"c{turn + 1}"
        p = " " * indent
        if apc:
            need = f"need (n + g - {c}{mark}) take 0" if gate else first_chunk(f"n + g - {c}")
            pre = f"prefix {prefix_of[rid]} " if rid in prefix_of else ""
            hold = f"{p}hold seqs 1, kv {pre}reuse {c} {need}"
            adm = f"at admission ({c} = min(cached(kv), floor((n + g - 1) / BS) * BS))"
            return header(p, hold, [adm] + whole(f"n + g - {c}")) + [
                f"{p}  prefill (n + g - {c}) growing kv;", f"{p}  set g = g + 1;",
                f"{p}  decode (o - g) growing kv progress g;", f"{p}}} keep (kv full);"]
        need = f"need (n + g{mark}) take 0" if gate else first_chunk("n + g")
        return header(p, f"{p}hold seqs 1, kv {need}", whole("n + g")) + [
                f"{p}  prefill (n + g) growing kv;", f"{p}  set g = g + 1;",
                f"{p}  decode (o - g) growing kv progress g;", f"{p}}}"]

    params = "n, o, pri" if priority else "n, o"
    labels: dict[str, str] = {}
    # one program for the single requests of each prefix (none: `req`)
    single_prog = {}
    for chain in chains:
        if len(chain) == 1:
            pre = prefix_of.get(chain[0]["id"])
            single_prog[chain[0]["id"]] = f"req_{pre.lower()}" if pre else "req"
    for prog in sorted(set(single_prog.values())):
        rid = next(r for r, q in single_prog.items() if q == prog)
        w(f"session {prog}({params}) {{")
        w("  let g = 0;")
        out.extend(request(2, 0, rid))
        w("  end;")
        w("}")
        w("")
    convs = {}
    for chain in chains:
        if len(chain) == 1:
            continue
        pname = f"conv_{len(convs) + 1}"
        convs[chain[0]["id"]] = pname
        w(f"session {pname}({params}) {{")
        w("  let g = 0;")
        for k, r in enumerate(chain):
            if k:
                prev = chain[k - 1]
                w(f"  turn think {int(r.get('think_steps', 0))}ns;  // {r['id']}: {r['prompt_len']} new tokens")
                w(f"  set n = n + {int(prev['max_tokens'])} + {int(r['prompt_len'])};")
                w(f"  set o = {int(r['max_tokens'])};")
                if priority:
                    w(f"  set pri = {int(r.get('priority', 0))};")
                w("  set g = 0;")
            out.extend(request(2, k, r["id"]))
        w("  end;")
        w("}")
        w("")
    w("workload {")
    lines = []
    for sid, chain in enumerate(chains, 1):
        r = chain[0]
        prog = convs.get(r["id"]) or single_prog[r["id"]]
        args = f"n={len(prompt_ids(sc, r['id']))}, o={int(r['max_tokens'])}"
        if priority:
            args += f", pri={int(r.get('priority', 0))}"
        lines.append((f"  1 x {prog}({args}) at {int(r['arrival_step'])}ns;", r["id"]))
        for q in chain:
            labels[q["id"]] = f"{prog}#{sid}"
    width = max(len(x) for x, _ in lines)
    for x, rid in lines:  # the request ids as trailing comments, aligned as `serq fmt` aligns them
        w(f"{x.ljust(width)}  // {rid}")
    w("}")
    return Converted("\n".join(out) + "\n", labels, needs)


def _wrap(text: str, width: int) -> list[str]:
    lines, cur = [], ""
    for word in text.split():
        if cur and len(cur) + 1 + len(word) > width:
            lines.append(cur)
            cur = word
        else:
            cur = f"{cur} {word}" if cur else word
    if cur:
        lines.append(cur)
    return lines
