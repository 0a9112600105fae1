"""Exhaustive questions over an instance: serq's model in the explorer, the driver, --worst, the theorem, sweeps, diagnosis."""
