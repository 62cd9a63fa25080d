"""What to tell a legacy script that reaches for an API minifluid does not have.

Two written tables, no guessing: ``REPLACEMENTS`` gives, for a name legacy code uses, what to write
instead with minifluid (each API it names exists: tests/compat/test_hints.py resolves them), and
``NOT_SUPPORTED_YET`` sorts the fluid 1.8 / paddle 2.0 names minifluid lacks into API families, so
the error says which part of fluid is missing. ``tools/gen_api_table.py`` prints both into README.md.
A name in neither table is simply "not implemented by minifluid".
"""

__all__ = ["NOT_SUPPORTED_YET", "REPLACEMENTS", "hint", "not_supported_yet"]

# legacy API (full module path . name) -> what to write instead
REPLACEMENTS = {
    "paddle.fluid.AsyncExecutor": "fluid.Executor(place).run(...) fed by a fluid.io.DataLoader",
    "paddle.fluid.VarBase": "fluid.dygraph.VarBase",
    "paddle.fluid.save_dygraph": "fluid.dygraph.save_dygraph(state_dict, model_path)",
    "paddle.fluid.load_dygraph": "fluid.dygraph.load_dygraph(model_path)",
    "paddle.fluid.append_backward": "fluid.backward.append_backward(loss)",
    "paddle.static.append_backward": "fluid.backward.append_backward(loss)",
    "paddle.fluid.cuda_pinned_places": "[fluid.CUDAPinnedPlace()] * device_count",
    "paddle.fluid.layers.open_files": "fluid.io.DataLoader.from_generator with a Python reader",
    "paddle.fluid.recordio_writer": "fluid.io.DataLoader.from_generator with a Python reader",
    "paddle.static.Print": "fluid.layers.Print(input)",
    "paddle.static.accuracy": "fluid.layers.accuracy(input, label, k=1)",
    "paddle.static.py_func": "fluid.layers.py_func(func, x, out, backward_func=None, skip_vars_in_backward_input=None)",
    "paddle.static.create_global_var": "fluid.layers.create_global_var(shape, value, dtype, persistable=False)",
    "paddle.static.save_vars": "fluid.io.save_vars(executor, dirname, main_program, vars)",
    "paddle.static.load_vars": "fluid.io.load_vars(executor, dirname, main_program, vars)",
    "paddle.CUDAPinnedPlace": "fluid.CUDAPinnedPlace()",
    "paddle.is_compiled_with_cuda": "fluid.is_compiled_with_cuda()",
    "paddle.nn.ClipGradByGlobalNorm": "fluid.clip.GradientClipByGlobalNorm(clip_norm)",
    "paddle.nn.ClipGradByNorm": "fluid.clip.GradientClipByNorm(clip_norm)",
    "paddle.nn.ClipGradByValue": "fluid.clip.GradientClipByValue(max, min)",
}

