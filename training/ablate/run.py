"""Run an ablation: per arm, its mixture, the overlap check, one proxy run per seed, the scores.

Layout of the output directory:

    arms/<arm>/mixture/          the arm's mixture, when the spec builds it
    arms/<arm>/seed-<s>/         a training run directory (training/trainer.py)
    arms/<arm>/arm.json          written last: the arm's scores and fingerprint
    results.json, report.md, loss_curves.png, bpb.png

Resume: an arm whose arm.json exists with the same fingerprint (spec of the arm, the contents of
its input documents, proxy config, budget, seeds, eval sets, tasks) is reused; any other arm
directory is removed and redone whole, so a killed ablation redoes only the arm it was in.
"""

from __future__ import annotations

import json
import math
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from common import yamlio
from training.ablate.spec import (
    AblationError,
    AblationSpec,
    ArmSpec,
    file_digest,
    fingerprint,
    load_spec,
    resolve,
)
from training.ablate.texts import EvalText, Item, build_items, read_eval_set

# (arm name, input documents, filter config, directory to write) -> the filter's output directory
# (documents.parquet, annotated.parquet): the filter stage, which training/ cannot import
FilterDocs = Callable[[str, Path, Path, Path], Path]
ARM_PREFIX = "arm:"  # a mixture-spec source path inside the arm's own filter output
ARM_DONE = "arm.json"


def load_eval_sets(spec: AblationSpec, spec_dir: Path, lake_root: Path | None):
    """{set name: (texts, zero-shot items)} and each set's file digest."""
    sets, digests = {}, {}
    for es in spec.eval_sets:
        path = resolve(es.path, spec_dir, lake_root)
        texts = read_eval_set(es, path)
        sets[es.name] = (texts, build_items(texts, spec.tasks))
        digests[es.name] = file_digest(path)
    return sets, digests


