"""Shadow modelling for MAMA-MIA (Golob et al., §III-A): how often does a marginal generator choose
each focal point when it runs on data like the (hidden) training set?

Each shadow run draws a fresh sample of the attacker's reference data of the training-set size
(without replacement when the reference has enough rows, else with replacement: a bootstrap
sample, so duplicated rows are possible), builds the generator with the *same settings* as the
real run (minus its seed), and runs only its data-dependent selection step
``select_focal_points(sample, rng)``. Counting how often each :class:`FocalPoint` comes back over
``n_shadow`` runs gives the weights ``w_F`` of the attack.

The discretiser of a shadow generator is built exactly as the release flow builds the real one:
``configure(spec, reference=<reference split>)``. That happens once per worker (process or
thread) thanks to a small per-thread cache keyed by a fingerprint of (generator, settings, spec,
reference); the fingerprint is computed once by the caller and travels inside each job.

Runs are independent, so they are *mapped*: ``mapper(shadow_run, jobs)`` with any ``map``-like
callable. The default is a process pool of ``n_jobs`` workers with the runs split into one chunk
per worker (so each worker unpickles the reference and configures once; a thread pool is the
fallback where processes are unavailable); ``mapper=map`` runs serially; the Prefect flow passes a
mapper that runs each job as a task. Every run gets its own child of
``np.random.SeedSequence(seed).spawn(n_shadow)``, so the frequencies depend on the seed only,
never on the mapper, the number of workers or the order the runs finish in.

>>> from privacy_gate.attacks.shadow import serial_mapper
>>> list(serial_mapper(abs, [-1, 2]))
[1, 2]
"""

from __future__ import annotations

import hashlib
import math
import multiprocessing
import os
import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from privacy_gate.errors import ConfigError
from privacy_gate.generators import (
    create_generator,  # importing the package registers every generator
)
from privacy_gate.generators.focal import FocalPoint
from privacy_gate.spec import DatasetSpec

Mapper = Callable[[Callable[[Any], Any], Iterable[Any]], Iterable[Any]]

#: configured generators kept per worker thread (a worker rarely sees more than one set-up)
_CACHE_SIZE = 4
_local = threading.local()


@dataclass(frozen=True, eq=False)  # eq=False: identity hash (a DataFrame field is not hashable)
class ShadowJob:
    """One shadow run, as plain picklable values (what a worker process or a Prefect task gets).

    ``token`` fingerprints (generator, params, spec, reference): workers configure one generator
    per token and reuse it for every run they get.
    """

    generator: str
    params: Mapping[str, Any]  # the generator's settings without 'seed'
    spec: DatasetSpec
    reference: pd.DataFrame
    n_train: int
    seed: np.random.SeedSequence  # this run's own child seed sequence
    index: int
    token: str


def fingerprint(
    generator: str, params: Mapping[str, Any], spec: DatasetSpec, reference: pd.DataFrame
) -> str:
    """A stable hash of everything a configured shadow generator depends on."""
    h = hashlib.sha256()
    h.update(generator.encode())
    h.update(repr(sorted((str(k), repr(v)) for k, v in params.items())).encode())
    h.update(spec.model_dump_json().encode())
    h.update(repr(list(map(str, reference.columns))).encode())
    h.update(pd.util.hash_pandas_object(reference, index=False).to_numpy().tobytes())
    return h.hexdigest()


def shadow_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """The real run's settings for a shadow run: everything but the seed (each run has its own)."""
    return {k: v for k, v in params.items() if k != "seed"}


def build_generator(
    generator: str, params: Mapping[str, Any], spec: DatasetSpec, reference: pd.DataFrame
) -> Any:
    """A generator with the given settings, configured on the reference data like the real run.

    Raises ConfigError when the generator is unknown, rejects the settings, or has no
    ``select_focal_points`` (no data-dependent selection step to shadow).
    """
    gen = create_generator(generator, **shadow_params(params))
    if not callable(getattr(gen, "select_focal_points", None)) or not callable(
        getattr(gen, "configure", None)
    ):
        raise ConfigError(
            f"generator '{generator}' has no focal-point selection step (select_focal_points) to "
            "shadow"
        )
    return gen.configure(spec, reference=reference)


