"""The run session: the one owner of a training run's life (Qt-free)."""

from workbench.session.states import RunState, StopReason, describe

__all__ = ["RunState", "StopReason", "describe"]