def proxy_config(spec: AblationSpec, seed: int, steps: int) -> dict[str, Any]:
    """The proxy config of one run: the spec's config with the seed and the arm's steps; evaluation
    and the one checkpoint at the end; a warm-up longer than the run shortened to a tenth of it."""
    from training.train_config import load_run_config, resolve_config_path

    load_run_config(spec.config)  # validates, with the config's own error
    raw = yamlio.load_file(resolve_config_path(spec.config))
    stage = raw["stages"][spec.stage]
    stage["steps"] = steps
    if stage.get("warmup_steps", 0) >= steps:
        stage["warmup_steps"] = steps // 10
    raw.setdefault("train", {}).update(
        seed=seed,
        log_every=max(1, steps // 40),
        eval_every=steps,
        checkpoint_every=steps,
        keep_checkpoints=1,
    )
    return raw


def steps_for(spec: AblationSpec, manifest: dict[str, Any]) -> tuple[int, int]:
    """(steps, tokens per step) giving every arm `spec.tokens` training tokens: sequences of the
    mixture's seq_len, batch x grad_accum of them a step."""
    from training.train_config import load_run_config

    cfg, _ = load_run_config(spec.config)
    batch = cfg.stage(spec.stage).batch_size or cfg.train.batch_size
    per_step = batch * cfg.train.grad_accum * int(manifest["seq_len"])
    return max(1, math.ceil(spec.tokens / per_step)), per_step


def arm_mixture_spec(
    spec_path: Path, out: Path, lake_root: Path | None, filtered: Path | None = None
) -> Path:
    """A copy of a mixture spec with every path absolute (`arm:NAME` -> the arm's filter output
    `filtered/NAME`), written to `out`, so it builds from the arm's directory."""
    from training.mixture.spec import load_spec as load_mixture_spec

    load_mixture_spec(spec_path)  # the mixture spec's own errors first
    data = yamlio.load_file(spec_path)
    base = spec_path.resolve().parent

    def place(path: str, field: str) -> str:
        if path.startswith(ARM_PREFIX):
            if filtered is None:
                raise AblationError(
                    f"{spec_path}: {field}: {path!r} names the arm's filter output, but the arm "
                    f"has no filter: config; add one (with input:) or use a plain path"
                )
            return str(filtered / path[len(ARM_PREFIX) :])
        return str(resolve(path, base, lake_root))

    if isinstance(data.get("tokenizer"), str):
        data["tokenizer"] = place(data["tokenizer"], "tokenizer")
    for bname, bucket in data["buckets"].items():
        for i, source in enumerate(bucket.get("sources") or []):
            source["path"] = place(source["path"], f"buckets.{bname}.sources[{i}].path")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(yaml.safe_dump(data, sort_keys=False))
    return out


def _arm_mixture(
    name: str,
    arm: ArmSpec,
    spec_dir: Path,
    arm_dir: Path,
    lake_root: Path | None,
    filter_docs: FilterDocs | None,
) -> Path:
    """The arm's mixture directory: given, or built into arm_dir/mixture (after the filter)."""
    if arm.mixture is not None:
        mix = resolve(arm.mixture, spec_dir, lake_root)
        if not (mix / "manifest.json").is_file():
            raise AblationError(
                f"arms.{name}.mixture: {mix} is not a built mixture (no manifest.json); build it "
                f"with `refinery mix build` or give mixture_spec"
            )
        return mix
    filtered = None
    if arm.filter is not None:
        if filter_docs is None:
            raise AblationError(
                f"arms.{name}.filter: an arm built through the filter runs from `refinery "
                f"ablate` or Dagster (they run the filter stage); give mixture: or drop filter:"
            )
        filtered = filter_docs(
            name,
            resolve(arm.input, spec_dir, lake_root),
            resolve(arm.filter, spec_dir, lake_root),
            arm_dir / "filter",
        )
    from training.mixture.builder import build_mixture

    spec = arm_mixture_spec(
        resolve(arm.mixture_spec, spec_dir, lake_root),
        arm_dir / "mixture.yaml",
        lake_root,
        filtered,
    )
    build_mixture(spec, arm_dir / "mixture", lake_root=lake_root)
    return arm_dir / "mixture"


def _inputs_digest(spec_path: Path, lake_root: Path | None) -> dict[str, str | None]:
    """Digests of what a mixture spec reads: every file its sources' paths and globs match (and
    their `pairs`), and its tokenizer file; an `arm:` path is the filter's output, whose own
    inputs (the arm's `input` and `filter`) the fingerprint holds already."""
    import glob

    data = yamlio.load_file(spec_path) or {}
    base = spec_path.resolve().parent
    paths: list[str] = []
    if isinstance(data.get("tokenizer"), str):
        paths.append(data["tokenizer"])
    for bucket in (data.get("buckets") or {}).values():
        for source in bucket.get("sources") or []:
            paths += [p for p in (source.get("path"), source.get("pairs")) if p]
    out: dict[str, str | None] = {}
    for p in paths:
        if p.startswith(ARM_PREFIX):
            continue
        pattern = str(resolve(p, base, lake_root))
        for match in sorted(glob.glob(pattern)) or [pattern]:
            out[match] = file_digest(Path(match)) if Path(match).exists() else None
    return out


def _arm_fingerprint(name, arm, spec, spec_dir, lake_root, eval_digests) -> str:
    from training.train_config import resolve_config_path

    files: dict[str, Any] = {}
    for field in ("mixture_spec", "filter", "input"):
        value = getattr(arm, field)
        if value is not None:
            path = resolve(value, spec_dir, lake_root)
            if not path.exists():
                raise AblationError(f"arms.{name}.{field}: {path} does not exist")
            files[field] = file_digest(path)
    if arm.mixture_spec is not None:  # the documents it builds from, not only its text
        files["sources"] = _inputs_digest(resolve(arm.mixture_spec, spec_dir, lake_root), lake_root)
    if arm.mixture is not None:
        manifest = resolve(arm.mixture, spec_dir, lake_root) / "manifest.json"
        files["mixture"] = file_digest(manifest) if manifest.exists() else None
    return fingerprint(
        {
            "arm": arm.model_dump(),
            "files": files,
            "config": file_digest(resolve_config_path(spec.config)),
            "stage": spec.stage,
            "tokens": spec.tokens,
            "seeds": spec.seeds,
            "eval": eval_digests,
            "eval_sets": [e.model_dump() for e in spec.eval_sets],
            "tasks": spec.tasks.model_dump(),
            "overlap": [spec.ngram, spec.max_overlap],
        }
    )


def flat_metrics(scores: dict[str, Any]) -> dict[str, float]:
    """One run's scores as `bpb/<set>/<lang>`, `bpb/<set>` and `<task>/<set>[/<lang>]/acc[_norm]`."""
    out: dict[str, float] = {}
    for name, s in scores.items():
        nats = bytes_ = 0.0
        for lang, d in sorted(s["bpb"].items()):
            out[f"bpb/{name}/{lang}"] = d["bpb"]
            nats += d["nats"]
            bytes_ += d["bytes"]
        out[f"bpb/{name}"] = nats / math.log(2) / bytes_
        for key, d in sorted(s["tasks"].items()):
            task, _, lang = key.partition("/")
            where = f"{task}/{name}" + (f"/{lang}" if lang else "")
            out[f"{where}/acc"] = d["acc"]
            out[f"{where}/acc_norm"] = d["acc_norm"]
    return out


def run_arm(
    name: str,
    arm: ArmSpec,
    spec: AblationSpec,
    spec_dir: Path,
    arm_dir: Path,
    sets: dict[str, tuple[list[EvalText], list[Item]]],
    lake_root: Path | None,
    filter_docs: FilterDocs | None,
    log: Callable[[str], None],
) -> dict[str, Any]:
    """Build (or find) the arm's mixture, check overlap, train and score one run per seed."""
    from training.ablate.evaluate import evaluate_run
    from training.ablate.overlap import check_overlap, ngram_hashes, training_documents
    from training.loader import read_manifest
    from training.tokenizer import load_tokenizer, special_token_ids
    from training.trainer import run_stage

    mix = _arm_mixture(name, arm, spec_dir, arm_dir, lake_root, filter_docs)
    manifest = read_manifest(mix)
    tokenizer = mix / str(manifest.get("tokenizer") or "tokenizer.json")
    tok = load_tokenizer(tokenizer)
    special = special_token_ids(tok, tokenizer)
    train_grams = ngram_hashes(training_documents(mix, tok, special), spec.ngram)
    overlap = check_overlap(
        name,
        train_grams,
        {k: [t.text for t in v[0]] for k, v in sets.items()},
        spec.ngram,
        spec.max_overlap,
    )
    steps, per_step = steps_for(spec, manifest)
    runs = {}
    for seed in spec.seeds:
        run_dir = arm_dir / f"seed-{seed}"
        config = arm_dir / f"config-seed-{seed}.yaml"
        config.write_text(yaml.safe_dump(proxy_config(spec, seed, steps), sort_keys=False))
        log(f"ablate: arm {name} seed {seed}: {steps} steps x {per_step} tokens on {mix}")
        summary = run_stage(spec.stage, config, mix, run_dir, steps=steps)
        scores = evaluate_run(
            run_dir, tokenizer, sets, int(manifest["seq_len"]), spec.eval_batch_size
        )
        curve = [
            {"tokens": r["step"] * per_step, "loss": r["loss"]}
            for r in map(json.loads, (run_dir / "metrics.jsonl").read_text().splitlines())
        ]
        runs[str(seed)] = {
            "run_dir": str(run_dir),
            "final_loss": summary["final_loss"],
            "scores": scores,
            "metrics": flat_metrics(scores),
            "loss_curve": curve,
        }
    return {
        "mixture": str(mix),
        "tokenizer": str(tokenizer),
        "steps": steps,
        "tokens_per_step": per_step,
        "tokens": steps * per_step,
        "mixture_tokens": sum(int(s.get("num_sequences", 0)) for s in manifest["shards"])
        * int(manifest["seq_len"]),
        "overlap": overlap,
        "runs": runs,
    }


def _write_json(path: Path, data: Any) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, default=str))
    os.replace(tmp, path)


