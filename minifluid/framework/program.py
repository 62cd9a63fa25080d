"""Program: blocks of ops; default main/startup programs and program_guard."""
import contextlib
import copy

from ..ops.registry import OpRole, get_op_spec
from . import program_desc
from .block import Block
from .operator import Operator
from .variable import Parameter, Variable, VarType

__all__ = ["Program", "default_main_program", "default_startup_program", "program_guard",
           "switch_main_program", "switch_startup_program"]


_global_seed = 0
"""The ``random_seed`` a new Program starts with (``Program.global_seed``; fluid's global_prog_seed)."""

_DIST_INFO = ("_is_distributed", "_is_chief", "_parameters_on_pservers", "_endpoints", "_ps_endpoint",
              "_trainers_endpoints", "_distributed_lookup_table")
"""The distributed-training bookkeeping ``_copy_dist_param_info_from`` carries over when present."""


class Program:
    """A static graph. ``_version`` grows on every edit so executors can cache their plans."""

    lr_sheduler = None
    """paddle 2.x static mode (paddle's spelling): the ``paddle.optimizer.lr`` scheduler whose value the
    Executor writes into ``_lr_var_name`` before each run of this program (dygraph/paddle_optimizer.py)."""
    _lr_var_name = None

    def __init__(self):
        self.blocks = [Block(self, 0)]
        self.current_block_idx = 0
        self._seed = _global_seed
        self._version = 0
        self._is_test = False

    def _bump_version(self):
        self._version += 1

    # --- blocks -------------------------------------------------------------------
    def global_block(self):
        return self.blocks[0]

    def block(self, index):
        return self.blocks[index]

    def current_block(self):
        return self.blocks[self.current_block_idx]

    @property
    def num_blocks(self):
        return len(self.blocks)

    def _create_block(self, parent_idx=None):
        parent = self.current_block_idx if parent_idx is None else parent_idx
        self.blocks.append(Block(self, len(self.blocks), parent))
        self.current_block_idx = len(self.blocks) - 1
        self._bump_version()
        return self.current_block()

    def _rollback(self):
        self.current_block_idx = self.current_block().parent_idx

    # --- properties ----------------------------------------------------------------
    @property
    def random_seed(self):
        return self._seed

    @random_seed.setter
    def random_seed(self, seed):
        if not isinstance(seed, int) or isinstance(seed, bool):
            raise ValueError(f"Program.random_seed must be an integer, but received {type(seed).__name__}")
        self._seed = seed
        self._bump_version()

    def global_seed(self, seed=0):
        """Make ``seed`` the ``random_seed`` of this Program and of every Program created from now on."""
        global _global_seed
        _global_seed = int(seed)
        self.random_seed = _global_seed

    def all_parameters(self):
        return [p for b in self.blocks for p in b.all_parameters()]

    # --- fluid's ProgramDesc (framework/program_desc.py) -----------------------------
    @staticmethod
    def parse_from_string(binary_str):
        """A Program from the bytes of a ``__model__`` / ``.pdmodel`` file (fluid's ProgramDesc)."""
        return program_desc.parse_program(binary_str, Program)

    @property
    def desc(self):
        """fluid's ``program.desc``: ``serialize_to_string()``, ``get_feed_target_names()``, ..."""
        return program_desc.ProgramDescView(self)

    def _sync_with_cpp(self):
        """fluid re-reads its Python objects from the C++ desc after ``program.desc`` edits; minifluid's descs
        edit the Program itself (framework/block_desc.py), so there is nothing to read back."""

    def list_vars(self):
        for b in self.blocks:
            yield from b.vars.values()

    # --- copies --------------------------------------------------------------------
    def clone(self, for_test=False):
        """Deep copy. ``for_test=True`` sets ``is_test`` where an op has it and drops the backward,
        optimizer and learning-rate-schedule ops (as fluid's prune_backward does), keeping forward
        and read ops: running the test program does not advance the schedule's step counter. When ops
        went, so do the gradient blocks and the variables no remaining op of their block names (gradients,
        accumulators, the learning rate), so a test clone taken after ``minimize`` equals one taken before it."""
        p = copy.deepcopy(self)
        if for_test:
            p._is_test = True
            dropped = False
            for block in p.blocks:
                kept = [op for op in block.ops
                        if not int(op.attrs.get("op_role", 0)) & (OpRole.Backward | OpRole.Optimize | OpRole.LRSched)]
                dropped |= len(kept) < len(block.ops)
                block.ops = kept
                for op in block.ops:
                    if "is_test" in get_op_spec(op.type).attrs:
                        op.attrs["is_test"] = True
            if dropped:
                p._drop_backward_leftovers()
        p._version = 0
        return p

    def _drop_backward_leftovers(self):
        """After the backward ops went (``clone(for_test=True)``), as fluid's prune_backward: a block left
        without ops (a gradient block) goes and the others are renumbered; a block keeps only the variables
        its own ops name. An op running a block (``while``, ``conditional_block``) no longer names what only
        the gradient and optimizer ops inside it used (fluid builds those in a block of their own)."""
        for block in reversed(self.blocks):  # inner blocks first: a block's names include its ops' sub-blocks'
            for op in block.ops:
                sub = op.attrs.get("sub_block")
                if isinstance(sub, Block):  # the op names only what its block's remaining ops use
                    used = _names_used(sub)
                    for slots in (op.inputs, op.outputs):
                        for slot in ("X", "Input", "Out"):
                            if slot in slots:
                                slots[slot] = [n for n in slots[slot] if n in used]
        kept = [b for b in self.blocks if b.ops or b.idx == 0]
        new_idx = {b.idx: k for k, b in enumerate(kept)}
        for k, block in enumerate(kept):
            block.idx, block.parent_idx = k, new_idx.get(block.parent_idx, -1)
            named = {n for op in block.ops for n in op.input_arg_names + op.output_arg_names}
            block.vars = {name: var for name, var in block.vars.items() if name in named}
        self.blocks = kept
        self.current_block_idx = 0

    def __deepcopy__(self, memo):
        new = Program.__new__(Program)
        memo[id(self)] = new
        for key, value in self.__dict__.items():
            setattr(new, key, copy.deepcopy(value, memo))
        return new

    def _inference_optimize(self, prune_read_op=True):
        """A copy with is_test set; with prune_read_op, ops up to the first ``read`` and reader vars go."""
        p = self.clone(for_test=True)
        if prune_read_op:
            block = p.global_block()
            read_idx = next((i for i, op in enumerate(block.ops) if op.type == "read"), None)
            if read_idx is not None:
                block.ops = block.ops[read_idx + 1:]
            for name in [n for n, v in block.vars.items() if v.type == VarType.READER]:
                del block.vars[name]
        return p

    def _prune_with_input(self, feeded_var_names, targets):
        """A copy keeping only the ops ``targets`` (Variables, names or Operators of the global block) need,
        stopping at the fed variables (whose producing ops go too); ``_prune(targets)`` prunes with nothing
        fed. An optimizer op stays only as a target (``graph.ops_needed_for``)."""
        feeded_var_names = feeded_var_names if isinstance(feeded_var_names, list) else [feeded_var_names]
        targets = targets if isinstance(targets, list) else [targets]
        for name in feeded_var_names:
            if not isinstance(name, str):
                raise ValueError("All feeded_var_names of Program._prune_with_input() can only be str, but "
                                 f"received {type(name)}.")
        needed, target_ops = set(), []
        global_ops = self.global_block().ops
        for t in targets:
            if isinstance(t, Operator):
                index = next((i for i, op in enumerate(global_ops) if op is t), None)
                if index is None:
                    raise ValueError(f"The target operator {t.type!r} of Program._prune_with_input() is not an "
                                     "operator of this program's global block")
                target_ops.append(index)
            elif isinstance(t, (Variable, str)):
                needed.add(t if isinstance(t, str) else t.name)
            else:
                raise ValueError("All targets of Program._prune_with_input() can only be Variable or Operator, "
                                 f"but received {type(t)}.")
        from . import graph  # noqa: PLC0415 - networkx takes ~0.3 s to import: only when a program is pruned
        fed = set(feeded_var_names)
        pruned = self.clone()
        block = pruned.global_block()
        block.ops = [block.ops[i] for i in graph.ops_needed_for(block, needed, fed, target_ops)]
        used = needed | {n for op in block.ops for n in op.input_arg_names + op.output_arg_names}
        for name in [n for n in block.vars if n not in used]:
            del block.vars[name]
        pruned._bump_version()
        return pruned

    def _prune(self, targets):
        return self._prune_with_input([], targets)

    def _copy_param_info_from(self, other):
        """Take the trainable/optimize/regularizer settings of ``other``'s parameters of the same names."""
        if not isinstance(other, Program):
            raise TypeError(f"_copy_param_info_from should be invoked with Program, got {type(other).__name__}")
        block = self.global_block()
        for param in other.global_block().all_parameters():
            var = block.vars.get(param.name)
            if var is not None:
                block.vars[param.name] = Parameter(
                    block, param.name, var.shape, var.dtype, trainable=param.trainable,
                    optimize_attr=param.optimize_attr, regularizer=param.regularizer,
                    gradient_clip_attr=param.gradient_clip_attr, do_model_average=param.do_model_average,
                    lod_level=var.lod_level)
        self._bump_version()

    def _copy_dist_param_info_from(self, other):
        """Take ``other``'s distributed-training bookkeeping (set by transpilers; none in minifluid itself)."""
        if not isinstance(other, Program):
            raise TypeError(f"_copy_dist_param_info_from should be invoked with Program, got {type(other).__name__}")
        for attr in _DIST_INFO:
            if hasattr(other, attr):
                setattr(self, attr, getattr(other, attr))

    def to_string(self, throw_on_error=False, with_details=False):
        return "\n".join(b.to_string(throw_on_error, with_details) for b in self.blocks)

    __str__ = to_string


