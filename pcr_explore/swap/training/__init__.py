"""Codecs applied to the activations of real training: hooks, per-tensor policies, runs, sweeps."""