def _clear_arm_dir(arm_dir: Path, arms_root: Path) -> None:
    """Remove an unfinished or stale arm directory, only ever one strictly inside `arms_root`
    (a name that resolved to `arms/` itself or above would take completed arms and the user's
    files with it)."""
    root, resolved = arms_root.resolve(), arm_dir.resolve()
    if root not in resolved.parents:
        raise AblationError(
            f"{arm_dir}: the arm's directory ({resolved}) is not inside {root}, so it is not "
            "removed; rename the arm in the spec (letters, digits, '-', '_', '.', not only "
            "dots) or remove the link that leads out"
        )
    shutil.rmtree(arm_dir, ignore_errors=True)


def run_ablation(
    spec_path: str | Path,
    out_dir: str | Path,
    *,
    lake_root: Path | None = None,
    filter_docs: FilterDocs | None = None,
    log: Callable[[str], None] = lambda msg: None,
) -> dict[str, Any]:
    """Run (or resume) the ablation of `spec_path` into `out_dir`; return results.json's content.
    `filter_docs` runs the filter stage for arms with a `filter:` config."""
    from training.ablate.report import aggregate, write_report

    spec_path, out_dir = Path(spec_path), Path(out_dir)
    spec = load_spec(spec_path)
    spec_dir = spec_path.resolve().parent
    sets, digests = load_eval_sets(spec, spec_dir, lake_root)
    arms_out: dict[str, Any] = {}
    reused: list[str] = []
    for name, arm in spec.arms.items():
        arm_dir = out_dir / "arms" / name
        fp = _arm_fingerprint(name, arm, spec, spec_dir, lake_root, digests)
        done = arm_dir / ARM_DONE
        if done.is_file():
            previous = json.loads(done.read_text())
            if previous.get("fingerprint") == fp:
                log(f"ablate: arm {name} is complete in {arm_dir}: reused")
                arms_out[name] = previous
                reused.append(name)
                continue
        _clear_arm_dir(arm_dir, out_dir / "arms")  # unfinished or stale: redone whole
        arm_dir.mkdir(parents=True)
        result = run_arm(name, arm, spec, spec_dir, arm_dir, sets, lake_root, filter_docs, log)
        result["fingerprint"] = fp
        _write_json(done, result)
        arms_out[name] = result
    results = aggregate(spec, arms_out, {k: (len(v[0]), len(v[1])) for k, v in sets.items()})
    results["reused_arms"] = reused
    results["spec_path"] = str(spec_path)
    results["out_dir"] = str(out_dir)
    write_report(results, out_dir)
    _write_json(out_dir / "results.json", results)
    return results
