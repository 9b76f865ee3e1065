"""The shipped toxicity and NSFW classifiers (see README.md; rebuilt by build.py)."""
