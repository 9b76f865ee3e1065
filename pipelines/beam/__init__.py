"""Apache Beam pipelines, one module per stage area."""
