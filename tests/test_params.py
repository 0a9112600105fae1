"""No function of serq or the explorer takes more than eight positional
parameters (bench/count_params.py): what belongs together travels as one
tuple or record (the kernel's successor buffers, a shape, an event's
payload)."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _count_params():
    spec = importlib.util.spec_from_file_location("count_params", ROOT / "bench" / "count_params.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_no_function_takes_more_than_eight_positional_parameters():
    mod = _count_params()
    found = [(f.relative_to(ROOT), hit) for folder in mod.FOLDERS for f in sorted((ROOT / folder).rglob("*.py"))
             for hit in mod.over(f)]
    assert found == [], found


def test_the_parameter_rule(tmp_path):
    mod = _count_params()
    f = tmp_path / "x.py"
    f.write_text("def many(a, b, c, d, e, f, g, h, i): pass\n"
                 "def eight(a, b, c, d, e, f, g, h, *rest, i=0, j=1): pass\n"
                 "class C:\n"
                 "    def method(self, a, b, c, d, e, f, g, h): pass\n"
                 "    def more(self, a, b, /, c, d, e, f, g, h, i): pass\n")
    assert mod.over(f) == [(1, "many", 9), (5, "more", 9)]
