"""Comparison: embedders, lexical, fused and reranked pipelines on the same questions, with significance tests."""
