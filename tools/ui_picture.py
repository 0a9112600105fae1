"""Regenerate docs/img/ui_state.png: `serq ui --search` on a shipped
instance, the background work done, a state of which one action is a
point of no return and another is not, photographed in Debian's Chromium.

    python tools/ui_picture.py                       # instances/theorem_no_join_rule.sq
    python tools/ui_picture.py instances/x.sq -o /tmp/x.png

Needs the `dev` extra (playwright) and /usr/bin/chromium, as the browser
tests do.
"""

from __future__ import annotations

import argparse
import re
import signal
import subprocess
import sys
import time
from collections import deque
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"


def first_mixed_state(get, limit: int = 2000) -> str:
    """The first replay path, breadth-first, whose actions are partly marked
    as points of no return: the picture shows both kinds."""
    todo, seen = deque(["0"]), {"0"}
    while todo and len(seen) < limit:
        path = todo.popleft()
        acts = get(f"api/state/{path}")["actions"]
        marks = {bool(a["no_return"]) for a in acts}
        if marks == {True, False}:
            return path
        for a in acts:
            nxt = f"{path}/{a['index']}"
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    raise SystemExit("no state with both kinds of action found: choose another instance")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("instance", nargs="?", default=str(ROOT / "instances" / "theorem_no_join_rule.sq"))
    ap.add_argument("-o", "--out", default=str(ROOT / "docs" / "img" / "ui_state.png"))
    a = ap.parse_args()
    from playwright.sync_api import sync_playwright

    inst = Path(a.instance).resolve()
    rel = inst.relative_to(ROOT) if inst.is_relative_to(ROOT) else inst
    proc = subprocess.Popen([sys.executable, "-m", "serq", "ui", str(rel), "--port", "0", "--search"], cwd=ROOT,
                            stdout=subprocess.PIPE, text=True)
    try:
        m = re.search(r"http://127\.0\.0\.1:\d+/", proc.stdout.readline())
        if not m:
            raise SystemExit("serq ui printed no address")
        url = m.group(0)
        with sync_playwright() as p:
            b = p.chromium.launch(executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu"])
            pg = b.new_context(viewport={"width": 1280, "height": 900}).new_page()

            def get(rest: str) -> dict:
                return pg.request.get(url + rest).json()

            end = time.monotonic() + 300
            while not get("api/status")["done"]:
                if time.monotonic() > end:
                    raise SystemExit("the background work did not end in 300 s")
                time.sleep(0.2)
            path = first_mixed_state(get)
            pg.goto(f"{url}state/{path}")
            pg.wait_for_selector("#actions li[data-index]")
            pg.screenshot(path=a.out, full_page=True)
            b.close()
        print(f"{a.out}: {rel}, state {path}")
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)
    return 0


if __name__ == "__main__":
    sys.exit(main())
