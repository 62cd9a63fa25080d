"""BuildStrategy and ExecutionStrategy: fluid 1.8's options of a CompiledProgram, and its pass list.

NOTE [ Build passes ]
fluid turns a BuildStrategy into a list of graph passes (``_finalize_strategy_and_create_passes()``, in
the order its ParallelExecutor builds them) that rewrite the program before it runs: fusions, multi-device
copies, dependency edges. minifluid runs the program as it is (its kernels give what the fused ones give,
and replicas are in NOTE [ Data parallel on CPU ] in compiled.py), so those passes are names in the list,
for code that reads or edits it. One pass acts: ``graph_viz_pass`` writes the program's op graph as
Graphviz DOT to its ``graph_viz_path`` when the CompiledProgram first runs (``debug_graphviz_path`` adds
one, as in fluid). The options are kept and read back with fluid's defaults; once the passes are made, the
strategy is finalized and setting an option is fluid's error.
"""
__all__ = ["BuildStrategy", "ExecutionStrategy", "PassBuilder"]

_OPTIONS = {  # fluid 1.8's BuildStrategy fields and defaults (None: "let the framework choose")
    "reduce_strategy": 0, "gradient_scale_strategy": 0, "debug_graphviz_path": "",
    "enable_sequential_execution": False, "remove_unnecessary_lock": True, "num_trainers": 1, "trainer_id": 0,
    "trainers_endpoints": [], "nccl_comm_num": 1, "use_hierarchical_allreduce": False,
    "hierarchical_allreduce_inter_nranks": 0, "fuse_elewise_add_act_ops": False, "fuse_bn_act_ops": False,
    "enable_auto_fusion": False, "fuse_relu_depthwise_conv": False, "fuse_broadcast_ops": None,
    "fuse_all_optimizer_ops": False, "sync_batch_norm": False, "memory_optimize": None, "is_distribution": False,
    "async_mode": False, "enable_inplace": True, "fuse_all_reduce_ops": None,
    "enable_backward_optimizer_op_deps": True, "cache_runtime_context": False, "mkldnn_enabled_op_types": set(),
}
_UNSET_READS_TRUE = ("fuse_broadcast_ops", "fuse_all_reduce_ops")  # fluid's getters: unset reads as True


class Pass:
    """One pass of a PassBuilder: its ``type()`` and attributes (``set`` / ``get`` / ``has``)."""

    def __init__(self, pass_type, **attrs):
        self._type, self._attrs = pass_type, dict(attrs)

    def type(self):
        return self._type

    def set(self, key, value):
        self._attrs[key] = value

    def get(self, key):
        return self._attrs[key]

    def has(self, key):
        return key in self._attrs

    def __repr__(self):
        return f"Pass({self._type!r})"


class PassBuilder:
    """The ordered passes of a finalized BuildStrategy (NOTE [ Build passes ])."""

    def __init__(self, names=()):
        self._passes = [Pass(n) if isinstance(n, str) else n for n in names]

    def all_passes(self):
        return list(self._passes)

    def append_pass(self, pass_type):
        return self.insert_pass(len(self._passes), pass_type)

    def insert_pass(self, index, pass_type):
        if not 0 <= index <= len(self._passes):
            raise IndexError(f"insert_pass: index {index} is out of [0, {len(self._passes)}]")
        new = Pass(pass_type)
        self._passes.insert(index, new)
        return new

    def remove_pass(self, index):
        if not 0 <= index < len(self._passes):
            raise IndexError(f"remove_pass: index {index} is out of [0, {len(self._passes)})")
        del self._passes[index]

    def apply(self, program):
        """Run the passes that act on ``program`` (the graph printers); the others change nothing."""
        from ..framework.graph import to_dot  # noqa: PLC0415 - networkx only when a graph is drawn
        for p in self._passes:
            if p.type() in ("graph_viz_pass", "multi_devices_print_pass"):
                if not p.has("graph_viz_path"):
                    raise ValueError(f"{p.type()} needs its attribute graph_viz_path (pass.set('graph_viz_path', "
                                     "file))")
                with open(p.get("graph_viz_path"), "w", encoding="utf-8") as f:
                    f.write(to_dot(program.global_block()) + "\n")


