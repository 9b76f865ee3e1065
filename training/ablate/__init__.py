"""Proxy-model ablations: train the same small model on each candidate dataset (an arm) with the
same recipe, token budget and seeds, and compare the arms on held-out evaluation texts.

`spec.py` reads the ablation spec; `run.py` trains and evaluates the arms (resumable, one arm at a
time); `evaluate.py` scores a checkpoint (bits per byte per language, zero-shot multiple choice);
`tasks.py` builds the zero-shot tasks from evaluation texts; `stats.py` the intervals and paired
differences; `overlap.py` the n-gram check that keeps evaluation texts out of training data;
`report.py` writes results.json, report.md and the plots.
"""
