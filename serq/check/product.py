"""Models over serq's states with something carried beside each (the
worst-case search's metric state, the SLO search's counters): a product
state's `state` is serq's own, `self.sm` the SerqModel, and the words of
a trace are serq's."""

from __future__ import annotations


class OverSerq:
    """The words and rules of a product model: serq's, on each product
    state's `state`."""

    sm: object  # the SerqModel the product is built over

    def format_action(self, state, action):
        return self.sm.format_action(state.state, action)

    def format_diff(self, state, nxt):
        return self.sm.format_diff(state.state, nxt.state)

    def format_state(self, state):
        return self.sm.format_state(state.state)

    def describe_deadlock(self, state):
        return self.sm.describe_deadlock(state.state)

    # serq's rules on each product state's `state`: actions, done, progress, violations
    def actions(self, state):
        return self.sm.actions(state.state)

    def is_done(self, state):
        return self.sm.is_done(state.state)

    def is_progress(self, state, action, nxt):
        return self.sm.is_progress(state.state, action, nxt.state)

    def invariants(self, state):
        return self.sm.invariants(state.state)
