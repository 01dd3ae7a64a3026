"""The memory pipeline: small steps that the Memory facade orchestrates."""
