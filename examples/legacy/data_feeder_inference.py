"""A fluid 1.x script: DataFeeder + exe.run(feed=...), then save/load an inference model.

Run with: python -m minifluid.compat examples/legacy/data_feeder_inference.py
"""
import os
import tempfile

import numpy as np

import paddle
import paddle.dataset.digits as digits
import paddle.fluid as fluid

main_program, startup_program = fluid.Program(), fluid.Program()
with fluid.program_guard(main_program, startup_program):
    img = fluid.layers.data(name="img", shape=[1, 8, 8], dtype="float32")
    label = fluid.layers.data(name="label", shape=[1], dtype="int64")
    conv = fluid.layers.conv2d(input=img, num_filters=8, filter_size=3, padding=1, act="relu")
    pool = fluid.layers.pool2d(input=conv, pool_size=2, pool_stride=2, pool_type="max")
    predict = fluid.layers.fc(input=pool, size=10, act="softmax")
    avg_cost = fluid.layers.mean(fluid.layers.cross_entropy(input=predict, label=label))
    test_program = main_program.clone(for_test=True)
    fluid.optimizer.Adam(learning_rate=0.01).minimize(avg_cost)

place = fluid.CPUPlace()
exe = fluid.Executor(place)
exe.run(startup_program)
feeder = fluid.DataFeeder(feed_list=[img, label], place=place)
train_reader = paddle.batch(paddle.reader.shuffle(digits.train(), buf_size=500), batch_size=64)

for epoch in range(2):
    costs = [exe.run(main_program, feed=feeder.feed(data), fetch_list=[avg_cost])[0] for data in train_reader()]
    print("epoch %d batches %d loss %.4f" % (epoch, len(costs), float(np.mean(costs))))

model_dir = tempfile.mkdtemp()
fluid.io.save_inference_model(model_dir, ["img"], [predict], exe, main_program)
print("saved files:", sorted(os.listdir(model_dir)))

with fluid.scope_guard(fluid.core.Scope()):
    infer_prog, feed_names, fetch_targets = fluid.io.load_inference_model(model_dir, exe)
    test_data = next(paddle.batch(digits.test(), batch_size=360)())
    images = np.array([x[0] for x in test_data], dtype="float32").reshape(-1, 1, 8, 8)
    labels = np.array([x[1] for x in test_data])
    (probs,) = exe.run(infer_prog, feed={feed_names[0]: images}, fetch_list=fetch_targets)
    print("inference accuracy %.4f" % float((probs.argmax(axis=1) == labels).mean()))
