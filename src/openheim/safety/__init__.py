"""Safety layers: policy, risk, staging, trust and guarded web access."""
