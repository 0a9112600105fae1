"""A vLLM scenario (docs/vllm.md) as a serq instance.

`convert(sc)` gives the `.sq` text, the session label of every request
(`PROGRAM#N`, the label `serq run --schedule` writes) and the list of vLLM
behaviours of the scenario that the language cannot say exactly (empty when
the instance is exact). How each scheduler option is written is the table
of docs/vllm.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from serq.oracle.driver import (DEFAULT_SAMPLED_TOKEN_ID, check_scenario, prompt_ids)

# what an exact translation of each behaviour needs, in the language's words
NEEDS_SHARED_PREFIX = "content-addressed shared prefixes (requests of different sessions share full blocks)"
NEEDS_QUEUE_CHUNK = "a chunk that reads queue counts at @step (long_prefill_token_threshold)"
NEEDS_WATERMARK = "admission headers that read free(kv) at @admit (watermark)"
NEEDS_PRIORITY = "serving after a self-preemption (the priority policy)"


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


def _shared_blocks(sc: dict, chains) -> bool:
    """Do requests of different conversations share a full block (by content,
    chained as vLLM hashes it)? Only then does a hit cross sessions."""
    bs = int(sc["block_size"])
    owner: dict[tuple, int] = {}
    for ci, chain in enumerate(chains):
        for r in chain:
            toks = prompt_ids(sc, r["id"]) + [int(sc.get("sampled_token_id", DEFAULT_SAMPLED_TOKEN_ID))] * (
                int(r["max_tokens"]) - 1)
            for k in range(len(toks) // bs):
                key = tuple(toks[: (k + 1) * bs])
                if owner.setdefault(key, ci) != ci:
                    return True
    return False


def convert(sc: dict, name: str = "scenario") -> Converted:
    """The serq instance of scenario `sc` (a dict, checked first)."""
    check_scenario(sc, name)
    bs = int(sc["block_size"])
    usable = int(sc["num_gpu_blocks"]) - 1  # vLLM's block 0 is its null block
    budget = int(sc.get("max_num_batched_tokens", 2048))
    seqs = int(sc.get("max_num_seqs", 128))
    apc = bool(sc.get("enable_prefix_caching", True))
    gate = bool(sc.get("scheduler_reserve_full_isl", True))
    threshold = int(sc.get("long_prefill_token_threshold", 0))
    priority = sc.get("policy", "fcfs") == "priority"
    chains = _chains(sc)

    needs = []
    if apc and _shared_blocks(sc, chains):
        needs.append(NEEDS_SHARED_PREFIX)
    if threshold > 0:
        needs.append(NEEDS_QUEUE_CHUNK)
    if float(sc.get("watermark", 0.0)) > 0:
        needs.append(NEEDS_WATERMARK)
    if priority:
        needs.append(NEEDS_PRIORITY)

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
    w(f"const BS = {bs};")
    # a hold waits in its first pool's queue (seqs); a preempted one re-enters it as the
    # pool whose growth preempted it (kv) says
    queue = " queue (pri, arrived);" if priority else ""
    victim = "preempt (desc pri, desc arrived); requeue order;" if priority else "preempt lifo;"
    evict = " evict lru;" if apc else ""
    chunk = f" chunk {threshold};" if threshold > 0 else ""
    for head, opts in (("pool seqs", f"cap {seqs}; admit via gpu;{queue}"),
                       ("pool kv", f"cap {usable} * BS; block BS; admit via gpu; {victim}{evict}"),
                       ("stage gpu", f"budget {budget};{chunk} serve (admitted);")):
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
    def request(indent, turn=0):
        # a binding is declared once per session: the cache hit of turn k is c, c2, c3, ...
        c = "c" if turn == 0 else f"c{turn + 1}"
        p = " " * indent
        if apc:
            need = f"need (n + g - {c}) take 0" if gate else "need 0"
            hold = f"{p}hold seqs 1, kv reuse {c} {need}"
            adm = f"at admission ({c} = min(cached(kv), floor((n + g - 1) / BS) * BS)) {{"
            # `serq fmt`'s layout: one line up to 100 columns, else the binding under the first pool
            head = [f"{hold} {adm}"] if len(hold) + 1 + len(adm) <= 100 else [hold, f"{p}     {adm}"]
            return head + [f"{p}  prefill (n + g - {c}) growing kv;", f"{p}  set g = g + 1;",
                    f"{p}  decode (o - g) growing kv progress g;", f"{p}}} keep (kv full);"]
        need = "need (n + g) take 0" if gate else "need 0"
        return [f"{p}hold seqs 1, kv {need} {{", f"{p}  prefill (n + g) growing kv;", f"{p}  set g = g + 1;",
                f"{p}  decode (o - g) growing kv progress g;", f"{p}}}"]

    params = "n, o, pri" if priority else "n, o"
    labels: dict[str, str] = {}
    singles = any(len(c) == 1 for c in chains)
    if singles:
        w(f"session req({params}) {{")
        w("  let g = 0;")
        out.extend(request(2))
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
            out.extend(request(2, k))
        w("  end;")
        w("}")
        w("")
    w("workload {")
    lines = []
    for sid, chain in enumerate(chains, 1):
        r = chain[0]
        prog = convs.get(r["id"], "req")
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
