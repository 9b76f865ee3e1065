"""Backward-compatible name: the fixture web lives in the top-level `sampleweb/` package.

`crawlers.sampleweb` and every `crawlers.sampleweb.<module>` are the very module objects of
`sampleweb` and `sampleweb.<module>` (registered in sys.modules here), so old imports and
`python -m crawlers.sampleweb` keep working. New code imports `sampleweb` directly.
"""

import importlib
import pkgutil
import sys

import sampleweb

for _info in pkgutil.iter_modules(sampleweb.__path__):
    if _info.name != "__main__":
        _module = importlib.import_module(f"sampleweb.{_info.name}")
        sys.modules[f"{__name__}.{_info.name}"] = _module
sys.modules[__name__] = sampleweb
