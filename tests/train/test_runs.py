"""Versioned lake runs: fresh run ids, the `latest.json` pointer, and the pre-versioning layout."""

from __future__ import annotations

import pytest

from training.runs import latest_run, new_run_dir, resumable_run, run_dirs, set_latest

pytestmark = pytest.mark.timeout(30)


def _checkpoint(run):
    (run / "checkpoints").mkdir(parents=True)
    (run / "checkpoints" / "step_0000001.pt").write_bytes(b"x")


def test_run_ids_are_fresh_and_ordered_and_latest_names_the_finished_run(tmp_path):
    stage = tmp_path / "runs" / "cpt"
    first, second, third = (new_run_dir(stage) for _ in range(3))
    assert len({first, second, third}) == 3 and all(p.is_dir() for p in (first, second, third))
    assert run_dirs(stage) == [first, second, third]
    assert latest_run(stage) is None  # nothing finished yet
    set_latest(stage, first)
    assert latest_run(stage) == first
    _checkpoint(second)  # second crashed after a checkpoint; third never wrote one
    assert resumable_run(stage) == second
    assert latest_run(stage) == first


def test_pre_versioning_layout_is_still_found_and_a_bad_pointer_is_explained(tmp_path):
    stage = tmp_path / "pretrain"
    _checkpoint(stage)  # old layout: checkpoints directly under runs/<stage>
    assert latest_run(stage) == stage
    (stage / "latest.json").write_text("{oops")
    with pytest.raises(ValueError, match="latest.json: not a run pointer"):
        latest_run(stage)
    (stage / "latest.json").write_text('{"run_id": "20990101T000000Z"}')
    with pytest.raises(FileNotFoundError, match="does not exist"):
        latest_run(stage)
