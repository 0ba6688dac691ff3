"""Tuning: the gap rule's thresholds by cross-validated grid search, the learned selector, writing the config."""
