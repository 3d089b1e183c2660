from ._store import Store
from .results import ResultsCache, content_identity

__all__ = ["Store", "ResultsCache", "content_identity"]
