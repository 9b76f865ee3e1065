"""Filtering domain code: language ID, quality classifiers, heuristics, PII, de-duplication.

Plain Python over records and files; never imports Dagster or Beam.
"""
