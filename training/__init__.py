"""Training domain code: tokenizer, mixtures and shards, the data loader, the model and trainer.

Plain Python over records and files; never imports Dagster or Beam.
"""
