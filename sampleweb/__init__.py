"""The bundled, deterministic sample web served on loopback for the demo, tests and benchmarks.

web = build_web(seed=0)
with serve(web) as sw:
    sw.seeds(); sw.labels_table()
"""

from .build import build_web
from .export import labels_table, write_to_lake
from .model import Page, SampleWeb, Site
from .server import ServedWeb, serve

__all__ = [
    "Page",
    "SampleWeb",
    "ServedWeb",
    "Site",
    "build_web",
    "labels_table",
    "serve",
    "write_to_lake",
]
