"""Shared-memory slots that carry batches from a worker process to the consumer without copies.

NOTE [ Shared-memory slots: ownership and lifetime ]
* A *slot* is one POSIX shared-memory segment ``/dev/shm/mf_<parentpid>_<pidns>-<uid>_<worker>_<n>``. A worker
  owns a small ring of them (``SlotWriter``); each batch is written into one slot with one
  ``np.copyto`` per field (or, for a ``DeferredField``, stacked from its samples right there), and
  only ``BatchMeta`` (slot id, segment name, offsets, shapes, dtypes, LoD) crosses the pipe.
* The consumer (``SlotReader``) maps a segment the first time it sees its name, keeps the mapping for
  reuse, and **unlinks the name at once**: from then on the kernel frees the memory when the last
  mapping goes, whatever happens to either process. So exactly one party unlinks a delivered
  segment, and no name outlives the delivery of its first batch. A name that was created but never
  delivered is unlinked by the worker if the parent has gone, and otherwise by the parent's
  ``unlink_segments(prefix)`` scan after the workers are joined (this also covers a worker killed
  half-way through an allocation). ``reclaim_stale_segments`` removes leftovers of dead parents.
* We do not use ``multiprocessing.shared_memory.SharedMemory``: on Python 3.11 it registers every
  attach with the resource tracker (leak warnings and double unlinks) and its ``close()`` fails while
  numpy views exist. We use the same primitive it uses (``_posixshmem``) plus ``mmap``; a mapping
  lives exactly as long as Python objects reference it, so a view can never outlive its memory.
* The consumer's arrays are views of one ``_SlotHolder`` per batch (an ndarray subclass, so numpy's
  base-collapsing stops at the fields and every derived view keeps the holder alive). A
  ``weakref.finalize`` on the holder puts the slot id on ``SlotReader.freed`` when the last view is
  gone; the owner sends those ids back and only then does the worker write into that slot again.
* A consumer that keeps batches (or one small slice of each) keeps their whole slots, and each
  mapping holds a file descriptor. So a reader built with ``copy_above=k`` (the sources use capacity +
  ``KEPT_VIEWS``) hands out copies once k batches are still viewed, freeing those slots at once:
  the ring stays under about (k + capacity) slots whatever the consumer keeps.
* Space is reserved with ``posix_fallocate`` before use, so a full /dev/shm is an ``ShmAllocationError``
  naming the bytes needed, the bytes free and the fix, instead of a SIGBUS on first write.
"""
import errno
import math
import mmap
import os
import re
import weakref
from collections import deque
from typing import NamedTuple

import _posixshmem
import numpy as np

from minifluid.data.collate import StructuredBatch
from minifluid.data.feeder import DeferredField
from minifluid.lod_tensor import LoDTensor

__all__ = ["SHM_DIR", "SHM_LIMIT_ENV", "BatchMeta", "ShmAllocationError", "SlotReader", "SlotWriter",
           "new_segment_prefix", "reclaim_stale_segments", "shm_free_bytes", "unlink_segments"]

SHM_DIR = "/dev/shm"
SHM_LIMIT_ENV = "MINIFLUID_SHM_LIMIT_BYTES"
"""Environment variable: pretend /dev/shm holds at most this many bytes per worker (tests, tuning)."""
_ALIGN = 64
_NUMERIC_KINDS = "biufc"
_NAME_ROOT = "mf_"
_OUR_NAME = re.compile(r"mf_(\d+)_(\d+)-[0-9a-f]{8}_\d+_\d+")  # mf_<parentpid>_<pidns>-<uid>_<worker>_<n>


class ShmAllocationError(OSError):
    """/dev/shm cannot hold the next batch (errno ENOSPC); raised in the worker that allocates."""


class BatchMeta(NamedTuple):
    """What crosses the pipe for one batch; ``fields`` holds (offset, shape, dtype str, lod or None);
    ``structure`` the dicts and lists of a nested batch (NOTE [ Nested batches ... ] in collate.py).
    A NamedTuple: it pickles and unpickles in a third of a frozen dataclass's time (once per batch)."""
    slot_id: int
    name: str
    size: int
    fields: tuple
    structure: object = None