def _cache() -> dict[str, Any]:
    cache = getattr(_local, "generators", None)
    if cache is None:
        cache = _local.generators = {}
    return cache


def remember(token: str, generator: Any) -> None:
    """Put an already configured generator into this thread's cache (saves one configure)."""
    cache = _cache()
    cache.pop(token, None)
    cache[token] = generator
    while len(cache) > _CACHE_SIZE:
        cache.pop(next(iter(cache)))


def _configured(job: ShadowJob) -> Any:
    cache = _cache()
    gen = cache.get(job.token)
    if gen is None:
        gen = build_generator(job.generator, job.params, job.spec, job.reference)
        remember(job.token, gen)
    return gen


def draw_sample(reference: pd.DataFrame, n_train: int, rng: np.random.Generator) -> pd.DataFrame:
    """``n_train`` rows of ``reference``: without replacement if it has enough rows, else with."""
    replace = n_train > len(reference)
    idx = rng.choice(len(reference), size=n_train, replace=replace)
    return reference.iloc[idx]


def shadow_run(job: ShadowJob) -> list[FocalPoint]:
    """One shadow run: a fresh reference sample of the training-set size, then only the
    generator's focal-point selection on it. Top-level and picklable (process pools, Prefect)."""
    gen = _configured(job)
    rng = np.random.default_rng(job.seed)
    sample = draw_sample(job.reference, job.n_train, rng)
    return list(gen.select_focal_points(sample, rng))


# --------------------------------------------------------------------------- mappers


def serial_mapper(fn: Callable[[Any], Any], items: Iterable[Any]) -> list[Any]:
    """Run everything in this thread (``mapper=map`` does the same, lazily)."""
    return [fn(item) for item in items]


def _chunks(items: list[Any], n: int) -> list[list[Any]]:
    size = max(1, math.ceil(len(items) / max(1, n)))
    return [items[i : i + size] for i in range(0, len(items), size)]


def thread_mapper(n_jobs: int = 2) -> Mapper:
    """A thread pool of ``n_jobs`` workers (each thread configures its own generator once)."""

    def mapper(fn: Callable[[Any], Any], items: Iterable[Any]) -> list[Any]:
        items = list(items)
        if n_jobs <= 1 or len(items) <= 1:
            return serial_mapper(fn, items)
        with ThreadPoolExecutor(max_workers=n_jobs) as pool:
            return list(pool.map(fn, items))

    return mapper


def pool_context() -> multiprocessing.context.BaseContext | None:
    """The start method of the fit workers: the platform default (fork on Linux: workers start in
    milliseconds) unless torch is loaded in this process, then a fresh ``forkserver``.

    A process forked after torch's thread pools have started can deadlock in its first parallel
    operation: the shadow fits of a TVAE recipe on two workers sat idle in a futex wait, where one
    worker finished them in 40 s. ``None`` means the default.
    """
    if "torch" in sys.modules and "forkserver" in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("forkserver")
    return None


