"""Image-text filters over rows (plain Python, no orchestration): caption cleaning
(captions.py), exact/perceptual/URL de-duplication (dedup.py), interleaved-document filtering
(interleaved.py), knowledge-domain selection (domains.py) and their thresholds (config.py)."""
