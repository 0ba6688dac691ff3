"""Data: note collections, question sets (JSONL) and their provenance, BEIR and CLINC150 layouts."""
