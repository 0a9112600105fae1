import os
import subprocess
import sys

import pytest

from explorer.fingerprint import encode, fingerprint

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SAMPLES = [
    None, 0, 1, -7, 2**80, True, False, "a", "", "ünï", 1.5, b"\x00",
    (1, "a", None, True), ((1, 2), (3, (4,))), [1, 2], (), [], frozenset({"x", "y", "z"}),
]

# Golden values: a change here changes every fingerprint ever printed (replay
# output, stored results), so it must be deliberate.
GOLDEN = {
    None: 15140417470076621291,
    0: 12395330728457248619,
    True: 6782255648145153959,
    "a": 17943541893490360969,
    (1, "a", None, True): 4726533122802959790,
    ((1, 2), (3, (4,))): 1146691634977052047,
}


def test_golden_values():
    for value, fp in GOLDEN.items():
        assert fingerprint(value) == fp, value


def test_range_and_type_tags_distinguish():
    fps = [fingerprint(v) for v in SAMPLES]
    assert all(0 <= f < 2**64 for f in fps)
    assert len(set(fps)) == len(fps)
    assert fingerprint(1) != fingerprint(True) and fingerprint(0) != fingerprint(False)
    assert fingerprint(("ab", "c")) != fingerprint(("a", "bc"))
    assert fingerprint((1, 2)) != fingerprint([1, 2])
    assert fingerprint(((1,), 2)) != fingerprint((1, (2,)))


def test_frozenset_order_independent():
    a = frozenset(f"s{i}" for i in range(50))
    b = frozenset(reversed(sorted(a)))
    assert encode(a) == encode(b)


def test_unsupported_type_rejected():
    with pytest.raises(TypeError):
        fingerprint({"a": 1})
    with pytest.raises(TypeError):
        fingerprint((1, {2}))


def test_same_in_other_processes_and_hash_seeds():
    code = (
        "import sys; sys.path.insert(0, %r)\n"
        "from explorer.fingerprint import fingerprint\n"
        "samples = %r\n"
        "print([fingerprint(v) for v in samples])\n"
    ) % (ROOT, SAMPLES)
    expected = str([fingerprint(v) for v in SAMPLES])
    for seed in ("0", "12345"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, check=True).stdout.strip()
        assert out == expected
