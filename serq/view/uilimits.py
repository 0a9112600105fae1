"""What a request to `serq ui` may cost, and who may make it.

The explorer is a server on 127.0.0.1, so any page the person browses can
send it requests. Three rules keep a page of another site out:

- the Host header must name the server itself (127.0.0.1 or localhost,
  with its port): a name rebound to 127.0.0.1 (DNS rebinding) is refused;
- a request from another site is served only as a top-level navigation
  (a link followed), never as an image, a script, a fetch or a frame;
- the violation search (a whole exploration) starts only on a POST from
  the explorer's own page, with the token that page carries.

And every request is bounded: a replay path of at most `MAX_STEPS` steps,
`REQUEST_SECONDS` of work (CPU time, checked at each step of a replay,
each state judged, each chunk of the page rendered) and a page of at most `MAX_PAGE`
bytes; a request over a bound gets a page that says which, not a hang.
Requests share no lock: each borrows one of at most `MODELS` models (a
model remembers its last state, so it serves one request at a time).
"""

from __future__ import annotations

import hmac
import queue
import threading
import time
from contextlib import contextmanager

from serq.check.model import SerqModel

MAX_STEPS = 10_000  # steps of a replay path
REQUEST_SECONDS = 10.0  # seconds of CPU time for one request
MAX_PAGE = 32 << 20  # bytes of one page
MODELS = 4  # requests worked on at once
LOOPBACK = ("127.0.0.1", "localhost")


class Refused(Exception):
    """A request the explorer does not serve: an HTTP status, a title and
    a message for the person who asked."""

    def __init__(self, status: int, title: str, message: str):
        super().__init__(message)
        self.status, self.title, self.message = status, title, message


class Budget:
    """The work one request may cost: seconds of CPU time of the thread
    that serves it (not of the machine's load), from its start; and as
    long, in seconds of the clock, to wait for a model."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.deadline = time.thread_time() + seconds
        self.wait_until = time.monotonic() + seconds

    def left(self) -> float:
        """Seconds it may still wait."""
        return max(0.0, self.wait_until - time.monotonic())

    def check(self) -> None:
        if time.thread_time() > self.deadline:
            raise Refused(503, "request too costly",
                          f"this page needs more than {self.seconds:g} s of CPU time, the most serq ui gives one "
                          "request; it was stopped. A shorter path shows; `serq explore INSTANCE --replay PATH "
                          "--html FILE` draws any run")


class BudgetedModel(SerqModel):
    """The explorer's model, that stops a request over its time budget at
    the next state it looks at (a replay's step, a state judged, a label)."""

    budget: Budget | None = None

    def _spend(self) -> None:
        if self.budget is not None:
            self.budget.check()

    def actions(self, state):
        self._spend()
        return super().actions(state)

    def invariants(self, state):
        self._spend()
        return super().invariants(state)

    def label(self, state, sid: int) -> str:
        self._spend()
        return super().label(state, sid)


class ModelPool:
    """At most `size` models, each lent to one request at a time; the
    first is made at once (a model that cannot be built fails the command
    before it serves), the others when requests overlap."""

    def __init__(self, make, size: int = MODELS):
        self.size = size
        self._make = make
        self._free: queue.LifoQueue = queue.LifoQueue()
        self._free.put(make())
        self._made = 1
        self._lock = threading.Lock()  # held only to count

    def _take(self, budget: Budget) -> BudgetedModel:
        try:
            return self._free.get_nowait()
        except queue.Empty:
            pass
        with self._lock:
            new = self._made < self.size
            self._made += new
        if new:
            try:
                return self._make()
            except BaseException:
                with self._lock:
                    self._made -= 1
                raise
        try:
            return self._free.get(timeout=budget.left())
        except queue.Empty:
            raise Refused(503, "busy", f"serq ui works on at most {self.size} requests at once and "
                          f"none ended within {budget.seconds:g} s; try again in a moment") from None

    @contextmanager
    def borrow(self, budget: Budget):
        model = self._take(budget)
        model.budget = budget
        try:
            yield model
        finally:
            model.budget = None
            self._free.put(model)


def check_steps(path: str, most: int) -> None:
    """Refuse a replay path of more than `most` steps before any work."""
    steps = path.count("/")
    if steps > most:
        raise Refused(414, "path too long",
                      f"the replay path has {steps:,} steps; serq ui shows paths of at most {most:,} steps. "
                      "`serq explore INSTANCE --replay PATH --html FILE` draws a longer run")


def render(template, budget: Budget, most: int, **values) -> str:
    """A template rendered chunk by chunk, within the request's time and a
    page of at most `most` bytes (counted in characters)."""
    out, size = [], 0
    for n, chunk in enumerate(template.generate(**values)):
        size += len(chunk)
        if size > most:
            most_text = f"{most / 2 ** 20:g} MiB" if most >= 2 ** 20 else f"{most:,} bytes"
            raise Refused(500, "page too large",
                          f"this page would be larger than {most_text}, the most serq ui serves; "
                          "a shorter path shows; `serq explore INSTANCE --replay PATH --html FILE` draws any run")
        if n % 64 == 0:
            budget.check()
        out.append(chunk)
    return "".join(out)


def served_hosts(port: int) -> set[str]:
    """The Host headers of requests to this server: its name and port
    (the port left out only when it is HTTP's default, 80)."""
    hosts = {f"{h}:{port}" for h in LOOPBACK}
    return hosts | set(LOOPBACK) if port == 80 else hosts


def check_request(environ: dict, headers, port: int) -> None:
    """Refuse a request whose Host is not this server (DNS rebinding) or
    that another site makes other than by following a link."""
    host = environ.get("HTTP_HOST")
    if host is None or host.lower() not in served_hosts(port):
        raise Refused(403, "refused: not this server's name",
                      f"the request names the host `{host or ''}`; this explorer answers only "
                      f"http://127.0.0.1:{port}/ and http://localhost:{port}/ (a page of another site "
                      "cannot read it through a name of its own)")
    site = headers.get("Sec-Fetch-Site")
    if site in ("cross-site", "same-site") and (headers.get("Sec-Fetch-Mode") != "navigate"
                                                or headers.get("Sec-Fetch-Dest") != "document"):
        raise Refused(403, "refused: a request from another site",
                      "a page of another site asked this explorer for a resource; serq ui answers another "
                      "site's links only (open the page itself)")


def check_search(form, headers, token: str, port: int) -> None:
    """The violation search starts only from the explorer's own page: its
    token, and no other origin."""
    origins = {f"http://{h}" for h in served_hosts(port)}
    origin = headers.get("Origin")
    if headers.get("Sec-Fetch-Site", "same-origin") != "same-origin" or (origin is not None
                                                                          and origin not in origins):
        raise Refused(403, "refused: a search asked by another site",
                      "the violation search starts from this explorer's own page only")
    if not hmac.compare_digest(form.get("token", "").encode(), token.encode()):
        raise Refused(403, "refused: no valid token",
                      "the violation search starts from the button of this explorer's pages "
                      "(a page of an earlier run of serq ui has an expired token: reload it)")
