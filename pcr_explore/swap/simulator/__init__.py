"""The step simulator: policies, where each codec applies, the simulation, results and reports."""
