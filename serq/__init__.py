"""serq: a language, simulator and model checker for LLM-serving schedulers.

As a library (docs/api.md): `serq.explore`, `serq.run`, `serq.check`,
`serq.sweep`, `serq.diff` take an instance (a path, or the text of a `.sq` instance)
and the command's limits as keywords, and return results with a short
repr that render as the `--html` page in a notebook. They are imported
on first use: `import serq` stays cheap (the command line imports it).
"""

__version__ = "0.1.0"

_API = {"explore", "run", "check", "sweep", "diff", "Result", "Run", "Checked", "Swept", "Differed"}

__all__ = sorted(_API | {"SerqError", "__version__"})


def __getattr__(name: str):
    if name == "check":  # the package serq.check, callable: serq.check(...) is serq.api.check
        import importlib

        return importlib.import_module("serq.check")
    if name in _API:
        from serq import api

        return getattr(api, name)
    if name == "SerqError":
        from serq.diagnostics import SerqError

        return SerqError
    raise AttributeError(f"module 'serq' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
