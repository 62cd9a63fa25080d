"""Per-epoch feeding counters and the reader-bound / compute-bound verdict.

The consumer records two ``perf_counter`` readings per batch (before and after it takes the batch)
and the queue occupancy it saw; everything else is derived here, off the per-batch path.
"""
import collections
import functools
import itertools

from ..ops.registry import OpRole

__all__ = ["EpochStats", "LIGHT_BATCH_S", "READER_BOUND_WAIT_FRACTION", "EPOCH_HISTORY", "loader_label", "publish",
           "verdict_of"]

EPOCH_HISTORY = collections.deque(maxlen=10000)
"""(summary, verdict) of every finished epoch of every loader in this process, oldest first; read by
tools/profile_loader.py. Appended once per epoch, never on the per-batch path."""

LIGHT_BATCH_S = 100e-6
"""Below this many seconds per batch, a reader-bound loader is told not to move its reader to a worker
process: crossing costs more than that in CPU per batch (``multiprocess_transport_cpu_us_per_batch`` in
tools/bench_loader.py gave 145-219 us on a loaded 2-vCPU VM), so there the hand-over itself is what to cut."""

READER_BOUND_WAIT_FRACTION = 0.1
"""Above this share of steady-state time spent waiting for data (with the queue less than half full on
average), the reader is the bottleneck. Waits with a fuller queue are GIL hand-overs, not starvation."""


class EpochStats:
    """Counters of one epoch, updated by the consumer (``record``) on every batch it takes."""

    __slots__ = ("epoch", "capacity", "buffer_capacity", "batches", "occupancy_sum", "first_wait_s", "wait_s",
                 "compute_s", "_last_end", "_published")

    def __init__(self, capacity, epoch=0, buffer_capacity=None):
        """``capacity``: the loader's queue capacity; ``buffer_capacity``: the most batches the occupancy
        can count (the queue plus the double buffer's read-ahead; default ``capacity``)."""
        self.epoch, self.capacity = epoch, capacity
        self.buffer_capacity = capacity if buffer_capacity is None else buffer_capacity
        self.batches = 0
        self.occupancy_sum = 0
        self.first_wait_s = self.wait_s = self.compute_s = 0.0
        self._last_end = None
        self._published = False

    def record(self, start, end, occupancy):
        """One batch taken: waited from ``start`` to ``end`` (perf_counter) with ``occupancy`` queued."""
        last = self._last_end
        if last is None:
            self.first_wait_s = end - start  # start-up latency of the reader, not steady state
        else:
            self.wait_s += end - start
            self.compute_s += start - last
        self._last_end = end
        self.batches += 1
        self.occupancy_sum += occupancy

    def summary(self):
        """A plain dict of the epoch's counters (what ``loader.stats()`` returns)."""
        steady = self.wait_s + self.compute_s
        return {
            "epoch": self.epoch,
            "batches": self.batches,
            "queue_capacity": self.capacity,
            "buffer_capacity": self.buffer_capacity,
            "mean_queue_occupancy": self.occupancy_sum / self.batches if self.batches else 0.0,
            "first_batch_wait_s": self.first_wait_s,
            "wait_s": self.wait_s,
            "compute_s": self.compute_s,
            "wait_fraction": self.wait_s / steady if steady > 0 else 0.0,
        }

    def verdict(self):
        """One line: "reader-bound: ..." or "compute-bound: ..." (or why there is no verdict yet)."""
        return verdict_of(self.summary())


def verdict_of(summary, steady_batches=None):
    """The verdict line for a ``summary()`` dict (one epoch's, or several epochs' added up);
    ``steady_batches``: batches after each epoch's first (default ``batches - 1``: one epoch)."""
    s = summary
    steady_batches = s["batches"] - 1 if steady_batches is None else steady_batches
    if steady_batches < 1:
        return "no verdict yet: fewer than 2 batches were read"
    room = s.get("buffer_capacity", s["queue_capacity"])  # batches that can be ready: queue + read-ahead
    occupancy = f"mean occupancy {s['mean_queue_occupancy']:.1f} of {room:.0f} batches ready"
    waited = f"{100 * s['wait_fraction']:.0f}% of the time"
    starved = s["mean_queue_occupancy"] < 0.5 * room  # a full buffer means the reader keeps up
    if s["wait_fraction"] > READER_BOUND_WAIT_FRACTION and starved:
        per_batch_s = (s["wait_s"] + s["compute_s"]) / steady_batches
        if per_batch_s < LIGHT_BATCH_S:
            return (f"reader-bound: the consumer waited for data {waited} ({occupancy}), but a batch takes "
                    f"only {1e6 * per_batch_s:.0f} us, so handing batches over is what costs: use bigger "
                    "batches or pre-made ones (set_batch_generator); use_multiprocess=True would add over 100 "
                    "us of CPU per batch")
        return (f"reader-bound: the consumer waited for data {waited} ({occupancy}); speed up the reader "
                "(use_multiprocess=True, xmap_readers, lighter preprocessing, smaller dtypes)")
    return (f"compute-bound: the consumer waited for data only {waited} ({occupancy}); the reader keeps "
            "up, so speed up the model")


def publish(stats, loader=None):
    """Add a finished epoch to EPOCH_HISTORY (once per EpochStats, and only if it read anything);
    ``loader`` names the loader it belongs to ("train loader #1 (...)") in the summary."""
    if stats.batches and not stats._published:
        stats._published = True
        summary = stats.summary()
        if loader:
            summary["loader"] = loader
        EPOCH_HISTORY.append((summary, stats.verdict()))


_loader_numbers = itertools.count(1)


def _loader_label(number, names, program_ref, site):
    """'train loader #1 (feeds image, label; created at examples/train_digits.py:35)', asked when an epoch
    ends: by then the program says whether it trains (backward or optimizer ops) or only evaluates."""
    program = program_ref() if program_ref is not None else None
    role = ""
    if program is not None:
        trains = any(op.attrs.get("op_role", 0) & (OpRole.Backward | OpRole.Optimize)
                     for op in program.global_block().ops)
        role = "train " if trains else "test "
    feeds = f"feeds {', '.join(names)}; " if names else ""
    return f"{role}loader #{number} ({feeds}created at {site})"


def loader_label(names, program_ref, site):
    """A callable naming a new loader for EPOCH_HISTORY: its number, fed names, program (train or test)
    and ``site``, where it was created (``loops.creation_site()``)."""
    return functools.partial(_loader_label, next(_loader_numbers), names, program_ref, site)
