"""The JSON Schemas of serq's outputs (docs/json.md): FORMAT.json, built by `build.py`; `serq.formats.schema(FORMAT)` reads one."""
