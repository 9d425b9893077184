"""Self-play training on a Ray cluster.

    python -m mallocmuzero.ray_train --workload alexnet --actors 2 --seconds 60 --out runs/ray

N self-play actors (each a Rust ``SelfPlayWorker`` playing a batch of games in lockstep,
the GIL released) and one learner actor (the Rust trainer: network, optimizer, prioritized
replay, checkpoints, best mapping). The learner owns the run folder, the same folder
``mallocmuzero train`` writes, so ``mallocmuzero evaluate --solver muzero --checkpoint DIR``
and ``mallocmuzero train --resume DIR`` work on it, and ``--resume`` here continues a run
made by either.

The driver hands each actor a work order (a ticket and the line to branch from) with the
newest weights by version: the weights go into the object store once per version, and an
actor fetches them only when its version is older. Each returned batch (bytes) is one
learner iteration: the games enter the replay buffer, the learner trains up to the run's
ratio of steps per position, then evaluates, writes metrics and checkpoints. An actor that
dies is replaced and the run goes on; Ctrl-C finishes cleanly (checkpoint, summary). Which
weights play which batch depends on timing, so a Ray run is not repeatable step for step
(each batch is seeded from the run seed and its ticket).

Locally it starts Ray itself (``ray.init(num_cpus=...)``); on a cluster pass
``--address`` (``auto`` or ``HOST:PORT`` of ``ray start --head``). The learner is placed
on the driver's node, so the run folder is written where the command runs; actors spread
round-robin over the nodes.
"""

from __future__ import annotations

import argparse
import json
import math
import numbers
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import ray
from ray.exceptions import GetTimeoutError, RayActorError
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from mallocmuzero._native import Learner, SelfPlayWorker

# Errors that mean an actor (or its process or node) is gone, not that its work failed.
_ACTOR_LOST = (RayActorError,)
try:
    from ray.exceptions import ActorDiedError, ActorUnavailableError, WorkerCrashedError

    _ACTOR_LOST = (RayActorError, ActorDiedError, ActorUnavailableError, WorkerCrashedError)
except ImportError:  # older Ray: RayActorError covers them
    pass


@ray.remote(num_cpus=1, max_restarts=0)
class SelfPlayActor:
    """A Rust self-play worker inside a Ray actor (PyO3 objects are built here, never pickled)."""

    def __init__(self, description: bytes, threads: int):
        os.environ.setdefault("RAYON_NUM_THREADS", str(threads))
        self.worker = SelfPlayWorker(description, threads)

    def node_id(self) -> str:
        return ray.get_runtime_context().get_node_id()

    def play(self, order: bytes, weights: list) -> bytes:
        # `weights` is [version, ObjectRef] in a list, so Ray does not fetch the bytes
        # unless this actor's version is older.
        version, ref = weights
        if self.worker.weights_version != version:
            self.worker.load_weights(version, bytes(ray.get(ref)))
        return self.worker.play(order)


@ray.remote(num_cpus=1, max_restarts=0)
class LearnerActor:
    """The Rust trainer inside a Ray actor; it writes the run folder."""

    def __init__(self, out: str, resume: bool, case: dict, config: str | None, seed):
        if resume:
            self.learner = Learner.resume(out, config=config)
        else:
            self.learner = Learner.start(out, config=config, seed=seed, **case)
        self.learner.pretrain()

    def describe(self) -> bytes:
        return self.learner.describe()

    def weights(self) -> bytes:
        return self.learner.weights()

    def order(self) -> bytes:
        return self.learner.order()

    def absorb(self, batch: bytes) -> dict:
        return self.learner.absorb(bytes(batch))

    def state(self) -> dict:
        l = self.learner
        return {
            "iterations": l.iterations,
            "positions": l.positions,
            "train_steps": l.train_steps,
            "best_latency_s": l.best_latency_s,
            "dir": str(l.dir),
            "workload": l.workload,
        }

    def finish(self, interrupted: bool) -> dict:
        return self.learner.finish(interrupted)


@dataclass
class RunConfig:
    """What ``ray_train`` runs (the command's flags)."""

    out: str
    actors: int = 2
    seconds: float = 60.0
    workload: str | None = None
    hw: str | None = None
    fast_capacity: str | None = None
    config: str | None = None  # a TrainConfig JSON file
    seed: int | None = None
    resume: bool = False
    threads_per_actor: int = 1
    address: str | None = None
    num_cpus: int | None = None
    actor_name_prefix: str = "mmz-selfplay"
    quiet: bool = False


