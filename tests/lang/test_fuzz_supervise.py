"""The fuzzing campaign's supervision (bench/supervise.py, bench/fuzz.py):
every job is reported once, a job past its time is a hang and its worker is
killed (even one stuck where Python cannot interrupt it), a worker that dies
is reported, none is left behind, and the mutants and counts do not depend
on the number of workers."""

from __future__ import annotations

import multiprocessing
import os
import signal
import time

import pytest

from bench import fuzz
from bench.supervise import DIED, DONE, ERROR, HANG, supervise


def _work(job):
    if job == 3:
        signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGALRM, signal.SIGTERM])
        time.sleep(60)  # stuck: no Python-level interruption gets through
    if job == 5:
        os.kill(os.getpid(), signal.SIGKILL)
    if job == 7:
        raise ValueError("seven")
    if job == 8:
        os._exit(3)
    return job * job


def test_every_job_is_reported_once_hangs_and_deaths_included():
    t0 = time.monotonic()
    got = {job: (status, value) for job, status, value in supervise(range(12), _work, workers=2, hang=0.5)}
    assert time.monotonic() - t0 < 20
    assert sorted(got) == list(range(12))
    assert got[3][0] == HANG and got[3][1][0] >= 2.0 and got[3][1][1] < 0.5  # 4 x hang of wall clock, no CPU
    assert got[5] == (DIED, "died (killed by SIGKILL)")
    assert got[8] == (DIED, "died (exit code 3)")
    assert got[7][0] == ERROR and got[7][1][0] == "ValueError: seven" and "Traceback" in got[7][1][1]
    assert all(got[j] == (DONE, j * j) for j in (0, 1, 2, 4, 6, 9, 10, 11))
    assert multiprocessing.active_children() == []


def _spin(job):
    if job == 1:
        while True:  # computing without end
            pass
    return job


def test_a_job_computing_past_its_cpu_time_is_a_hang():
    got = {job: (status, value) for job, status, value in supervise(range(4), _spin, workers=2, hang=0.5)}
    assert got[1][0] == HANG and got[1][1][1] > 0  # it computed (whether the CPU or the clock ran out first)
    assert all(got[j] == (DONE, j) for j in (0, 2, 3))


def test_stopping_early_leaves_no_worker():
    results = supervise(range(100), _work, workers=2, hang=1.0)
    next(results)
    results.close()
    assert multiprocessing.active_children() == []


def test_workers_are_recycled_without_losing_jobs():
    got = [(j, s, v) for j, s, v in supervise([0, 1, 2, 4, 6, 9, 10], _work, workers=2, recycle=2)]
    assert sorted(got) == sorted((j, DONE, j * j) for j in [0, 1, 2, 4, 6, 9, 10])


def test_the_campaign_counts_hangs_and_dead_workers_as_findings(monkeypatch):
    hanging, dying = fuzz.mutant("deep", 0, 2), fuzz.mutant("deep", 0, 4)

    def pipeline(kind, text, **kw):
        if text == hanging:
            time.sleep(60)
        if text == dying:
            os.kill(os.getpid(), signal.SIGTERM)
        return "rejected"

    monkeypatch.setattr(fuzz, "pipeline", pipeline)  # the workers are forked: they see it
    tally = fuzz.campaign("deep", 8, workers=2, hang=1.0)  # 4 s of wall clock idle: no false hang on a loaded machine
    assert tally.n == 8
    assert tally.outcomes == {"rejected": 6, "HANG": 1, "CRASH": 1}
    assert [i for i, _, _ in tally.found] == [2, 4]
    assert tally.found[1][1] == "worker: died (killed by SIGTERM)"
    assert "crashes 1, hangs 1" in tally.line(2)


def test_mutants_and_counts_do_not_depend_on_the_workers():
    assert fuzz.mutant("numeric", 3, 17) == fuzz.mutant("numeric", 3, 17) != fuzz.mutant("numeric", 3, 18)
    one = fuzz.campaign("ir", 30, seed=3, workers=1, run=False)
    two = fuzz.campaign("ir", 30, seed=3, workers=2, run=False)
    assert one.n == two.n == 30
    assert one.outcomes == two.outcomes and one.digests == two.digests and len(one.digests) > 20
    assert one.outcomes["CRASH"] == one.outcomes["HANG"] == 0


def test_a_short_campaign_prints_its_figures(capsys):
    assert fuzz.main(["-n", "6", "--kinds", "ir,numeric", "--no-run", "--jobs", "2"]) == 0
    out = capsys.readouterr().out
    assert "ir: 6 mutants" in out and "numeric: 6 mutants" in out
    assert "mutants/s with 2 workers" in out and "crashes 0, hangs 0" in out