def _share_cores(n_jobs: int) -> None:
    """A worker's initializer: its share of the cores for the thread pools it will start (read
    when numpy's BLAS or torch is first imported in a fresh worker), so ``n_jobs`` workers do not
    each start one thread per core and fight over them."""
    threads = str(max(1, (os.cpu_count() or 1) // max(1, n_jobs)))
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(name, threads)


def process_mapper(n_jobs: int = 2, *, fallback: bool = True) -> Mapper:
    """A process pool of ``n_jobs`` workers; items go in ``n_jobs`` contiguous chunks (one per
    worker: the shared reference frame is pickled once per chunk and each worker configures its
    generator once). The start method is :func:`pool_context`'s; a fresh worker takes its share
    of the cores (:func:`_share_cores`). Where processes cannot be used (no ``sem_open``, a
    sandbox, a broken pool) it falls back to a thread pool, unless ``fallback=False``."""

    def mapper(fn: Callable[[Any], Any], items: Iterable[Any]) -> list[Any]:
        items = list(items)
        if n_jobs <= 1 or len(items) <= 1:
            return serial_mapper(fn, items)
        chunks = _chunks(items, n_jobs)
        try:
            context = pool_context()
            with ProcessPoolExecutor(
                max_workers=min(n_jobs, len(chunks)),
                mp_context=context,
                initializer=_share_cores if context is not None else None,
                initargs=(n_jobs,) if context is not None else (),
            ) as pool:
                parts = list(pool.map(_apply_chunk, [fn] * len(chunks), chunks))
        except (OSError, NotImplementedError, ImportError, BrokenProcessPool):
            if not fallback:
                raise
            return thread_mapper(n_jobs)(fn, items)
        return [result for part in parts for result in part]

    return mapper


def _apply_chunk(fn: Callable[[Any], Any], chunk: list[Any]) -> list[Any]:
    return [fn(item) for item in chunk]


def default_mapper(n_jobs: int) -> Mapper:
    """``n_jobs`` <= 1: serial; else a process pool (thread pool fallback)."""
    return serial_mapper if n_jobs <= 1 else process_mapper(n_jobs)


# --------------------------------------------------------------------------- frequencies


def make_jobs(
    *,
    generator: str,
    generator_params: Mapping[str, Any],
    spec: DatasetSpec,
    reference: pd.DataFrame,
    n_train: int,
    n_shadow: int,
    seed: int | np.random.SeedSequence | None,
    token: str | None = None,
) -> list[ShadowJob]:
    """The ``n_shadow`` independent jobs (child seed sequences of ``seed``)."""
    params = shadow_params(generator_params)
    token = token or fingerprint(generator, params, spec, reference)
    root = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    return [
        ShadowJob(generator, params, spec, reference, int(n_train), child, i, token)
        for i, child in enumerate(root.spawn(n_shadow))
    ]


def count_focal_points(results: Iterable[Iterable[FocalPoint]]) -> dict[FocalPoint, int]:
    """How many runs chose each focal point (a run counts a focal point once), most frequent
    first."""
    counts: Counter[FocalPoint] = Counter()
    for chosen in results:
        counts.update(set(chosen))
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def _check_int(name: str, value: Any, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ConfigError(f"shadow modelling: '{name}' must be an integer >= {low}, got {value!r}")
    return int(value)


def focal_point_frequencies(
    *,
    generator: str,
    generator_params: Mapping[str, Any],
    spec: DatasetSpec,
    reference: pd.DataFrame,
    n_train: int,
    n_shadow: int = 50,
    seed: int | np.random.SeedSequence | None,
    mapper: Mapper | None = None,
    n_jobs: int = 2,
) -> dict[FocalPoint, int]:
    """Run ``n_shadow`` shadow runs and count how often each focal point is chosen.

    generator, generator_params: the real run's generator name and settings ('seed' is dropped).
    spec, reference: public knowledge; the reference data is both the pool the shadow training
        sets are drawn from and what the discretiser is fitted on (as in the release flow).
    n_train: size of the real training set (each shadow sample has this many rows).
    seed: root of the per-run seeds; the same seed gives the same frequencies with any mapper.
    mapper: ``map``-like callable ``(fn, jobs) -> results``; None = :func:`default_mapper`.
    n_jobs: workers of the default mapper (1 = serial).
    """
    n_train = _check_int("n_train", n_train, 1)
    n_shadow = _check_int("n_shadow", n_shadow, 1)
    n_jobs = _check_int("n_jobs", n_jobs, 1)
    jobs = make_jobs(
        generator=generator,
        generator_params=generator_params,
        spec=spec,
        reference=reference,
        n_train=n_train,
        n_shadow=n_shadow,
        seed=seed,
    )
    # fail fast (and configure once here) on bad settings, before any worker starts; the configured
    # generator goes into this thread's cache, where serial mappers reuse it (and forked workers
    # inherit it)
    _configured(jobs[0])
    run = mapper if mapper is not None else default_mapper(n_jobs)
    return count_focal_points(run(shadow_run, jobs))
