# Make the repository root (for `import explorer`) and this folder (for the
# shared toy models) importable however pytest was started.
import os
import sys

_here = os.path.dirname(os.path.abspath(__file__))
_root = os.path.dirname(os.path.dirname(_here))
for _p in (_root, _here):
    if _p not in sys.path:
        sys.path.insert(0, _p)
