"""Crawling domain code: robots.txt, the polite fetcher, the frontier, rendering and extraction.

Plain Python over records and files; never imports Dagster or Beam.
"""
