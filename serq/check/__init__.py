"""Exhaustive questions over an instance: serq's model in the explorer, the driver, --worst, the theorem, sweeps, diagnosis.

`serq.check` is also the library's call: `serq.check(instance, ...)` is
`serq.api.check` (simulate and judge, as `serq check` does). The package
is callable so that both hold: `serq.check.model` is this package's
module, `serq.check(...)` the call (docs/api.md)."""

import sys
import types


class _Package(types.ModuleType):
    def __call__(self, *args, **kwargs):
        from serq.api import check

        return check(*args, **kwargs)


sys.modules[__name__].__class__ = _Package
