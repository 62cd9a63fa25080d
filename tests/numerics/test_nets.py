"""fluid.nets: the book's recognize_digits conv net and a VGG block, trained on the embedded digits."""
import numpy as np

import minifluid as fluid
from minifluid.dataset import digits


def test_book_conv_net_built_with_simple_img_conv_pool_learns_digits():
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 7
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        img = fluid.data("img", [None, 1, 8, 8])
        label = fluid.data("label", [None, 1], dtype="int64")
        h = fluid.nets.simple_img_conv_pool(img, num_filters=8, filter_size=3, pool_size=2, pool_stride=2,
                                            conv_padding=1, act="relu")
        assert tuple(h.shape) == (-1, 8, 4, 4)
        h = fluid.nets.img_conv_group(h, conv_num_filter=[8, 8], pool_size=2, pool_stride=2, conv_act="relu",
                                      conv_with_batchnorm=True, conv_batchnorm_drop_rate=[0.1, 0.0])
        assert tuple(h.shape) == (-1, 8, 2, 2)
        logits = fluid.layers.fc(h, 10)
        loss = fluid.layers.mean(fluid.layers.softmax_with_cross_entropy(logits, label))
        fluid.optimizer.Adam(0.01).minimize(loss)
    samples = list(digits.train()())[:256]
    feed = {"img": np.stack([s[0] for s in samples]).reshape(-1, 1, 8, 8).astype("float32"),
            "label": np.array([[s[1]] for s in samples], "int64")}
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(startup, scope=scope)
    losses = [float(exe.run(main, feed=feed, fetch_list=[loss], scope=scope)[0]) for _ in range(30)]
    assert losses[-1] < 0.5 * losses[0], losses
