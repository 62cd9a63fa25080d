"""fluid.dataset: datasets fed from MultiSlot text files (``fluid.DatasetFactory``, ``paddle.distributed``'s
``QueueDataset`` / ``InMemoryDataset``), read by ``exe.train_from_dataset`` and ``DataLoader.from_dataset``.

Both the fluid 1.8 setters (``set_batch_size``, ``set_thread`` ...) and paddle 2.0's (``init(...)``,
``update_settings(...)``, ``_set_batch_size`` ...) configure the same objects. The line format and its
parser are in ``multislot.py``; the readers run in loader threads (``dataset_feed.py``).

NOTE [ How a dataset's samples are split between its readers ]
A dataset is read by N readers (its thread count; DataLoader.from_dataset uses one per place), each
a stream of batches of ``batch_size`` samples, the last one of each reader possibly short:
* QueueDataset: reader k reads files k, k + N, k + 2N ... of the file list, in order, each piped
  through the pipe command; its batches run on across its files. (fluid hands the next file to
  whichever reader asks first; here the split is fixed so that runs repeat.) Never more readers than
  files.
* InMemoryDataset: the samples in memory (file list order, as shuffled) are cut into ``queue_num``
  channels of ``n // queue_num + 1`` consecutive samples (fluid's block size); reader k reads channel
  k % queue_num, and readers sharing a channel take its batches in turn. ``queue_num`` is the thread
  count at ``load_into_memory`` unless set; ``train_from_dataset`` uses one channel per thread.
"""
import logging
import os
import select
import shlex
import signal
import subprocess
import tempfile
import threading
from itertools import chain

import numpy as np

from .dataset_run import run_from_dataset
from .loops import POLL_INTERVAL  # how long a reader waits on a silent pipe command before checking its stop
from .multislot import SampleTable, empty_table, parse_lines, rebatch, slot_formats

__all__ = ["DatasetBase", "DatasetFactory", "InMemoryDataset", "PipeCommandError", "QueueDataset"]

_log = logging.getLogger("minifluid.data")

CHUNK_BYTES = 4 << 20
"""Most bytes read (and parsed at once) per step: big enough that numpy's per-call cost is negligible."""

class PipeCommandError(RuntimeError):
    """The pipe command exited with an error on a dataset file."""


def _shell_command(path, pipe_command):
    """fluid's command line for reading ``path``: ``( cmd ) < path``, after ``zcat`` for a .gz file."""
    quoted = shlex.quote(path)
    if path.endswith(".gz"):
        return f"( zcat ) < {quoted} | {pipe_command}"
    return f"( {pipe_command} ) < {quoted}"


def _read_ready(stream, limit, stop):
    """Up to ``limit`` bytes: those the file or pipe (unbuffered) has ready, waiting for at least one
    (b"" at the end); None once ``stop`` is set. A slow pipe command is thus parsed as its lines come."""
    while stop is not None and not select.select([stream], [], [], POLL_INTERVAL)[0]:
        if stop.is_set():
            return None
    if stop is not None and stop.is_set():
        return None
    parts = [stream.read(limit)]
    size = len(parts[0])
    while parts[-1] and size < limit and select.select([stream], [], [], 0)[0]:
        parts.append(stream.read(limit - size))
        size += len(parts[-1])
    return b"".join(parts)


def read_chunks(path, pipe_command="cat", chunk_bytes=CHUNK_BYTES, stop=None):
    """Yield (bytes of whole lines, number of their first line) of ``path`` as the pipe command prints
    it (run by /bin/sh, stdin the file; a plain ``cat`` reads the file itself). Ends early once the
    ``stop`` event is set; the command, and anything it started, is killed when reading ends early."""
    if path.startswith(("hdfs:", "afs:")):
        raise NotImplementedError(f"{path!r}: minifluid reads local files only (no HDFS/AFS client)")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"Dataset file {path!r} (from set_filelist) does not exist")
    process, command = None, None
    if pipe_command.strip() == "cat" and not path.endswith(".gz"):
        stream = open(path, "rb", buffering=0)
    else:
        command = _shell_command(path, pipe_command)
        errors = tempfile.TemporaryFile()
        process = subprocess.Popen(command, shell=True, bufsize=0, stdout=subprocess.PIPE, stderr=errors,
                                   start_new_session=True)  # its own process group: killed as a whole
        stream = process.stdout
    try:
        line, rest = 1, b""
        while True:
            block = _read_ready(stream, chunk_bytes, stop)
            if not block:
                if block is None:
                    return
                break
            data = rest + block if rest else block
            cut = data.rfind(b"\n") + 1
            if cut:
                yield data[:cut], line
                line += data.count(b"\n", 0, cut)
            rest = data[cut:]
        if rest:
            yield rest, line
        if process is not None and process.wait() != 0:
            errors.seek(0)
            message = errors.read()[-2000:].decode("utf-8", "replace").strip()
            raise PipeCommandError(f"The pipe command failed on dataset file {path!r}: `{command}` exited with "
                                   f"status {process.returncode}" + (f": {message}" if message else ""))
    finally:
        stream.close()
        if process is not None:
            if process.poll() is None:  # reading ended early: end the command and everything it started
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            errors.close()


