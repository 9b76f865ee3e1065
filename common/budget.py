"""Memory budgets: a stage given `memory_budget_mib` turns it into the size of its knob.

The budget is a ceiling on what `common.memory.PeakMemory` reports for the stage (and what each
Dagster step reports as `peak_memory_mib`): this process's resident memory, what it already held
when the stage started included, plus its child processes' (Chromium, Beam workers). A stage
fits its knob (pages in flight, rows held at once, rows read at once) into what is left after
what is resident now and its own fixed cost, both in MiB, at a measured cost per unit:

    units = floor((budget - resident now - fixed) / per unit), at most the stage's default.

A budget too small for one unit is a `ValueError` that names the field, its flag and the
smallest budget that fits in this process. The per-unit and fixed costs are measured constants
(each stage says how it measured them); they are upper estimates, not guarantees for any input.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import psutil

FIELD = "memory_budget_mib"
FLAG = "--memory-budget-mib"


def resident_mib() -> float:
    """Resident memory of this process and its children now, in MiB (as PeakMemory adds them)."""
    from common.memory import children_bytes, own_cmdline

    proc = psutil.Process()
    return (proc.memory_info().rss + children_bytes(proc, own_cmdline())) / 2**20


@dataclass(frozen=True)
class Fit:
    """How a budget was spent: `units` of `unit_mib` each after `resident_mib` and `fixed_mib`."""

    budget_mib: float
    resident_mib: float
    fixed_mib: float
    unit_mib: float
    units: int

    def as_dict(self) -> dict[str, float | int]:
        return {
            "budget_mib": self.budget_mib,
            "resident_mib": round(self.resident_mib, 1),
            "fixed_mib": round(self.fixed_mib, 1),
            "unit_mib": round(self.unit_mib, 3),
            "units": self.units,
        }


def fit(
    budget_mib: float,
    *,
    stage: str,
    unit: str,
    unit_mib: float,
    fixed_mib: float = 0.0,
    most: int | None = None,
    resident: float | None = None,
) -> Fit:
    """How many units of `unit_mib` fit in `budget_mib` (at most `most`); a ValueError naming
    the field and the smallest budget when not even one fits."""
    if unit_mib <= 0:
        raise ValueError(f"{stage}: cost per {unit} must be positive, got {unit_mib}")
    here = resident_mib() if resident is None else resident
    room = budget_mib - here - fixed_mib
    units = math.floor(room / unit_mib) if room > 0 else 0
    if units < 1:
        smallest = math.ceil(here + fixed_mib + unit_mib)
        raise ValueError(
            f"{FIELD}={budget_mib:g} ({FLAG}): too small for {stage}: one {unit} needs "
            f"{unit_mib:.0f} MiB on top of {here:.0f} MiB already resident and {fixed_mib:.0f} "
            f"MiB fixed; give at least {smallest} MiB, or leave {FIELD} unset"
        )
    if most is not None:
        units = min(units, most)
    return Fit(budget_mib, here, fixed_mib, unit_mib, units)
