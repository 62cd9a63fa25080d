"""The MultiSlot text format of fluid's file-fed datasets, parsed a whole chunk of lines at a time.

One line is one sample. For each slot, in ``set_use_var`` order: a count n >= 1, then n values
(integer ids for an int64 slot, numbers for a float32 slot)::

    3 11 12 13 1 0.5 2 7 8        ->  slot a: [11, 12, 13]   slot b: [0.5]   slot c: [7, 8]

A LoD slot (lod_level 1) becomes a [total, 1] LoDTensor whose sequence lengths are the counts; a
dense slot (lod_level 0) takes exactly prod(shape[1:]) values per sample and becomes an array of
shape [batch] + shape[1:]. Blank lines are skipped.

NOTE [ Vectorised MultiSlot parsing ]
``parse_lines`` reads a chunk of whole lines with a fixed number of numpy calls per slot, whatever
the chunk's size; nothing loops over tokens or lines in Python:
1. Tokens: a whitespace mask gives every token's start and end byte; the first token of each line
   comes from the newline offsets (searchsorted).
2. Integers: one ``np.fromstring(int64)`` over the chunk with its non-integer tokens blanked (ids
   stay exact; they never pass through float64).
3. Structure: the count of slot j sits right after slot j-1's values, so a loop over the *slots*
   walks all lines at once: ``counts = ints[cursor]; cursor += 1 + counts``.
4. Values: slot j's values are the token ranges [cursor + 1, cursor + 1 + count) of every line,
   gathered by one repeat/arange index. Non-integer values of float slots are read last: plain
   decimals as integers without their point (``np.fromstring(int64)`` again, then one division by
   powers of ten), the rest (exponents, inf, nan) by one ``np.fromstring(float64)``.
Every check of the format is an array comparison over all lines; the first line failing one is
reported with its file, line number and slot (``MalformedLineError``).
"""
from typing import NamedTuple

import numpy as np

from ..dtypes import to_numpy_dtype
from ..lod_tensor import LoDTensor

__all__ = ["MalformedLineError", "SampleTable", "SlotFormat", "parse_lines", "rebatch", "slot_formats"]

_SPACE, _NEWLINE, _PLUS, _MINUS, _DOT, _ZERO = 32, 10, 43, 45, 46, 48
_INT64_MAX = np.iinfo(np.int64).max
_POW10 = 10.0 ** np.arange(16)  # exact in float64


class MalformedLineError(ValueError):
    """A line of a dataset file breaks the MultiSlot format; ``path``, ``line`` and ``slot`` say where."""

    def __init__(self, path, line, slot, problem):
        self.path, self.line, self.slot = path, line, slot
        where = f" in slot {slot!r}" if slot is not None else ""
        super().__init__(f"Malformed MultiSlot data in file {path!r}, line {line}{where}: {problem}")


class SlotFormat(NamedTuple):
    """How one ``set_use_var`` variable is read: name, dtype (int64 or float32) and, for a dense slot,
    the per-sample shape (``dense_shape``) and value count (``width``); LoD slots have ``width`` 0."""
    name: str
    dtype: np.dtype
    dense_shape: tuple = None
    width: int = 0


def slot_formats(variables):
    """SlotFormats for the variables given to ``set_use_var`` (fluid Variables or anything with
    name/shape/dtype/lod_level), checked: float32 or int64, LoD level 0 or 1, fixed dense dims."""
    formats = []
    for var in variables:
        dtype = to_numpy_dtype(var.dtype)
        if dtype not in (np.float32, np.int64):
            raise ValueError(f"Currently, fluid.dataset only supports dtype=float32 and dtype=int64 "
                             f"(variable {var.name!r} is {dtype.name})")
        lod_level = int(var.lod_level or 0)
        if lod_level > 1:
            raise ValueError(f"Variable {var.name!r} has lod_level {lod_level}: the MultiSlot format gives one "
                             "LoD level (the per-sample counts)")
        if lod_level == 1:
            formats.append(SlotFormat(var.name, dtype))
            continue
        shape = tuple(int(d) for d in (var.shape or ())[1:])
        if any(d <= 0 for d in shape):
            raise ValueError(f"Variable {var.name!r} is dense (lod_level 0) but its shape {list(var.shape)} has an "
                             "unknown dimension after the batch one: give it lod_level=1 for a variable number of "
                             "values per sample")
        formats.append(SlotFormat(var.name, dtype, shape, int(np.prod(shape, dtype=np.int64))))
    return formats


