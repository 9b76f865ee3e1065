"""Orchestration layer: Dagster assets, Beam pipelines, resources and the `refinery` CLI.

It adapts the domain packages (crawlers, filters, synth, training) and holds no domain logic.
"""

import os

# Before anything imports torch: see training/__init__.py for why OpenMP waits passively.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