# API family -> {legacy module: names minifluid lacks there}; modules count as names of their parent
NOT_SUPPORTED_YET = {
    "control flow": {
        "paddle": "increment is_empty"},
    "comparison and logical ops": {
        "paddle": "equal_all allclose isfinite isinf isnan"},
    "recurrent layers": {
        "paddle.nn": "RNN BiRNN RNNCellBase SimpleRNN SimpleRNNCell GRU GRUCell LSTM LSTMCell rnn"},
    "decoding (beam search, CRF, CTC)": {
        "paddle.nn": "BeamSearchDecoder dynamic_decode",
        "paddle.nn.functional": "gather_tree"},
    "attention and transformer layers": {
        "paddle.nn": """MultiHeadAttention Transformer TransformerEncoder TransformerEncoderLayer TransformerDecoder
            TransformerDecoderLayer"""},
    "detection": {
        "paddle.nn.functional": "sigmoid_focal_loss"},
    "image ops": {
        "paddle.nn": "Pad1D Pad3D PixelShuffle UpsamplingBilinear2D UpsamplingNearest2D",
        "paddle.nn.functional": "affine_grid grid_sample pixel_shuffle temporal_shift unfold",
        "paddle": "crop"},
    "convolution and pooling": {
        "paddle.fluid": "Conv3D",
        "paddle.nn": """Conv1D Conv1DTranspose Conv3D Conv3DTranspose AvgPool1D AvgPool3D MaxPool1D MaxPool3D
            AdaptiveAvgPool1D AdaptiveAvgPool3D AdaptiveMaxPool1D AdaptiveMaxPool3D""",
        "paddle.nn.functional": """conv1d conv1d_transpose conv3d conv3d_transpose avg_pool1d avg_pool3d max_pool1d
            max_pool3d adaptive_avg_pool1d adaptive_avg_pool3d adaptive_max_pool1d
            adaptive_max_pool3d"""},
    "normalization": {
        "paddle.nn": """BatchNorm3D SyncBatchNorm GroupNorm InstanceNorm1D InstanceNorm2D InstanceNorm3D
            LocalResponseNorm SpectralNorm""",
        "paddle.nn.functional": "instance_norm local_response_norm"},
    "activations": {
        "paddle.nn": "Hardtanh Maxout",
        "paddle.nn.functional": "elu_ hardtanh maxout relu_ softmax_ tanh_",
        "paddle": "stanh tanh_"},
    "dropout variants": {
        "paddle.nn": "AlphaDropout Dropout3D",
        "paddle.nn.functional": "alpha_dropout dropout3d"},
    "elementwise and reduction math": {
        "paddle": """acos add_n addmm all any asin atan ceil cholesky conj cos cosh cross cumsum dist dot erf floor
            floor_divide floor_mod histogram imag inverse kron log10 log1p log2 logsumexp median
            mm mod mv norm real reciprocal remainder round rsqrt scale sign sin sinh std trace var
            multiplex""",
        "paddle.nn": "Bilinear CosineSimilarity PairwiseDistance",
        "paddle.nn.functional": "bilinear cosine_similarity diag_embed"},
    "tensor manipulation and indexing": {
        "paddle": """assign broadcast_shape broadcast_to chunk expand_as flip gather_nd index_sample index_select
            masked_select nonzero rank reshape_ reverse roll scatter_ scatter_nd scatter_nd_add
            shard_index slice squeeze_ strided_slice t tril triu unbind unique unsqueeze_ meshgrid
            is_tensor"""},
    "tensor creation and random numbers": {
        "paddle": """create_parameter diag empty empty_like bernoulli multinomial randperm standard_normal
            get_cuda_rng_state set_cuda_rng_state""",
        "paddle.static": "create_parameter"},
    "losses": {
        "paddle.nn": "CTCLoss HSigmoidLoss KLDivLoss MarginRankingLoss",
        "paddle.nn.functional": "ctc_loss dice_loss hsigmoid_loss kl_div log_loss margin_ranking_loss npair_loss"},
    "metrics": {
        "paddle.fluid": "evaluator",
        "paddle.static": "auc"},
    "optimizers": {
        "paddle.optimizer": "Adadelta AdamW Adamax Lamb"},
    "initializers": {
        "paddle.nn": "initializer"},
    "autograd (higher-order gradients)": {"paddle": "grad"},
    "dygraph to static (jit)": {
        "paddle.fluid.dygraph": "ProgramTranslator declarative dygraph_to_static_func",
        "paddle.static": "InputSpec",
        "paddle": "jit"},
    "distributed training": {
        "paddle.fluid": "DistributeTranspiler DistributeTranspilerConfig HashName RoundRobin incubate",
        "paddle": "DataParallel",
        "paddle.distributed": "fleet init_parallel_env spawn launch get_rank get_world_size ParallelEnv all_reduce "
                              "broadcast"},
    "mixed precision, quantization and compression (contrib)": {
        "paddle.fluid.contrib": "mixed_precision slim quantize decoder extend_optimizer",
        "paddle.static": "amp",
        "paddle": "amp"},
    "datasets and models (paddle.vision, paddle.text)": {
        "paddle.dataset": "voc2012 sentiment mq2007",
        "paddle": "vision text",
        "paddle.nn": "vision"},
    "high-level training API (paddle.Model)": {"paddle": "Model callbacks summary flops hapi"},
    "model export and serialization (paddle 2.x)": {
        "paddle.static": """serialize_program deserialize_program serialize_persistables deserialize_persistables
            save_to_file load_from_file""",
        "paddle": "onnx"},
    "static-graph layers (paddle.static.nn)": {"paddle.static": "nn"},
    "custom ops": {"paddle.fluid": "load_op_library"},
    "devices and runtime settings": {
        "paddle.fluid": "install_check ComplexVariable",
        "paddle.static": "xpu_places",
        "paddle": """XPUPlace is_compiled_with_xpu get_device get_cudnn_version set_printoptions"""},
}


def not_supported_yet():
    """{legacy module: {name: family}} flattened from ``NOT_SUPPORTED_YET``."""
    flat = {}
    for family, modules in NOT_SUPPORTED_YET.items():
        for module, names in modules.items():
            for name in names.split():
                flat.setdefault(module, {})[name] = family
    return flat


_FAMILY_OF = not_supported_yet()


def hint(qualified_name):
    """The message for a missing ``paddle...`` API (an attribute or a module), from the two tables."""
    if qualified_name in REPLACEMENTS:
        return f"{qualified_name} is not implemented by minifluid; what to write instead: {REPLACEMENTS[qualified_name]}"
    parts = qualified_name.split(".")
    for cut in range(len(parts) - 1, 0, -1):  # paddle.vision.datasets belongs to paddle.vision's family
        family = _FAMILY_OF.get(".".join(parts[:cut]), {}).get(parts[cut])
        if family:
            return f"{qualified_name} is not supported yet by minifluid (API family: {family})"
    return f"{qualified_name} is not implemented by minifluid"
