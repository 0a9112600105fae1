"""serq: a language, simulator and model checker for LLM-serving schedulers."""

__version__ = "0.1.0"
