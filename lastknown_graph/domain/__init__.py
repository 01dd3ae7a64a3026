"""The domain: facts, reports, volatility priors and input validation; no I/O."""
