"""Evaluation harness for recall (imports recall; recall never imports eval)."""
