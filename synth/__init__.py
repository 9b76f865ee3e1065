"""Synthetic-data domain code (captions, charts, tables to Markdown; later issues).

Plain Python over records and files; never imports Dagster or Beam.
"""