class _Session:
    """One session of a run: the learner actor, the self-play actors and their pending
    batches, the weights now published, and what happened to the actors."""

    def __init__(self, cfg: RunConfig, learner):
        self.cfg = cfg
        self.learner = learner
        self.description = ray.get(learner.describe.remote())
        self.actors: dict = {}
        self.pending: dict = {}
        self.nodes: set = set()
        self.replaced = 0
        self.version = -1
        self.weights = None
        self.publish_weights()

    def publish_weights(self) -> None:
        """Puts the learner's weights in the object store under the next version; actors
        fetch them when their own version is older (the list keeps Ray from resolving the
        reference when the call is made)."""
        self.version += 1
        self.weights = [self.version, ray.put(ray.get(self.learner.weights.remote()))]

    def start(self, i: int) -> None:
        # Round-robin over the nodes alive now (soft: a full or lost node's share goes
        # elsewhere), which spreads actors more evenly than Ray's SPREAD next to the learner.
        nodes = sorted(n["NodeID"] for n in ray.nodes() if n["Alive"] and n["Resources"].get("CPU", 0) > 0)
        where = NodeAffinitySchedulingStrategy(node_id=nodes[i % len(nodes)], soft=True)
        name = f"{self.cfg.actor_name_prefix}-{i}-{self.replaced}"
        self.actors[i] = SelfPlayActor.options(name=name, scheduling_strategy=where).remote(
            self.description, self.cfg.threads_per_actor
        )
        self.nodes.add(ray.get(self.actors[i].node_id.remote()))

    def submit(self, i: int) -> None:
        order = ray.get(self.learner.order.remote())
        self.pending[self.actors[i].play.remote(order, self.weights)] = i

    def next_batch(self, deadline: float):
        """`(actor, batch)` of the first batch back before `deadline` (None: none came). A
        lost actor is replaced and given its order again."""
        while self.pending and time.monotonic() < deadline:
            ready, _ = ray.wait(list(self.pending), num_returns=1, timeout=max(0.0, deadline - time.monotonic()))
            if not ready:
                return None
            i = self.pending.pop(ready[0])
            try:
                return i, ray.get(ready[0])
            except _ACTOR_LOST as e:
                _log(self.cfg.quiet, f"ray_train: self-play actor {i} was lost ({type(e).__name__}); replacing it")
                self.replaced += 1
                self.start(i)
                self.submit(i)
        return None

    def stop(self) -> None:
        for actor in self.actors.values():
            ray.kill(actor)


def _first_line_of_cause(e: Exception) -> str:
    """The mallocmuzero error inside a Ray error, without Ray's tracebacks."""
    text = str(e)
    for line in text.splitlines():
        if "mallocmuzero._native.Error:" in line or "Error: " in line and "ray" not in line.lower():
            return line.split("Error:", 1)[1].strip()
    return text.strip().splitlines()[-1] if text.strip() else type(e).__name__


def _log(quiet: bool, text: str) -> None:
    if not quiet:
        print(text, file=sys.stderr, flush=True)


def _read_config(path: str | None) -> str | None:
    if path is None:
        return None
    try:
        text = Path(path).read_text()
        json.loads(text)
    except (OSError, ValueError) as e:
        raise SystemExit(f"error: --config {path}: {e}") from e
    return text


def _integer(name: str, value, least: int) -> None:
    # A bool is an int to Python but never a count here; a float would fail deep inside
    # Ray or a Rust actor (or, for True, run one actor).
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name}: expected an int, got {type(value).__name__} {value!r}")
    if value < least:
        raise ValueError(f"{name}: must be >= {least}, got {value}")


def _check(cfg: RunConfig) -> None:
    """Refuses a bad number in `cfg`, naming its field, before Ray starts."""
    _integer("actors", cfg.actors, 1)
    _integer("threads_per_actor", cfg.threads_per_actor, 1)
    if cfg.num_cpus is not None:
        # 0 is not "the default" (that is None): Ray would get actors + 1.
        _integer("num_cpus", cfg.num_cpus, 1)
    if cfg.seed is not None:
        _integer("seed", cfg.seed, 0)
    if isinstance(cfg.seconds, bool) or not isinstance(cfg.seconds, numbers.Real):
        raise TypeError(f"seconds: expected a number, got {type(cfg.seconds).__name__} {cfg.seconds!r}")
    # inf would never end (as `train --minutes inf` is refused); NaN compares false.
    if not (math.isfinite(cfg.seconds) and cfg.seconds > 0):
        raise ValueError(f"seconds: must be finite and > 0, got {cfg.seconds}")


def run(cfg: RunConfig, on_progress=None) -> dict:
    """Runs the training ``cfg`` describes on the Ray this process is connected to (or starts
    one) and returns the run's summary, with the session's Ray figures."""
    _check(cfg)
    started_ray = False
    if not ray.is_initialized():
        if cfg.address:
            ray.init(address=cfg.address, log_to_driver=False)
        else:
            ray.init(num_cpus=cfg.num_cpus or cfg.actors + 1, log_to_driver=False)
        started_ray = True
    try:
        return _train(cfg, on_progress)
    finally:
        if started_ray:
            ray.shutdown()


def _start_learner(cfg: RunConfig):
    """The learner actor on this node (it writes the run folder here), and the run's state."""
    here = ray.get_runtime_context().get_node_id()
    case = {"workload": cfg.workload, "hw": cfg.hw, "fast_capacity": cfg.fast_capacity}
    learner = LearnerActor.options(
        scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=here, soft=False)
    ).remote(str(Path(cfg.out).absolute()), cfg.resume, case, _read_config(cfg.config), cfg.seed)
    try:
        return learner, ray.get(learner.state.remote())
    except _ACTOR_LOST as e:
        # The learner refused the run (a bad config, a folder holding another run, ...).
        raise ValueError(f"the learner could not start: {_first_line_of_cause(e)}") from None


