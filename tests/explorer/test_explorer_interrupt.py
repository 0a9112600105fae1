"""A signal during a search gives the verdict "interrupted" with the
statistics so far, in every engine (the signal is simulated by raising
`Interrupted` from the progress callback, where a real one would land)."""

import pytest

from explorer import EXIT_INTERRUPTED, Interrupted, ModelFactory, check, render_json, render_text
from explorer_toys import CounterPair


def _stopper(after: int, signame: str):
    calls = []

    def progress(stats):
        calls.append(stats.distinct)
        if len(calls) > after:
            raise Interrupted(signame)
    return progress


@pytest.mark.parametrize("strategy,workers", [("bfs", 1), ("dfs", 1), ("bfs", 2)])
def test_interrupt_gives_partial_statistics(strategy, workers):
    f = ModelFactory(CounterPair, (40,))  # 41 * 41 states: several progress calls before the end
    r = check(f if workers > 1 else f(), strategy=strategy, workers=workers,
              progress=_stopper(2, "SIGTERM"), progress_interval=0.0)
    assert r.verdict == "interrupted" and r.exit_code == EXIT_INTERRUPTED == 16
    assert r.bound_reason == "SIGTERM"
    assert 0 < r.stats.distinct < 41 * 41
    assert r.stats.workers == workers
    assert r.message.startswith(f"stopped by SIGTERM after {r.stats.distinct} distinct states")
    text = render_text(r, with_timing=False)
    assert text.splitlines()[0].startswith("interrupted: stopped by SIGTERM")
    assert f"distinct={r.stats.distinct}" in text.splitlines()[-1]
    assert render_json(r)["exit_code"] == 16


def test_plain_keyboard_interrupt_is_sigint():
    def progress(stats):
        raise KeyboardInterrupt

    r = check(CounterPair(40), strategy="dfs", progress=progress, progress_interval=0.0)
    assert r.verdict == "interrupted" and r.bound_reason == "SIGINT" and not r.ok
