"""Compressed tensor swapping: codecs, activation traces, a cost model and a step simulator."""
