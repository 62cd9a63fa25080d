"""A fluid 1.x script: layers.data + PyReader (non-iterable) + start/EOFException/reset.

Run with: python -m minifluid.compat examples/legacy/pyreader_non_iterable.py
"""
import numpy as np
import six

import paddle
import paddle.dataset.digits as digits
import paddle.fluid as fluid

BATCH_SIZE = 32
EPOCHS = 3

image = fluid.layers.data(name="image", shape=[64], dtype="float32")
label = fluid.layers.data(name="label", shape=[1], dtype="int64")
py_reader = fluid.io.PyReader(feed_list=[image, label], capacity=16, iterable=False)

hidden = fluid.layers.fc(input=image, size=64, act="relu")
prediction = fluid.layers.fc(input=hidden, size=10, act="softmax")
loss = fluid.layers.mean(fluid.layers.cross_entropy(input=prediction, label=label))
acc = fluid.layers.accuracy(input=prediction, label=label)
fluid.optimizer.SGD(learning_rate=0.2).minimize(loss)

py_reader.decorate_sample_list_generator(paddle.batch(digits.train(), batch_size=BATCH_SIZE))

exe = fluid.Executor(fluid.CPUPlace())
exe.run(fluid.default_startup_program())

for epoch in six.moves.range(EPOCHS):
    py_reader.start()
    losses, accs = [], []
    try:
        while True:
            loss_v, acc_v = exe.run(fluid.default_main_program(), fetch_list=[loss, acc])
            losses.append(float(np.array(loss_v).reshape(-1)[0]))
            accs.append(float(np.array(acc_v).reshape(-1)[0]))
    except fluid.core.EOFException:
        py_reader.reset()
    print("epoch %d batches %d loss %.4f acc %.4f" % (epoch, len(losses), np.mean(losses), np.mean(accs)))
print("done")
