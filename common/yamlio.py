"""YAML for the project's configuration files, read with YAML 1.2's booleans.

PyYAML's safe loader follows YAML 1.1, where `yes`, `no`, `on`, `off`, `y` and `n` (any case)
are booleans as well as `true` and `false`: a filter config listing Norwegian (`languages: [en,
no]`), a mixture weighting it (`no: 0.1`) or a per-language override keyed by it reads False
where the user wrote a language code. Here only true and false (`true`, `True`, `TRUE`, and the
same for false) are booleans, as in YAML 1.2 and in JSON; every other scalar is what YAML 1.1
made it. A boolean field given `yes` or `off` still validates: pydantic reads those strings as
booleans.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

_BOOL = "tag:yaml.org,2002:bool"


class Loader(yaml.SafeLoader):
    """yaml.SafeLoader with YAML 1.2's booleans (see the module docstring)."""


Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != _BOOL]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
Loader.add_implicit_resolver(
    _BOOL, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)


def load(text: str) -> Any:
    """One YAML document (`None` when it is empty)."""
    return yaml.load(text, Loader=Loader)  # noqa: S506  (a SafeLoader subclass)
