"""Pages in flight from a memory budget (`memory_budget_mib`, see `common.budget`).

The render's memory is Chromium's: one browser (browser, GPU, network and utility processes,
the zygotes) with Playwright's Node driver, plus one renderer process per page in flight (each
page is opened in its own context and closed when done). The pool is sized so that

    resident now + RENDER_PYTHON_MIB + RENDER_BROWSER_MIB + pages x RENDER_PAGE_MIB <= budget.

Measured on this machine (2 cores, Chromium from common.browser, sandbox auto) with
`common.memory.PeakMemory` around `pipelines.stages.extract.run_render(mode="auto")` on the
served sample web's JavaScript site (apps-en, 16 pages crawled, 8 rendered), with 1, 2 and 4
pages in flight (PeakMemory adds the children's resident sets, so shared library pages count
once per process, as they do in each step's `peak_memory_mib`):

    pages in flight   children (MiB)   this process (MiB, resident 177 at the start)
    1                 916, 918         208
    2                 1068             208
    4                 1351             208

so a page costs 142-152 MiB and the browser with the driver 766 MiB; the constants below round
those up. On the demo lake's crawl (432 candidates, 13 rendered pages, no sample web serving
sub-requests) the render peaked at 1125 MiB with 1 page in flight and 1551 MiB with 4 (children
926 and 1354), in a fresh process; with `memory_budget_mib=1300` it chose 2 pages and peaked at
1265 MiB (children 1071, this process 62 MiB over what it held when the budget was read: the
crawl's records and decisions, Playwright's connection). Heavier pages than the sample web's
need a larger RENDER_PAGE_MIB; these are estimates.
"""

from __future__ import annotations

from common.budget import Fit, fit

RENDER_BROWSER_MIB = 800.0  # Chromium's fixed processes and the Playwright driver (766 measured)
RENDER_PAGE_MIB = 160.0  # one renderer process per page in flight (142-152 measured)
RENDER_PYTHON_MIB = 96.0  # this process's growth while rendering (31 and 62 measured)


def pages_in_flight_for(budget_mib: float, most: int, resident: float | None = None) -> Fit:
    """The pool size (`Fit.units`, at most `most`) that keeps a render under `budget_mib`."""
    return fit(
        budget_mib,
        stage="render",
        unit="page in flight",
        unit_mib=RENDER_PAGE_MIB,
        fixed_mib=RENDER_PYTHON_MIB + RENDER_BROWSER_MIB,
        most=most,
        resident=resident,
    )
