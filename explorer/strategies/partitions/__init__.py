"""Hash partitions of the state space, in this process or on Ray, with checkpoints."""
