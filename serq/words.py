"""Phrases that the simulator, the explorer and the reports share, so that
one finding reads the same wherever it is printed."""

from __future__ import annotations


def stuck_text(label: str, pool: str | None = None, why: str | None = None) -> str:
    """A session preempted again before passing the position of its
    previous preemption (the `stuck` check), with the pool and why when
    known (serq.check.admission.stuck_why)."""
    where = f" from pool `{pool}`" if pool else ""
    return (f"{label} was preempted again{where} without passing the position of its previous preemption"
            + (f": {why}" if why else ""))


def blocks_over_cap(pool, blocks: int) -> str | None:
    """The words for a demand of `blocks` blocks that a finite pool cannot
    hold even alone (the theorem's H3), else None."""
    if pool.cap is None:
        return None
    cap_blocks = pool.cap // pool.block
    if blocks <= cap_blocks:
        return None
    return f"needs {blocks} blocks of `{pool.name}`; its cap is {cap_blocks} blocks"