class DatasetFactory:
    """``fluid.DatasetFactory().create_dataset("QueueDataset" | "InMemoryDataset")``."""

    def create_dataset(self, datafeed_class="QueueDataset"):
        classes = {"QueueDataset": QueueDataset, "InMemoryDataset": InMemoryDataset}
        if datafeed_class not in classes:
            raise ValueError("datafeed class %s does not exist" % datafeed_class)
        return classes[datafeed_class]()


class DatasetBase:
    """What every file-fed dataset has: file list, pipe command, batch size, threads, slots."""

    _feed_name = "MultiSlotDataFeed"

    def __init__(self):
        self.thread_num = 1
        self.filelist = []
        self.batch_size = 32  # fluid's DataFeedDesc default
        self.pipe_command = "cat"
        self.use_vars, self.formats = [], []
        self.input_type = 0
        self.fs_name = self.fs_ugi = ""
        self.download_cmd = "cat"

    def init(self, batch_size=1, thread_num=1, use_var=(), pipe_command="cat", input_type=0, fs_name="", fs_ugi="",
             download_cmd="cat"):
        """paddle 2.0's one-call set-up (``paddle.distributed.QueueDataset().init(...)``)."""
        self.set_batch_size(batch_size)
        self.set_thread(thread_num)
        self.set_use_var(use_var)
        self.set_pipe_command(pipe_command)
        self.set_input_type(input_type)
        self.set_hdfs_config(fs_name, fs_ugi)
        self.set_download_cmd(download_cmd)

    def set_pipe_command(self, pipe_command):
        """A shell command each file is piped through (``( cmd ) < file``); its output is MultiSlot text."""
        self.pipe_command = str(pipe_command)

    def set_batch_size(self, batch_size):
        if int(batch_size) <= 0:
            raise ValueError(f"Batch size {batch_size} is illegal.")
        self.batch_size = int(batch_size)

    def set_thread(self, thread_num):
        """Number of readers (and of training threads in ``train_from_dataset``)."""
        self.thread_num = int(thread_num)

    def set_filelist(self, filelist):
        self.filelist = [os.fspath(f) for f in filelist]

    def set_use_var(self, var_list):
        """The variables fed, in the order of the slots on each line (float32 or int64; lod_level 1 for a
        variable number of values per sample, 0 for a dense slot of the variable's shape)."""
        self.formats = slot_formats(var_list)
        self.use_vars = list(var_list)

    def set_hdfs_config(self, fs_name, fs_ugi):
        self.fs_name, self.fs_ugi = fs_name, fs_ugi

    def set_download_cmd(self, download_cmd):
        self.download_cmd = download_cmd

    def desc(self):
        """The data feed description in protobuf text format, as fluid prints it."""
        slots = "".join(
            f'  slots {{\n    name: "{f.name}"\n    type: "{"float" if f.dtype == np.float32 else "uint64"}"\n'
            f'    is_dense: {str(bool(f.width)).lower()}\n    is_used: true\n'
            + "".join(f"    shape: {d}\n" for d in (getattr(v, "shape", ()) if f.width else ())) + "  }\n"
            for f, v in zip(self.formats, self.use_vars))
        return (f'name: "{self._feed_name}"\nbatch_size: {self.batch_size}\nmulti_slot_desc {{\n{slots}}}\n'
                f'pipe_command: "{self.pipe_command}"\n')

    def set_input_type(self, input_type):
        self.input_type = input_type

    _set_pipe_command, _set_batch_size, _set_thread = set_pipe_command, set_batch_size, set_thread
    _set_use_var, _set_hdfs_config, _set_download_cmd, _desc = set_use_var, set_hdfs_config, set_download_cmd, desc
    _set_input_type = set_input_type

    def _run(self, exe, program, scope, thread, debug, fetch_list, fetch_info, print_period, fetch_handler):
        """``exe.train_from_dataset(program, self, ...)`` (dataset_run.py)."""
        return run_from_dataset(exe, program, self, scope, thread, debug, fetch_list, fetch_info, print_period,
                                fetch_handler)

    # --- what the readers read (NOTE above) ----------------------------------------------------------
    def _check_ready(self):
        if not self.formats:
            raise ValueError(f"{type(self).__name__}: call set_use_var([...]) (or init(use_var=...)) before reading")

    def _file_tables(self, path, stop=None):
        prefix = int(getattr(self, "parse_ins_id", False)) + int(getattr(self, "parse_content", False))
        return (parse_lines(data, self.formats, path, line, prefix) for data, line in
                read_chunks(path, self.pipe_command, stop=stop))