_main_program = Program()
_startup_program = Program()


def default_main_program():
    return _main_program


def default_startup_program():
    return _startup_program


def switch_main_program(program):
    global _main_program
    old, _main_program = _main_program, program
    return old


def switch_startup_program(program):
    global _startup_program
    old, _startup_program = _startup_program, program
    return old


@contextlib.contextmanager
def program_guard(main_program, startup_program=None):
    """Make ``main_program`` (and ``startup_program``) the defaults inside the block."""
    if not isinstance(main_program, Program):
        raise TypeError(f"main_program must be a Program, got {type(main_program).__name__}")
    if startup_program is not None and not isinstance(startup_program, Program):
        raise TypeError(f"startup_program must be a Program, got {type(startup_program).__name__}")
    old_main = switch_main_program(main_program)
    old_startup = switch_startup_program(startup_program) if startup_program is not None else None
    try:
        yield
    finally:
        switch_main_program(old_main)
        if startup_program is not None:
            switch_startup_program(old_startup)


def _names_used(block):
    """The variable names the ops of ``block`` and of the blocks they run name."""
    names = set()
    for op in block.ops:
        names.update(op.input_arg_names + op.output_arg_names)
        sub = op.attrs.get("sub_block")
        if isinstance(sub, Block):
            names |= _names_used(sub)
    return names
