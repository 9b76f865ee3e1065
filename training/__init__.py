"""Training domain code: tokenizer, mixtures and shards, the data loader, the model and trainer.

Plain Python over records and files; never imports Dagster or Beam.
"""

import os

# OpenMP threads that spin-wait stall each other on a shared or small CPU (10x slower training
# steps measured on 2 cores); passive waiting costs nothing measurable on a dedicated machine.
# It must be set before torch is first imported, so it lives at the top of the package.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
