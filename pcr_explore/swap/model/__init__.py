"""The cost model: codec kernel costs, device profiles, calibration and the online predictor."""