def new_segment_prefix():
    """A segment-name prefix unique to one source in this (parent) process: ``mf_<pid>_<pidns>-<uid>_``.
    The PID namespace is in the name because containers that share /dev/shm (one Kubernetes pod,
    ``docker --ipc=host``) do not share pids: ``reclaim_stale_segments`` judges only its own namespace's."""
    return f"{_NAME_ROOT}{os.getpid()}_{_pid_namespace()}-{os.urandom(4).hex()}_"


def _pid_namespace():
    """Inode of this process's PID namespace, or 0 where /proc does not say."""
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return 0


def shm_free_bytes():
    """Bytes free in /dev/shm, or None where it cannot be measured."""
    try:
        st = os.statvfs(SHM_DIR)
    except OSError:
        return None
    return st.f_bavail * st.f_frsize


def unlink_segments(prefix):
    """Unlink every segment whose name starts with ``prefix``; returns how many were removed."""
    removed = 0
    try:
        names = os.listdir(SHM_DIR)
    except OSError:
        return 0
    for name in names:
        if name.startswith(prefix):
            removed += _unlink(name)
    return removed


def reclaim_stale_segments():
    """Unlink ``mf_<pid>_*`` segments left by parent processes that no longer exist (e.g. SIGKILLed);
    only names made in this PID namespace, where ``pid`` means what it says."""
    try:
        names = os.listdir(SHM_DIR)
    except OSError:
        return 0
    removed, namespace = 0, str(_pid_namespace())
    for name in names:
        match = _OUR_NAME.fullmatch(name)
        if match and match.group(2) == namespace and not _pid_alive(int(match.group(1))):
            removed += _unlink(name)
    return removed


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _unlink(name):
    try:
        _posixshmem.shm_unlink("/" + name)
    except OSError:  # already gone, or not ours to remove
        return 0
    return 1


def _round_up(n, to):
    return (n + to - 1) // to * to


def _shm_full_message(need, free, limited, held=0, capacity=None):
    free_text = "an unknown number of" if free is None else f"{free} ({free / 2**20:.1f} MiB)"
    source = f" (limited by {SHM_LIMIT_ENV})" if limited else ""
    head = (f"minifluid needs {need} bytes ({need / 2**20:.1f} MiB) of shared memory for one batch, but "
            f"/dev/shm has {free_text} bytes free{source}. ")
    if capacity is not None and held > capacity:  # the consumer keeps batches: that is what fills it
        return head + (
            f"{held} batches of this worker are still in use by your code, {held - capacity} more than the "
            f"capacity ({capacity}) in flight: arrays kept from earlier batches (say a slice of the labels per "
            "step, for metrics) are views of shared memory and keep each batch's whole slot allocated. Keep "
            "copies instead (np.array(x)), or give the container more shared memory (docker run --shm-size=8g "
            "...).")
    return head + ("/dev/shm must hold a bit more than capacity x batch bytes per worker. Fix: give the container "
                   "more shared memory (docker run --shm-size=8g ...), lower the capacity or batch size, or read in "
                   "a thread instead: use_multiprocess=False (DataLoader.from_generator) or num_workers=0 "
                   "(DataLoader(dataset)).")


def _field_array(field, index):
    """Field -> (C-ready ndarray, lod or None); TypeError naming the field for what cannot travel."""
    lod = field.recursive_sequence_lengths() if isinstance(field, LoDTensor) else None
    try:
        arr = np.asarray(field)
    except (ValueError, TypeError) as e:
        raise TypeError(f"field {index} of the batch ({type(field).__name__}) cannot be converted to a "
                        f"numeric array: {e}") from e
    if arr.dtype.kind not in _NUMERIC_KINDS:
        raise TypeError(f"field {index} of the batch has dtype {arr.dtype}; only numeric and bool arrays can "
                        f"go through shared memory. Convert it in the reader (np.asarray(x, dtype=...)) or "
                        f"use use_multiprocess=False.")
    return arr, lod


