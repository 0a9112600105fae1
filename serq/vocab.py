"""The language's fixed names, in one place: the front end (compiler,
validator) and the evaluator read them from here, so no module of the
front end has to import another for its vocabulary."""

# Context variables (each legal only at some moments, see serq.validate).
CTX_NAMES = ("budget_left", "ntok", "ndec", "nreq", "kvb", "age", "size", "last", "now",
             "arrived", "admitted", "released")
SEQ_EVENTS = ("arrived", "admitted", "released")
FUNCS = {"min": (2, None), "max": (2, None), "floor": (1, 1), "ceil": (1, 1), "abs": (1, 1)}  # (least, most) arguments
POOL_FUNCS = ("cached", "allocated", "free", "waiting", "holders", "evictable")
DIST_NAMES = ("uniform", "geometric", "poisson", "weights")
UNIT_NS = {"ns": 1, "us": 1_000, "ms": 1_000_000, "s": 1_000_000_000}
