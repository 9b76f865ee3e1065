"""Stage entry points shared by the CLI, the Dagster assets and the demo."""