def test_a_crash_is_saved_whole_with_its_reproducer(monkeypatch, tmp_path, capsys):
    def pipeline(kind, text, **kw):
        if text == fuzz.TEXTS["theorem.sq"]:  # the warm-up
            return "pass"
        raise fuzz.Crash("run", ValueError("boom"))

    monkeypatch.setattr(fuzz, "pipeline", pipeline)
    assert fuzz.main(["-n", "2", "--kinds", "deep", "--jobs", "1", "--save", str(tmp_path)]) == 1
    assert (tmp_path / "deep-1.txt").read_text() == fuzz.mutant("deep", 0, 1)
    assert "--only deep:0" in capsys.readouterr().err


def test_each_distinct_crash_is_shown_once(monkeypatch, capsys):
    # mutants 0 and 1 crash alike, mutant 2 otherwise: with --show 2 both kinds are shown, not #0 and #1
    def pipeline(kind, text, **kw):
        if text == fuzz.TEXTS["theorem.sq"]:  # the warm-up
            return "pass"
        if text == fuzz.mutant("deep", 0, 2):
            raise fuzz.Crash("run", KeyError("other"))
        raise fuzz.Crash("run", ValueError("boom"))

    monkeypatch.setattr(fuzz, "pipeline", pipeline)
    assert fuzz.main(["-n", "3", "--kinds", "deep", "--jobs", "1", "--show", "2"]) == 1
    err = capsys.readouterr().err
    assert "--only deep:0" in err and "--only deep:2" in err and "--only deep:1" not in err
    with pytest.raises(SystemExit):
        fuzz.main(["--only", "deep"])  # an index is required: a usage error, not a traceback
    assert "give KIND:INDEX" in capsys.readouterr().err


@pytest.mark.parametrize("kind", ["numeric", "deep", "ir"])
def test_a_few_real_mutants_run_clean(kind):
    tally = fuzz.campaign(kind, 6, seed=1, workers=2, hang=60)
    assert tally.n == 6 and tally.found == [], tally.found


def test_the_documented_options_exist():
    import re
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "language.md").read_text()
    para = doc[doc.index("**Fuzzing.**"):doc.index("| kind | mutants (distinct) | wall | outcomes")]
    flags = set(re.findall(r"(?<![-\w])(--[a-z][a-z-]*)", para))
    assert {"--hang", "--jobs", "--only", "--save", "--time-limit", "--address-space", "--seed"} <= flags
    known = {o for a in fuzz.parser()._actions for o in a.option_strings}
    assert flags <= known, flags - known


def test_ctrl_c_prints_the_counts_so_far_and_leaves_no_worker():
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    marker = "918273"  # a seed no other process uses: its workers carry it in their command line
    p = subprocess.Popen([sys.executable, "bench/fuzz.py", "-n", "100000", "--kinds", "ir,deep", "--every", "10",
                          "--no-run", "--seed", marker], cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    first = p.stdout.readline()  # the first counts: the workers are running
    assert first.startswith("ir: 10 mutants"), first + p.stderr.read()
    p.send_signal(signal.SIGINT)
    try:
        out, err = p.communicate(timeout=120)
    except subprocess.TimeoutExpired:  # say where it was: every thread's stack (faulthandler, SIGUSR1), then end it
        p.send_signal(signal.SIGUSR1)
        time.sleep(2)
        p.kill()
        out, err = p.communicate()
        raise AssertionError(f"still running 120 s after SIGINT; its stacks:\n{err[-6000:]}") from None
    assert p.returncode == 130, err
    assert "(interrupted)" in out and "Traceback" not in err and not out.count("deep:")
    deadline = time.monotonic() + 60
    while _left(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _left(marker) == []


def _left(marker: str) -> list[str]:
    from pathlib import Path

    left = []
    for d in Path("/proc").iterdir():
        try:
            if d.name.isdigit() and marker in (d / "cmdline").read_bytes().decode(errors="replace"):
                left.append(d.name)
        except OSError:
            continue
    return left


def test_a_parent_killed_with_sigkill_leaves_no_worker():
    import subprocess
    import sys
    from pathlib import Path

    marker = "sigkill-parent-5521"
    code = ("import sys, time\nfrom bench.supervise import supervise\n"
            "def stuck(job):\n    print('started', flush=True)\n    time.sleep(600)\n"
            "for r in supervise(range(2), stuck, workers=2, hang=600):\n    pass\n")
    p = subprocess.Popen([sys.executable, "-c", code, marker], cwd=Path(__file__).resolve().parents[2],
                         stdout=subprocess.PIPE, text=True)
    try:
        seen = ""
        while seen.count("started") < 2:  # both workers under way (their lines may interleave)
            seen += p.stdout.readline()
        assert len(_left(marker)) == 3, _left(marker)  # the parent and its two workers
    finally:
        p.kill()  # SIGKILL: the parent can do nothing for its workers
        p.wait()
    deadline = time.monotonic() + 60
    while _left(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _left(marker) == []
