"""Code that more than one domain package uses (crawlers/ and filters/ both identify languages).

Nothing here imports crawlers/, filters/, synth/, training/ or pipelines/, so any of them may
import it without a cycle.
"""