class QueueDataset(DatasetBase):
    """Streams its files: each reader parses its share of the files while training runs."""

    def _training_readers(self, thread=0):
        """(readers, queue_num) for train_from_dataset: fluid reads with the dataset's thread count (never
        more readers than files) whatever ``thread`` says."""
        return max(1, min(self.thread_num, len(self.filelist))), None

    def _streams(self, readers, queue_num=None, stop=None):
        """``readers`` batch readers (zero-argument callables returning batch iterators); they end early
        once the ``stop`` event is set."""
        self._check_ready()
        return [self._stream(self.filelist[k::readers], stop) for k in range(readers)]

    def _stream(self, files, stop):
        def batches():
            tables = chain.from_iterable(self._file_tables(f, stop) for f in files)
            for table in rebatch(tables, self.batch_size):
                yield table.fields(self.formats)
        return batches

    def local_shuffle(self):
        raise NotImplementedError("QueueDataset does not support local shuffle, please use InMemoryDataset for "
                                  "local_shuffle")

    def global_shuffle(self, fleet=None):
        raise NotImplementedError("QueueDataset does not support global shuffle, please use InMemoryDataset for "
                                  "global_shuffle")


class InMemoryDataset(DatasetBase):
    """Loads every file into memory (``load_into_memory``), can shuffle it, and reads batches from there.

    As in fluid, LoD slots lose their 0 ids when loaded (|x| < 1e-6 for floats), a sample left with none
    keeping a single 0; dense slots keep every value."""

    _feed_name = "MultiSlotInMemoryDataFeed"

    def __init__(self):
        super().__init__()
        self.queue_num = None
        self.is_user_set_queue_num = False
        self.parse_ins_id = self.parse_content = False
        self.fleet_send_batch_size = self.fleet_send_sleep_seconds = None
        self._table = None
        self._shuffled = 0
        self._preload = None

    def init(self, **kwargs):
        """paddle 2.0's set-up: DatasetBase.init's keywords plus ``queue_num`` and ``data_feed_type``."""
        base = ("batch_size", "thread_num", "use_var", "pipe_command", "input_type", "fs_name", "fs_ugi",
                "download_cmd")
        super().init(**{k: v for k, v in kwargs.items() if k in base})
        if kwargs.get("queue_num", -1) > 0:
            self.set_queue_num(kwargs["queue_num"])
        self._check_unsupported(kwargs)

    def update_settings(self, **kwargs):
        """paddle 2.0: change any of ``init``'s (or ``_init_distributed_settings``') settings later."""
        for key, value in kwargs.items():  # set_<key>, but set_thread for thread_num
            setter = getattr(self, "set_thread" if key == "thread_num" else f"set_{key}", None)
            if setter is not None and key not in ("hdfs_config", "filelist"):
                setter(value)
        if "fs_name" in kwargs and "fs_ugi" in kwargs:
            self.set_hdfs_config(kwargs["fs_name"], kwargs["fs_ugi"])
        self._check_unsupported(kwargs)

    def _init_distributed_settings(self, **kwargs):
        self.set_parse_ins_id(kwargs.get("parse_ins_id", False))
        self.set_parse_content(kwargs.get("parse_content", False))
        for key in ("fleet_send_batch_size", "fleet_send_sleep_seconds"):
            if kwargs.get(key):
                setattr(self, key, kwargs[key])
        self._check_unsupported(kwargs)

    @staticmethod
    def _check_unsupported(kwargs):
        if kwargs.get("merge_size", -1) > 0 or kwargs.get("fea_eval"):
            raise NotImplementedError("merge_size / fea_eval (merging instances by line id, slots shuffle) belong "
                                      "to fluid's parameter-server training, which minifluid does not have")

    def set_queue_num(self, queue_num):
        """Number of channels the samples are split into (NOTE above); at most the thread count."""
        self.is_user_set_queue_num = True
        self.queue_num = int(queue_num)

    def set_parse_ins_id(self, parse_ins_id):
        """Each line starts with "1 <instance id>" (skipped)."""
        self.parse_ins_id = bool(parse_ins_id)

    def set_parse_content(self, parse_content):
        """Each line has "1 <content>" before its slots (after the instance id; skipped)."""
        self.parse_content = bool(parse_content)

    def set_fleet_send_batch_size(self, fleet_send_batch_size=1024):
        self.fleet_send_batch_size = fleet_send_batch_size

    def set_fleet_send_sleep_seconds(self, fleet_send_sleep_seconds=0):
        self.fleet_send_sleep_seconds = fleet_send_sleep_seconds

    def set_merge_by_lineid(self, merge_size=2):
        self._check_unsupported({"merge_size": merge_size})

    def set_feed_type(self, data_feed_type):
        self._feed_name = data_feed_type

    _set_queue_num, _set_parse_ins_id, _set_parse_content = set_queue_num, set_parse_ins_id, set_parse_content
    _set_fleet_send_batch_size, _set_fleet_send_sleep_seconds = set_fleet_send_batch_size, set_fleet_send_sleep_seconds
    _set_merge_by_lineid, _set_feed_type = set_merge_by_lineid, set_feed_type

    # --- memory ------------------------------------------------------------------------------------
    def load_into_memory(self):
        """Read and parse every file (``thread_num`` at a time) into memory, in file list order."""
        self._check_ready()
        if self.queue_num is None:
            self.queue_num = max(1, self.thread_num)
        threads = max(1, min(self.thread_num, len(self.filelist)))
        per_file = [[] for _ in self.filelist]
        errors = []

        def load(k):
            try:
                for i in range(k, len(self.filelist), threads):
                    per_file[i] = list(self._file_tables(self.filelist[i]))
            except BaseException as e:  # re-raised in the caller's thread below
                errors.append(e)
        workers = [threading.Thread(target=load, args=(k,), name=f"minifluid-dataset-load-{k}", daemon=True)
                   for k in range(threads)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        if errors:
            raise errors[0]
        table = SampleTable.concat([empty_table(self.formats)] + [t for tables in per_file for t in tables])
        self._table, self._shuffled = table.drop_zero_ids(self.formats), 0

    def preload_into_memory(self, thread_num=None):
        """``load_into_memory`` in the background; ``wait_preload_done()`` waits for it (and raises its error)."""
        if thread_num is not None:
            self.set_thread(thread_num)
        outcome = []

        def run():
            try:
                self.load_into_memory()
            except BaseException as e:
                outcome.append(e)
        self._preload = (threading.Thread(target=run, name="minifluid-dataset-preload", daemon=True), outcome)
        self._preload[0].start()

    def wait_preload_done(self):
        if self._preload is not None:
            thread, outcome = self._preload
            thread.join()
            self._preload = None
            if outcome:
                raise outcome[0]

    def local_shuffle(self):
        """Shuffle the samples in memory (numpy's global RNG: ``np.random.seed`` makes it repeat)."""
        table = self._memory()
        self._table = table.take(np.random.permutation(len(table)))
        self._shuffled = len(self._table)

    def global_shuffle(self, fleet=None, thread_num=12):
        """On one node, the same as ``local_shuffle``."""
        if fleet is not None and fleet.worker_num() > 1:
            raise NotImplementedError("global_shuffle across several trainers needs fluid's parameter server; "
                                      "minifluid shuffles on one node only")
        self.local_shuffle()

    def release_memory(self):
        self._table, self._shuffled = None, 0

    def get_memory_data_size(self, fleet=None):
        """Number of samples in memory."""
        return len(self._table) if self._table is not None else 0

    def get_shuffle_data_size(self, fleet=None):
        """Number of samples shuffled by the last local/global shuffle (0 before any)."""
        return self._shuffled

    def _memory(self):
        self.wait_preload_done()
        if self._table is None:
            raise RuntimeError("InMemoryDataset has no data in memory: call load_into_memory() first (and again "
                               "after release_memory())")
        return self._table

    def _training_readers(self, thread=0):
        """(readers, queue_num) for train_from_dataset: ``thread`` readers (the dataset's thread count if 0),
        one channel each unless ``set_queue_num`` said otherwise."""
        readers = max(1, thread if thread > 0 else self.thread_num)
        if not self.is_user_set_queue_num:
            return readers, readers
        if self.queue_num > readers:
            _log.warning("queue_num %d which is set in Dataset is more than the %d training threads; %d are used",
                         self.queue_num, readers, readers)
        return readers, min(self.queue_num, readers)

    def _streams(self, readers, queue_num=None, stop=None):
        """``readers`` batch readers over the samples in memory (NOTE above)."""
        table = self._memory()
        channels = min(readers, max(1, queue_num or self.queue_num or readers))
        n, size = len(table), self.batch_size
        block = n // channels + 1 if n >= channels else max(n, 1)
        streams = []
        for k in range(readers):
            c = k % channels
            begin, end = min(c * block, n), min((c + 1) * block, n)
            sharing, turn = len(range(c, readers, channels)), k // channels
            starts = range(begin + turn * size, end, sharing * size)
            streams.append(self._stream(table, [(s, min(s + size, end)) for s in starts]))
        return streams

    def _stream(self, table, ranges):
        def batches():
            for begin, end in ranges:
                yield table.slice(begin, end).fields(self.formats)
        return batches
