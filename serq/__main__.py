"""`python -m serq` and the `serq` command. SIGINT and SIGTERM are caught
from the first instant, before the heavy imports (numpy, numba, the
compiled kernel take most of a second): a signal that arrives while the
program is still loading ends it with "interrupted" (exit 16), never a
traceback. `serq.cli.main` then takes over the handlers for the command.

numba's configuration is read without PyYAML when there is no
`.numba_config.yaml` to read (numba imports PyYAML as it starts only to
read that file, in the working directory: 15 ms of CPU); with the file
there, numba imports it and reads it as always (`_YamlOnlyForAFile`).

When the command is done, the objects it leaves are frozen out of the
garbage collector (`gc.freeze`): the interpreter's last collection at
exit then has nothing to scan (the modules of numpy, numba and pydantic,
a hundred thousand objects: a tenth of a second of a small `serq
explore`). What is freed by reference counting at exit still is (a file
still open is flushed and closed); only garbage in reference cycles is
left to the process's end, as the interpreter may leave it anyway."""

import gc
import os
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


class _YamlOnlyForAFile:
    """A finder refusing `yaml` to numba's configuration module while it is
    first imported, unless there is a `.numba_config.yaml` for it to read
    (numba then reads no file: what it does without PyYAML and without the
    file); any other import of `yaml` is left to the other finders."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        if name != "yaml":
            return None
        config = sys.modules.get("numba.core.config")
        if config is None:
            return None
        if not getattr(getattr(config, "__spec__", None), "_initializing", False) \
                or os.path.isfile(".numba_config.yaml"):
            return None
        raise ImportError("yaml: not needed (no .numba_config.yaml)")  # numba: no file-based configuration


def main() -> int:
    if "numba.core.config" not in sys.modules and "yaml" not in sys.modules:
        sys.meta_path.insert(0, _YamlOnlyForAFile)
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
