"""A tiny CTC model trains: fc over a fixed batch of random LoD sequences, warpctc + SGD; its loss falls and the
greedy decoder's edit distance to the labels falls with it."""
import numpy as np

import minifluid as fluid
from minifluid.lod_tensor import LoDTensor


def test_fc_with_warpctc_and_sgd_learns_a_batch():
    rng = np.random.default_rng(7)
    t_lens, l_lens = [9, 6, 8, 5], [3, 2, 4, 2]
    feats = LoDTensor(rng.standard_normal((sum(t_lens), 8)).astype("float32"), [t_lens])
    labels = LoDTensor(rng.integers(1, 5, (sum(l_lens), 1)).astype("int32"), [l_lens])
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 1
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 8], "float32", lod_level=1)
        y = fluid.data("y", [None, 1], "int32", lod_level=1)
        logits = fluid.layers.fc(fluid.layers.fc(x, 32, act="tanh"), 5)
        loss = fluid.layers.mean(fluid.layers.warpctc(logits, y, blank=0))
        decoded = fluid.layers.ctc_greedy_decoder(fluid.layers.softmax(logits), blank=0)
        distance, _ = fluid.layers.edit_distance(decoded, fluid.layers.cast(y, "int64"), normalized=False)
        fluid.optimizer.SGD(learning_rate=0.2).minimize(loss)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    history = [exe.run(main, feed={"x": feats, "y": labels}, fetch_list=[loss, distance]) for _ in range(60)]
    losses = [float(h[0]) for h in history]
    assert np.all(np.isfinite(losses))
    assert losses[-1] < 0.3 * losses[0], losses[::10]
    assert history[-1][1].sum() < history[0][1].sum(), (history[0][1].ravel(), history[-1][1].ravel())
