"""Print an instance lowered for the kernel: the row layout and, per
program, the state table with each expression's bytecode.

    python tools/show_lowered.py instances/multiturn_chat.sq"""

from __future__ import annotations

import sys

from serq.lang.load import load_path
from serq.semantics.kernel import abi
from serq.semantics.lower import Lowered

OPS = {v: k[3:] for k, v in vars(abi).items() if k.startswith("OP_") and isinstance(v, int)}


def code_text(K, off: int) -> str:
    out = []
    i = off
    while K[i] != abi.OP_END:
        op = int(K[i])
        n = abi.OP_ARGS.get(op, 0)
        out.append(OPS[op] + "".join(f" {int(x)}" for x in K[i + 1: i + 1 + n]))
        i += 1 + n
    return "; ".join(out)


def main(path: str) -> None:
    prog = load_path(path).program
    low = Lowered(prog, "all")
    cap = sum(line.count for line in prog.workload)
    K, ws = low.table(cap)
    print(f"K: {len(K)} ints; row: {int(K[abi.H_W])} ints for {cap} sessions "
          f"(session record {int(K[abi.H_SF])}: {abi.F_ATTR} fields, {low.NA} attributes, "
          f"{low.HMAX} holds of {abi.HW}; pool record {int(K[abi.H_PW])}); working array {ws} ints")
    for pi, sp in enumerate(prog.sessions):
        print(f"program {sp.name}:")
        for pc, r in enumerate(low.state_rows[pi]):
            kind = abi.KIND_NAMES[r[0]]
            exprs = [f"[{code_text(K, x)}]" for x in r[3:9] if x in low.expr_at]
            print(f"  {pc:3} {kind:8} next={r[1]:<3} scope={r[2]} {' '.join(exprs)}")


if __name__ == "__main__":
    main(sys.argv[1])
