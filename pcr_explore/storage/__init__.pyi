from ._store import Store

__all__ = ["Store"]