class SampleTable:
    """Parsed samples, one column per slot: ``values[j]`` holds every sample's values of slot j back
    to back, ``counts[j]`` how many belong to each sample."""

    __slots__ = ("values", "counts", "_starts")

    def __init__(self, values, counts):
        self.values, self.counts = list(values), list(counts)
        self._starts = None

    def __len__(self):
        return len(self.counts[0]) if self.counts else 0

    def starts(self):
        """Per slot, the offset of each sample's first value (n + 1 entries; computed once)."""
        if self._starts is None:
            self._starts = [np.concatenate(([0], np.cumsum(c))) for c in self.counts]
        return self._starts

    def slice(self, begin, end):
        """Samples [begin, end) as a table of views."""
        return SampleTable([v[s[begin]:s[end]] for v, s in zip(self.values, self.starts())],
                           [c[begin:end] for c in self.counts])

    def take(self, index):
        """The samples at ``index`` (an int array), in that order."""
        index = np.asarray(index, dtype=np.int64)
        counts = [c[index] for c in self.counts]
        return SampleTable([v[_ranges(s[index], c)] for v, s, c in zip(self.values, self.starts(), counts)], counts)

    @staticmethod
    def concat(tables):
        tables = list(tables)
        tables = [t for t in tables if len(t)] or tables[:1]
        if len(tables) == 1:
            return tables[0]
        columns = range(len(tables[0].values)) if tables else ()
        return SampleTable([np.concatenate([t.values[j] for t in tables]) for j in columns],
                           [np.concatenate([t.counts[j] for t in tables]) for j in columns])

    def drop_zero_ids(self, formats):
        """fluid's in-memory rule: in LoD slots, values equal to 0 (floats: |x| < 1e-6) are dropped,
        and a sample left with none gets a single 0."""
        values, counts = list(self.values), list(self.counts)
        for j, fmt in enumerate(formats):
            if fmt.width or not len(counts[j]):
                continue
            v, first = values[j], self.starts()[j][:-1]
            keep = ~(np.abs(v) < 1e-6) if fmt.dtype == np.float32 else (v != 0)  # (NaN stays, as in fluid)
            kept = np.add.reduceat(keep, first, dtype=np.int64)
            empty = first[kept == 0]
            if len(empty):
                v = v.copy()
                v[empty] = 0
                keep[empty] = True
            values[j], counts[j] = v[keep], np.maximum(kept, 1).astype(np.int64)
        return SampleTable(values, counts)

    def fields(self, formats):
        """One batch field per slot: an ndarray [n] + dense_shape, or a [total, 1] LoDTensor."""
        n = len(self)
        return [v.reshape((n,) + fmt.dense_shape) if fmt.width else LoDTensor(v.reshape(-1, 1), [c.tolist()])
                for v, c, fmt in zip(self.values, self.counts, formats)]


def empty_table(formats):
    return SampleTable([np.empty(0, f.dtype) for f in formats], [np.empty(0, np.int64) for _ in formats])


def _ranges(firsts, counts):
    """Concatenated ranges [firsts[i], firsts[i] + counts[i]) as one index array."""
    total = int(counts.sum())
    ends = np.cumsum(counts)
    return np.arange(total, dtype=np.int64) + np.repeat(firsts - (ends - counts), counts)


def _without(buf, starts, ends, dropped):
    """The chunk with the tokens at ``dropped`` (few) turned into spaces."""
    out = buf.copy()
    out[_ranges(starts[dropped], ends[dropped] - starts[dropped])] = _SPACE
    return out.tobytes()


def _only(buf, starts, ends):
    """The bytes [starts[i], ends[i]) one after the other, each followed by a space (a uint8 array):
    np.fromstring is slow over long runs of spaces, so sparse tokens are gathered first."""
    lengths = ends - starts
    out = np.full(int(lengths.sum()) + len(lengths), _SPACE, np.uint8)
    out[_ranges(np.cumsum(lengths + 1) - lengths - 1, lengths)] = buf[_ranges(starts, lengths)]
    return out


