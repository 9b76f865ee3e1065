"""Orchestration layer: Dagster assets, Beam pipelines, resources and the `refinery` CLI.

It adapts the domain packages (crawlers, filters, synth, training) and holds no domain logic.
"""
