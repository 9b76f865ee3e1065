"""YAML for the project's configuration files, read with YAML 1.2's booleans.

PyYAML's safe loader follows YAML 1.1, where `yes`, `no`, `on`, `off`, `y` and `n` (any case)
are booleans as well as `true` and `false`: a filter config listing Norwegian (`languages: [en,
no]`), a mixture weighting it (`no: 0.1`) or a per-language override keyed by it reads False
where the user wrote a language code. Here only true and false (`true`, `True`, `TRUE`, and the
same for false) are booleans, as in YAML 1.2 and in JSON; every other scalar is what YAML 1.1
made it. A boolean field given `yes` or `off` still validates: pydantic reads those strings as
booleans.

A key given twice in one mapping is an error (PyYAML keeps the last value without a word: a
second `raw_pages:` would silently drop the first one's settings); `<<` merge keys still merge,
and a key written beside a merge overrides the merged value as YAML intends. `load_file` reads a
file and says what is wrong in one line naming it: not UTF-8 (at which byte), or not valid YAML
(at which line).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

_BOOL = "tag:yaml.org,2002:bool"
_MERGE = "tag:yaml.org,2002:merge"
_VALUE = "tag:yaml.org,2002:value"


class YamlFileError(ValueError):
    """A YAML file that cannot be read: one line naming the file, what is wrong and the fix."""


class DuplicateKeyError(yaml.YAMLError):
    """A mapping gives the same key twice; the message names the key and both lines."""


class Loader(yaml.SafeLoader):
    """yaml.SafeLoader with YAML 1.2's booleans that refuses a key given twice (see the module
    docstring)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        """The mapping, once no key of its own (merges aside) is given twice."""
        if isinstance(node, yaml.MappingNode):
            first: dict[Any, tuple[str, int]] = {}
            for key_node, _ in node.value:
                if not isinstance(key_node, yaml.ScalarNode) or key_node.tag in (_MERGE, _VALUE):
                    continue
                key = self.construct_object(key_node, deep=False)
                line = key_node.start_mark.line + 1
                try:
                    earlier = first.get(key)
                except TypeError:  # an unhashable key: the base constructor says so
                    continue
                if earlier is not None:
                    raise DuplicateKeyError(_twice(key_node.value, line, *earlier))
                first[key] = (key_node.value, line)
        return super().construct_mapping(node, deep=deep)


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


def _twice(text: str, line: int, first_text: str, first_line: int) -> str:
    same = f"key {text!r}" if text == first_text else f"key {text!r} (the same as {first_text!r})"
    where = f"lines {first_line} and {line}" if line != first_line else f"line {line}"
    return f"{same} is given twice ({where}); keep one (YAML would silently use the last)"


def load_file(path: str | Path) -> Any:
    """One YAML document read from a file (`None` when it is empty); a file that is not UTF-8 or
    not valid YAML is a YamlFileError naming it, the byte or line, and the fix. A missing or
    unreadable file raises the OSError as it is (callers say which file they wanted and why)."""
    data = Path(path).read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise YamlFileError(
            f"{path}: not UTF-8 at byte {exc.start} (line {line}); save it as UTF-8"
        ) from None
    try:
        return load(text)
    except yaml.YAMLError as exc:
        raise YamlFileError(f"{path}: not valid YAML: {problem(exc)}") from None


def problem(exc: yaml.YAMLError) -> str:
    """A YAML error on one line: where (line, column) and what, without the quoted snippet."""
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        what = exc.problem or exc.context or type(exc).__name__
        if exc.context and exc.problem:
            what += f" ({exc.context}"
            if exc.context_mark and exc.context_mark is not mark:
                what += f" at line {exc.context_mark.line + 1}"
            what += ")"
        return where + " ".join(what.split())
    return " ".join(str(exc).split())
