"""Graphs of states: the livelock cycles, the stored graph and its analyses, walks, the forward search."""