class BuildStrategy:
    """fluid's options for building a CompiledProgram, kept and read back (NOTE [ Build passes ]).
    Gradients are always averaged over the places (fluid's AllReduce with CoeffNumDevice)."""

    class ReduceStrategy:
        AllReduce, Reduce = 0, 1

    class GradientScaleStrategy:
        CoeffNumDevice, One, Customized = 0, 1, 2

    def __init__(self):
        object.__setattr__(self, "_pass_builder", None)
        for name, default in _OPTIONS.items():
            object.__setattr__(self, name, default.copy() if isinstance(default, (list, set)) else default)

    def __getattribute__(self, name):
        value = object.__getattribute__(self, name)
        return True if value is None and name in _UNSET_READS_TRUE else value

    def __setattr__(self, name, value):
        if name in _OPTIONS and object.__getattribute__(self, "_pass_builder") is not None:
            raise RuntimeError(f"BuildStrategy has been finlaized, cannot be configured again (setting {name})")
        if name == "memory_optimize" and value not in (None, True, False):
            raise ValueError("BuildStrategy.memory_optimize must be set to None, False or True")
        object.__setattr__(self, name, value)

    def _finalize_strategy_and_create_passes(self):
        """The PassBuilder of this strategy (the same one on every call); the strategy is fixed from now on."""
        if self._pass_builder is None:
            object.__setattr__(self, "_pass_builder", PassBuilder(self._pass_names()))
        return self._pass_builder

    def _pass_names(self):
        """fluid's ParallelExecutor pass order for these options."""
        get = lambda name: object.__getattribute__(self, name)  # noqa: E731 - the stored value (None: unset)
        reduce = get("reduce_strategy") == BuildStrategy.ReduceStrategy.Reduce
        off = reduce or get("is_distribution")
        fuse_optimizers = bool(get("fuse_all_optimizer_ops")) and not off and not get("async_mode")
        fuse_all_reduce = get("fuse_all_reduce_ops") is not False and not off and not get("async_mode")
        viz = get("debug_graphviz_path")
        passes = []

        def add(name, when=True, **attrs):
            if when:
                passes.append(Pass(name, **attrs))

        add("graph_viz_pass", bool(viz), graph_viz_path=f"{viz}_original_graph")
        add("sequential_execution_pass", get("enable_sequential_execution"))
        add("sync_batch_norm_pass", get("sync_batch_norm"))
        add("fuse_relu_depthwise_conv_pass", get("fuse_relu_depthwise_conv"))
        add("fuse_bn_act_pass", get("fuse_bn_act_ops"))
        add("fuse_elewise_add_act_pass", get("fuse_elewise_add_act_ops"))
        add("coalesce_grad_tensor_pass", fuse_all_reduce)
        for name in ("fuse_adam_op_pass", "fuse_sgd_op_pass", "fuse_momentum_op_pass"):
            add(name, fuse_optimizers)
        add("graph_viz_pass", bool(viz), graph_viz_path=f"{viz}_fused_graph")
        add("add_reader_dependency_pass")
        add("async_multi_devices_pass" if get("async_mode") else "dist_multi_devices_pass"
            if get("is_distribution") else "reduce_mode_multi_devices_pass" if reduce
            else "all_reduce_mode_multi_devices_pass")
        add("fuse_all_reduce_op_pass", fuse_all_reduce)
        add("multi_devices_print_pass", bool(viz), graph_viz_path=f"{viz}_multi_devices_graph")
        add("all_reduce_deps_pass", not reduce)
        add("backward_optimizer_op_deps_pass", get("num_trainers") > 1 and not get("async_mode")
            and not get("is_distribution") and get("enable_backward_optimizer_op_deps"))
        add("runtime_context_cache_pass", get("cache_runtime_context"))
        add("modify_op_lock_and_record_event_pass", get("remove_unnecessary_lock"))
        add("multi_devices_check_pass")
        return passes


class ExecutionStrategy:
    """Accepted for compatibility (thread counts do not apply to numpy replicas)."""

    def __init__(self):
        self.num_threads = 1
        self.num_iteration_per_drop_scope = 1