class _Chunk:
    """Tokens of one chunk of lines and their integer values (steps 1 and 2 of the NOTE)."""

    def __init__(self, data, path, first_line):
        self.data, self.path, self.first_line = data, path, first_line
        buf = self.buf = np.frombuffer(data, np.uint8)
        word = (buf != _SPACE) & ((buf < 9) | (buf > 13))  # C isspace(): space, \t \n \v \f \r
        padded = np.concatenate(([False], word, [False]))
        edges = np.flatnonzero(padded[1:] != padded[:-1])  # (a bool array: numpy's fast nonzero)
        self.starts, self.ends = edges[0::2], edges[1::2]  # a token is bytes [start, end)
        self.newlines = np.flatnonzero(buf == _NEWLINE)
        line_first = np.searchsorted(self.starts, np.concatenate(([0], self.newlines + 1)))
        line_stop = np.append(line_first[1:], len(self.starts))
        sample = line_first < line_stop  # blank lines hold no sample
        self.first, self.stop = line_first[sample], line_stop[sample]  # each sample's tokens
        self.is_int = self._integer_tokens(buf, word)
        if self.is_int.all():
            self.ints = np.fromstring(data, dtype=np.int64, sep=" ") if len(self.starts) else np.zeros(0, np.int64)
            if len(self.ints) != len(self.starts):  # our tokens and strtoll's must be the same ones
                raise RuntimeError(f"{path}: read {len(self.ints)} integers from {len(self.starts)} tokens")
        else:
            self.ints = np.zeros(len(self.starts), np.int64)
            self.ints[self.is_int] = np.fromstring(_without(buf, self.starts, self.ends, ~self.is_int),
                                                   dtype=np.int64, sep=" ")
        self._exact_big_ints()

    def _integer_tokens(self, buf, word):
        """Per token: is it a plain integer ([+-] and digits)? Only the bytes that are no digit are looked
        at one by one (none in id-only data)."""
        odd = np.flatnonzero(word & ((buf - np.uint8(_ZERO)) >= 10))
        token = np.searchsorted(self.starts, odd, side="right") - 1
        sign = (buf[odd] == _PLUS) | (buf[odd] == _MINUS)
        leading_sign = sign & (odd == self.starts[token]) & (self.ends[token] - odd > 1)
        other = ~leading_sign
        self.other_at, self.other_token = odd[other], token[other]  # bytes no integer has, and their tokens
        is_int = np.ones(len(self.starts), bool)
        is_int[self.other_token] = False
        return is_int

    def _exact_big_ints(self):
        """np.fromstring saturates beyond int64; re-read those (rare) ids as fluid does: uint64 bits. An
        integer beyond uint64 is no id (an int64 slot refuses it; a float slot reads it as a float)."""
        for t in np.flatnonzero(self.ints == _INT64_MAX):
            value = int(self.token(t))
            if -2 ** 63 <= value < 2 ** 64:
                self.ints[t] = value - 2 ** 64 if value >= 2 ** 63 else value
            else:
                self.is_int[t] = False

    def token(self, t):
        return self.data[self.starts[t]:self.ends[t]].decode("utf-8", "replace")

    def line_number(self, t):
        return self.first_line + int(np.searchsorted(self.newlines, self.starts[t]))

    def error(self, t, slot, problem):
        return MalformedLineError(self.path, self.line_number(t), slot, problem)

    def floats(self, index):
        """Float values of the tokens at ``index`` (sorted, none of them integers); None when one is not
        a number. Plain decimals ([+-]digits.digits, up to 15 digits) are read as integers without their
        point, then divided by the power of ten (exact, then correctly rounded); the others by strtod."""
        buf, starts, ends = self.buf, self.starts[index], self.ends[index]
        at = np.minimum(np.searchsorted(index, self.other_token), len(index) - 1)  # index is sorted
        mine = index[at] == self.other_token
        others = np.bincount(at[mine], minlength=len(index))  # per token: its bytes that no integer has
        dot = np.full(len(index), -1)
        is_dot = mine & (buf[self.other_at] == _DOT)
        dot[at[is_dot]] = self.other_at[is_dot]
        negative = buf[starts] == _MINUS
        first = starts + (negative | (buf[starts] == _PLUS))
        digits = ends - first - 1
        plain = (others == 1) & (dot >= 0) & (digits >= 1) & (digits <= 15)
        values = np.empty(len(index))
        if plain.any():
            text = _only(buf, first[plain], ends[plain])
            mantissa = np.fromstring(text[text != _DOT].tobytes(), dtype=np.int64, sep=" ")
            magnitude = mantissa / _POW10[ends[plain] - dot[plain] - 1]
            values[plain] = np.where(negative[plain], -magnitude, magnitude)
        if not plain.all():
            try:
                rest = np.fromstring(_only(buf, starts[~plain], ends[~plain]).tobytes(), dtype=np.float64, sep=" ")
            except ValueError:
                return None
            if len(rest) != (~plain).sum():
                return None
            values[~plain] = rest
        return values


def _check(chunk, bad, tokens, slot, problem):
    """Raise for the first line where ``bad`` holds; ``problem(i)`` describes line i's fault."""
    if bad.any():
        i = int(np.argmax(bad))
        raise chunk.error(tokens[i], slot, problem(i))