def _train(cfg: RunConfig, on_progress) -> dict:
    learner, before = _start_learner(cfg)
    session = _Session(cfg, learner)
    for i in range(cfg.actors):
        session.start(i)
        session.submit(i)
    _log(cfg.quiet, f"ray_train: {cfg.actors} self-play actors on {len(session.nodes)} node(s), learner writing {before['dir']}")
    t0 = time.monotonic()
    interrupted, shown = False, 0.0
    try:
        while (got := session.next_batch(t0 + cfg.seconds)) is not None:
            i, batch = got
            # The actor plays its next batch while the learner learns from this one.
            session.submit(i)
            progress = ray.get(learner.absorb.remote(batch))
            session.publish_weights()
            if on_progress is not None:
                on_progress(progress)
            if time.monotonic() - shown >= 2.0:
                shown = time.monotonic()
                _log_progress(cfg.quiet, progress, before, shown - t0)
    except KeyboardInterrupt:
        interrupted = True
    seconds = time.monotonic() - t0
    session.stop()
    summary = ray.get(learner.finish.remote(interrupted))
    after = ray.get(learner.state.remote())
    ray.kill(learner)
    positions = after["positions"] - before["positions"]
    summary.update(
        {
            "dir": after["dir"],
            "actors": cfg.actors,
            "actor_nodes": sorted(session.nodes),
            "actor_replacements": session.replaced,
            "session_seconds": seconds,
            "session_positions": positions,
            "session_iterations": after["iterations"] - before["iterations"],
            "positions_per_s": positions / max(seconds, 1e-9),
        }
    )
    return summary


def _log_progress(quiet: bool, p: dict, before: dict, seconds: float) -> None:
    rate = (p["positions"] - before["positions"]) / max(seconds, 1e-9)
    _log(
        quiet,
        f"iteration {p['iteration']}: {p['positions']} positions, {p['train_steps']} steps, "
        f"best {p['best_latency_s'] * 1e6:.2f} us ({p['speedup_vs_xla']:.3f}x xla), {rate:.0f} positions/s",
    )


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m mallocmuzero.ray_train",
        description="mallocMuZero self-play on Ray: N self-play actors and a learner writing a run folder.",
    )
    p.add_argument("--workload", help="a built-in workload or a program file (default alexnet)")
    p.add_argument("--hw", help="a hardware preset or config file")
    p.add_argument("--fast-capacity", help="capacity of the fastest level (16MiB) or of level N (1:16MiB)")
    p.add_argument("--actors", type=int, default=2, help="self-play actors (default 2)")
    p.add_argument("--seconds", type=float, default=60.0, help="seconds of self-play (default 60)")
    p.add_argument("--out", required=True, help="the run folder")
    p.add_argument("--resume", action="store_true", help="continue the run in --out")
    p.add_argument("--config", help="a training config (JSON, fields of TrainConfig)")
    p.add_argument("--seed", type=int)
    p.add_argument("--threads-per-actor", type=int, default=1)
    p.add_argument("--address", help="a Ray cluster to join (auto, or HOST:PORT of `ray start --head`)")
    p.add_argument("--num-cpus", type=int, help="CPUs of a local Ray (default: actors + 1)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    return p


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    if args.resume and any(v is not None for v in (args.workload, args.hw, args.fast_capacity, args.seed)):
        print("error: --resume takes the case and seed from the run folder: drop --workload, --hw, --fast-capacity and --seed", file=sys.stderr)
        return 2
    cfg = RunConfig(
        out=args.out,
        actors=args.actors,
        seconds=args.seconds,
        workload=args.workload,
        hw=args.hw,
        fast_capacity=args.fast_capacity,
        config=args.config,
        seed=args.seed,
        resume=args.resume,
        threads_per_actor=args.threads_per_actor,
        address=args.address,
        num_cpus=args.num_cpus,
        quiet=args.json,
    )
    try:
        summary = run(cfg)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except ray.exceptions.RayTaskError as e:
        # The learner refused the run (a bad config, a folder holding another run, ...):
        # its message, without Ray's traceback.
        print(f"error: {e.cause if getattr(e, 'cause', None) else e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(summary))
    else:
        best = summary.get("best_latency_s")
        xla = summary.get("xla_latency_s")
        line = f"{summary['session_iterations']} iterations, {summary['session_positions']} positions in {summary['session_seconds']:.1f} s ({summary['positions_per_s']:.0f}/s)"
        if best and xla:
            line += f"; best {best * 1e6:.2f} us vs xla {xla * 1e6:.2f} us ({xla / best:.3f}x)"
        print(line)
        print(f"run folder: {summary['dir']} (continue: python -m mallocmuzero.ray_train --resume --out {summary['dir']})")
    return 130 if summary.get("interrupted") else 0


if __name__ == "__main__":
    sys.exit(main())
