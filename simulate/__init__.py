"""exitlaw.simulate: samplers for every verifier, builders, synthetic models,
calibrated statistics, Hypothesis strategies (``exitlaw.simulate.strategies``)
and the conformance kit. Submodules are imported explicitly by their users.
"""