def parse_lines(data, formats, path="<bytes>", first_line=1, prefix_fields=0):
    """A SampleTable of the samples in ``data`` (bytes holding whole lines, the first being line
    ``first_line`` of ``path``). ``prefix_fields`` leading "1 <text>" fields per line (an instance
    id, a content string) are checked and skipped.

    Raises MalformedLineError for the first malformed line (the checks run slot by slot over all
    lines, so on failure a bisection over the lines finds the earliest one)."""
    try:
        return _parse(data, formats, path, first_line, prefix_fields)
    except MalformedLineError as error:
        bounds = np.concatenate(([0], np.flatnonzero(np.frombuffer(data, np.uint8) == _NEWLINE) + 1, [len(data)]))
        lo, hi = 0, len(bounds) - 1  # the earliest bad line is in lines [lo, hi)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            try:
                _parse(data[bounds[lo]:bounds[mid]], formats, path, first_line + lo, prefix_fields)
                lo = mid
            except MalformedLineError as e:
                hi, error = mid, e
        raise error from None


def _parse(data, formats, path, first_line, prefix_fields):
    chunk = _Chunk(data, path, first_line)
    ntok = len(chunk.starts)
    if not ntok:
        return empty_table(formats)
    first, stop = chunk.first, chunk.stop
    cursor = first.copy()
    for _ in range(prefix_fields):
        _check(chunk, ~(cursor + 1 < stop), first, None, lambda i: "the line ends before its id/content field")
        _check(chunk, ~chunk.is_int[cursor] | (chunk.ints[cursor] != 1), cursor, None,
               lambda i: f"an id/content field must start with the count 1, got {chunk.token(cursor[i])!r}")
        cursor = cursor + 2
    values, counts, pending = [], [], []
    all_ints = chunk.is_int.all()
    for fmt in formats:
        slot = fmt.name
        _check(chunk, cursor >= stop, first, slot,
               lambda i: f"the slot is missing: the line ends after {stop[i] - first[i]} values")
        _check(chunk, ~chunk.is_int[cursor], cursor, slot,
               lambda i: f"expected the slot's value count, got {chunk.token(cursor[i])!r}")
        count = chunk.ints[cursor]
        _check(chunk, count < 1, cursor, slot,
               lambda i: f"the value count is {count[i]}; each slot needs at least one value (pad it in the "
                         "data generator)")
        _check(chunk, cursor + count >= stop, cursor, slot,
               lambda i: f"the count says {count[i]} values but the line has only {stop[i] - cursor[i] - 1} left")
        if fmt.width:
            _check(chunk, count != fmt.width, cursor, slot,
                   lambda i: f"a dense slot of shape {list(fmt.dense_shape)} needs {fmt.width} values per sample, "
                             f"got {count[i]}")
        index = _ranges(cursor + 1, count)
        column = chunk.ints[index]
        if not all_ints:
            not_int = ~chunk.is_int[index]
            if fmt.dtype == np.int64:
                _check(chunk, not_int, index, slot, lambda i: "int64 slots take integer ids (in the uint64 range), "
                                                              f"got {chunk.token(index[i])!r}")
            elif not_int.any():
                pending.append((len(values), np.flatnonzero(not_int), index[not_int]))
        if fmt.dtype == np.float32:
            column = column.astype(np.float32)
        values.append(column)
        counts.append(count)
        cursor = cursor + 1 + count
    _check(chunk, cursor != stop, cursor, None,
           lambda i: f"{stop[i] - cursor[i]} more value(s) after the last slot {formats[-1].name!r}")
    if pending:
        wanted = np.zeros(ntok, bool)  # each token is one slot's value: no duplicates to merge
        for _, _, tokens in pending:
            wanted[tokens] = True
        wanted = np.flatnonzero(wanted)
        floats = chunk.floats(wanted)
        if floats is None:
            _raise_for_a_non_number(chunk, pending, formats)
        by_token = np.empty(ntok, np.float64)
        by_token[wanted] = floats
        for j, where, tokens in pending:
            values[j][where] = by_token[tokens]
    return SampleTable(values, counts)


def _raise_for_a_non_number(chunk, pending, formats):
    """Error path only: find the first value of a float slot that is not a number."""
    bad = []
    for j, _, tokens in pending:
        for t in tokens:
            try:
                float(chunk.token(t))
            except ValueError:
                bad.append((t, formats[j].name))
                break
    t, slot = min(bad) if bad else (pending[0][2][0], formats[pending[0][0]].name)
    raise chunk.error(t, slot, f"float32 slots take numbers, got {chunk.token(t)!r}")


def rebatch(tables, batch_size):
    """Tables of exactly ``batch_size`` samples from a stream of tables (the last one may be short)."""
    held, size = [], 0
    for table in tables:
        at = 0
        while len(table) - at >= batch_size - size:
            take = batch_size - size
            yield SampleTable.concat(held + [table.slice(at, at + take)])
            held, size, at = [], 0, at + take
        if at < len(table):
            held.append(table.slice(at, len(table)))
            size += len(table) - at
    if size:
        yield SampleTable.concat(held)
