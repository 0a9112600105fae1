"""`python -m serq` and the `serq` command. SIGINT and SIGTERM are caught
from the first instant, before the heavy imports (numpy, numba, the
compiled kernel take most of a second): a signal that arrives while the
program is still loading ends it with "interrupted" (exit 16), never a
traceback. `serq.cli.main` then takes over the handlers for the command.

The garbage collector looks at the youngest objects every 20,000
allocations instead of 700: start-up makes a few hundred thousand
objects that live for the whole command (the modules of numpy, numba and
pydantic), and each of the collections their making set off scanned
them again (240 collections, 60 ms of a small `serq explore`; 7 and
30 ms so).

When the command is done, the objects it leaves are frozen out of the
garbage collector (`gc.freeze`): the interpreter's last collection at
exit then has nothing to scan (the modules of numpy, numba and pydantic,
a hundred thousand objects: a tenth of a second of a small `serq
explore`). What is freed by reference counting at exit still is (a file
still open is flushed and closed); only garbage in reference cycles is
left to the process's end, as the interpreter may leave it anyway."""

import gc
import signal
import sys

# explorer.runtime.verdict.EXIT_INTERRUPTED, written out here: importing it would
# load the engine before the handlers are in place (tests/cli/test_interrupts.py
# checks the two agree).
EXIT_INTERRUPTED = 16


class EarlyInterrupt(KeyboardInterrupt):
    """A signal that came while the program was loading; `signame` says which."""

    def __init__(self, signame: str) -> None:
        super().__init__(signame)
        self.signame = signame


def _raise(signum, frame):
    raise EarlyInterrupt(signal.Signals(signum).name)


def main() -> int:
    gc.set_threshold(20_000, *gc.get_threshold()[1:])  # (start-up: most objects made live to the end)
    for s in (signal.SIGINT, signal.SIGTERM):
        signal.signal(s, _raise)
    try:
        from serq.cli import main as cli_main

        return cli_main()
    except KeyboardInterrupt as e:
        print(f"serq: interrupted by {getattr(e, 'signame', 'SIGINT')}", file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        gc.freeze()  # (the command's end: nothing left for the collection at exit to scan)


if __name__ == "__main__":
    sys.exit(main())