def _copied_field(field, index):
    """(DeferredField that copies ``field`` into its slot, lod or None)."""
    arr, lod = _field_array(field, index)

    def copy(out):
        np.copyto(out, arr, casting="no")
        return out
    return DeferredField(arr.shape, arr.dtype, copy), lod


class _Slot:
    __slots__ = ("name", "mm", "size", "delivered")

    def __init__(self, name, mm, size):
        self.name, self.mm, self.size, self.delivered = name, mm, size, False


class SlotWriter:
    """Worker side: a growable ring of slots; ``pack`` writes a batch and returns its ``BatchMeta``.

    Args:
        prefix (str): segment-name prefix of this worker (``new_segment_prefix() + f"{worker_id}_"``).
        capacity (int or None): batches the worker may have in flight; more slots in use than that
            means the consumer keeps batches, which a "/dev/shm is full" error then says.
    """

    def __init__(self, prefix, capacity=None):
        self._prefix, self._capacity = prefix, capacity
        self._slots = {}
        self._free = {}  # slot size -> ids of free slots of that size (most recently freed last)
        self._next_id = 0
        self._count = 0

    def release(self, slot_ids):
        """The consumer dropped every view of these slots; they may be written again."""
        slots, free = self._slots, self._free
        for slot_id in slot_ids:
            free.setdefault(slots[slot_id].size, []).append(slot_id)

    def pack(self, batch):
        """Write ``batch`` (a list or tuple of ndarrays / LoDTensors / ``DeferredField``s) into a slot:
        one copy per field, and a DeferredField is built in the slot itself."""
        if not isinstance(batch, (list, tuple)):
            raise TypeError(f"a batch must be a list or tuple of fields (ndarray or LoDTensor), "
                            f"got {type(batch).__name__}")
        parts = [(field, None) if type(field) is DeferredField else _copied_field(field, i)
                 for i, field in enumerate(batch)]
        offsets, total = [], 0
        for part, _ in parts:
            total = _round_up(total, _ALIGN)
            offsets.append(total)
            total += math.prod(part.shape) * part.dtype.itemsize
        slot_id = self._acquire(total)
        slot = self._slots[slot_id]
        fields = []
        for (part, lod), offset in zip(parts, offsets):
            out = part.fill(np.ndarray(part.shape, part.dtype, buffer=slot.mm, offset=offset))
            fields.append((offset, out.shape, out.dtype.str, lod))
        slot.delivered = True  # the caller sends the meta next; the parent then owns the name
        return BatchMeta(slot_id, slot.name, slot.size, tuple(fields), getattr(batch, "structure", None))

    def _acquire(self, nbytes):
        need = _round_up(max(nbytes, 1), mmap.PAGESIZE)
        free = self._free  # a scan over distinct sizes (usually one: batches of one shape), not over slots
        fitting = [size for size in free if size >= need]
        if fitting:  # the smallest slot that fits; of those, the most recently freed (still in cache)
            slot_id = self._take_free(min(fitting))
        elif free:  # grow: replace a free slot that is too small (its name is already unlinked)
            slot_id = self._take_free(next(iter(free)))
            self._slots.pop(slot_id).mm.close()
        else:
            slot_id, self._next_id = self._next_id, self._next_id + 1
        if slot_id not in self._slots:
            self._slots[slot_id] = self._allocate(need)
        return slot_id

    def _take_free(self, size):
        ids = self._free[size]
        slot_id = ids.pop()
        if not ids:
            del self._free[size]
        return slot_id

    def _allocate(self, size):
        free, limited = shm_free_bytes(), False
        limit = os.environ.get(SHM_LIMIT_ENV)
        if limit:
            in_use = sum(s.size for s in self._slots.values())
            free, limited = max(0, int(limit) - in_use), True
            if size > free:
                raise ShmAllocationError(errno.ENOSPC, _shm_full_message(size, free, limited, *self._held()))
        name = f"{self._prefix}{self._count}"
        self._count += 1
        fd = _posixshmem.shm_open("/" + name, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
        try:
            try:
                os.posix_fallocate(fd, 0, size)  # really reserve the pages: no SIGBUS later
            except OSError as e:
                if e.errno not in (errno.ENOSPC, errno.ENOMEM, errno.EFBIG):
                    raise
                message = _shm_full_message(size, shm_free_bytes(), False, *self._held())
                raise ShmAllocationError(errno.ENOSPC, message) from e
            mm = mmap.mmap(fd, size)
        except BaseException:
            _unlink(name)
            raise
        finally:
            os.close(fd)
        return _Slot(name, mm, size)

    def _held(self):
        """(slots delivered and not yet released by the consumer, capacity) for the full-shm message."""
        return len(self._slots) - sum(map(len, self._free.values())), self._capacity

    def close(self, unlink_all=False):
        """Unmap every slot. Unlink names never delivered, or all names when the parent is gone."""
        for slot in self._slots.values():
            if unlink_all or not slot.delivered:
                _unlink(slot.name)
            slot.mm.close()
        self._slots.clear()
        self._free.clear()


class _SlotHolder(np.ndarray):
    """The uint8 array over one batch's slot; every field is a view of it (see the NOTE above)."""


def _released(live, freed, slot_id):
    """Holder finalizer: the last view of the slot is gone (refers to no reader: see ``unpack``)."""
    live.discard(slot_id)
    freed.append(slot_id)


class SlotReader:
    """Consumer side: turns ``BatchMeta`` into numpy views of the slot; freed slot ids go to ``freed``.

    Args:
        copy_above (int or None): once this many batches are still viewed (the consumer keeps them),
            further batches are copied out and their slots freed at once. Every kept view pins a whole
            slot and, through its mapping, a file descriptor, so a loop that keeps one small field per
            batch would otherwise pin unbounded shared memory and run out of descriptors.
    """

    def __init__(self, copy_above=None):
        self._maps = {}  # slot id -> (segment name, mmap)
        self.freed = deque()  # appended by holder finalizers, from whatever thread runs the GC
        self._live = set()  # slot ids the consumer's arrays still view
        self.copy_above = copy_above
        self.segments_seen = 0

    def unpack(self, meta):
        """Return the batch's fields as views (LoDTensor where the worker sent one); no byte is copied,
        unless ``copy_above`` batches are still viewed (then the fields are copies)."""
        entry = self._maps.get(meta.slot_id)
        if entry is None or entry[0] != meta.name:
            entry = (meta.name, _attach(meta.name, meta.size))
            self._maps[meta.slot_id] = entry  # a replaced (smaller) mapping lives on in its views
            self.segments_seen += 1
        copy = self.copy_above is not None and len(self._live) >= self.copy_above
        base = entry[1] if copy else _SlotHolder((meta.size,), np.uint8, buffer=entry[1])
        out = []
        for offset, shape, dtype, lod in meta.fields:
            arr = np.ndarray(shape, np.dtype(dtype), buffer=base, offset=offset)
            if copy:
                arr = arr.copy()
            out.append(arr if lod is None else LoDTensor(arr, lod))
        if copy:
            self.freed.append(meta.slot_id)
        else:
            self._live.add(meta.slot_id)
            weakref.finalize(base, _released, self._live, self.freed, meta.slot_id).atexit = False
        return out if meta.structure is None else StructuredBatch(out, meta.structure)

    def drain_freed(self):
        """Pop and return the slot ids freed since the last call, as a tuple."""
        out = []
        while True:
            try:
                out.append(self.freed.popleft())
            except IndexError:
                return tuple(out)

    def close(self):
        """Forget the mappings; memory still viewed by the user's arrays stays valid until they go."""
        self._maps.clear()


def _attach(name, size):
    fd = _posixshmem.shm_open("/" + name, os.O_RDWR, 0o600)
    try:
        mm = mmap.mmap(fd, size)
    finally:
        os.close(fd)
    _unlink(name)  # mapped on both sides now; the kernel frees it with the last mapping
    return mm
