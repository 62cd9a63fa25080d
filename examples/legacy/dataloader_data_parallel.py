"""A fluid 1.8 script: DataLoader.from_generator (iterable) on 2 CPU places with CompiledProgram.

Run with: CPU_NUM=2 python -m minifluid.compat examples/legacy/dataloader_data_parallel.py
"""
import numpy as np
import six

import paddle
import paddle.dataset.digits as digits
import paddle.fluid as fluid

BATCH_SIZE = 50
places = fluid.cpu_places(2)

image = fluid.data(name="image", shape=[None, 64], dtype="float32")
label = fluid.data(name="label", shape=[None, 1], dtype="int64")
loader = fluid.io.DataLoader.from_generator(feed_list=[image, label], capacity=8, iterable=True)
hidden = fluid.layers.fc(image, size=64, act="relu")
logits = fluid.layers.fc(hidden, size=10)
loss = fluid.layers.reduce_mean(fluid.layers.softmax_with_cross_entropy(logits, label))
fluid.optimizer.Momentum(learning_rate=0.1, momentum=0.9).minimize(loss)

exe = fluid.Executor(fluid.CPUPlace())
exe.run(fluid.default_startup_program())
compiled = fluid.CompiledProgram(fluid.default_main_program()).with_data_parallel(
    loss_name=loss.name, places=places)

loader.set_sample_generator(digits.train(), batch_size=BATCH_SIZE, drop_last=True, places=places)
for epoch in six.moves.range(3):
    steps, losses = 0, []
    for data in loader():
        (loss_v,) = exe.run(compiled, feed=data, fetch_list=[loss])
        losses.append(float(np.mean(loss_v)))
        steps += 1
    print("epoch %d steps %d loss %.4f" % (epoch, steps, np.mean(losses)))
