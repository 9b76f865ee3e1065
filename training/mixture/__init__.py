"""Mixtures: spec (pydantic), sampling arithmetic, source reading, packing, builder and report."""

from training.mixture.builder import assemble, build_mixture
from training.mixture.spec import MixtureSpec, SpecError, load_spec, parse_spec

__all__ = ["MixtureSpec", "SpecError", "assemble", "build_mixture", "load_spec", "parse_spec"]
