"""Apache Beam pipelines, one module per stage area.

Beam is imported here first, once, without its import-time warning ("apitools not found ...":
a `logging.warning` on an unconfigured root logger installs a stderr handler, so the line came
before every stage's own one-line error, and every later log line of the run followed it)."""


def _import_beam_quietly() -> None:
    import logging

    root = logging.getLogger()
    quiet = logging.NullHandler() if not root.handlers else None
    if quiet is not None:
        root.addHandler(quiet)
    try:
        import apache_beam  # noqa: F401
    finally:
        if quiet is not None:
            root.removeHandler(quiet)


_import_beam_quietly()
