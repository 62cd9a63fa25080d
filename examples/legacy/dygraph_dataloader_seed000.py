"""Seed 000: the fluid 1.8 dygraph DataLoader guide ("数据准备、载入及加速"), its full example.

Changes from the guide, and why:
* Data: the packaged 8x8 digits instead of random 784-float images. The sample-list generator
  yields lists of (float32[64], int64[1]); the sample and batch generators keep the guide's random
  data, shape [64].
* ``Linear(64, 10, act='softmax')``: the guide feeds the raw Linear output to
  ``fluid.layers.cross_entropy``, which expects probabilities (on real data its loss does not fall).
* ``mnist.clear_gradients()`` in the guide is the model's: ``my_layer.clear_gradients()``.
* The training loop runs a few epochs, once with the default thread and once with
  ``use_multiprocess=True``, and prints the mean loss of each epoch.

Run with: python -m minifluid.compat examples/legacy/dygraph_dataloader_seed000.py
"""
import numpy as np
import paddle  # noqa: F401  (the guide's imports)
import paddle.dataset.digits as digits
import paddle.fluid as fluid

BATCH_NUM = 10
BATCH_SIZE = 16
EPOCHS = 3


# 伪数据生成函数，服务于下述三种不同的生成器
def get_random_images_and_labels(image_shape, label_shape):
    image = np.random.random(size=image_shape).astype('float32')
    label = np.random.random(size=label_shape).astype('int64')
    return image, label


# 每次生成一个Sample，使用set_sample_generator配置数据源
def sample_generator_creator():
    def __reader__():
        for _ in range(BATCH_NUM * BATCH_SIZE):
            image, label = get_random_images_and_labels([64], [1])
            yield image, label

    return __reader__


# 每次生成一个Sample List，使用set_sample_list_generator配置数据源 (the digits, in place of random data)
def sample_list_generator_creator():
    def __reader__():
        sample_list = []
        for image, label in digits.train()():
            sample_list.append([image, np.array([label], dtype='int64')])
            if len(sample_list) == BATCH_SIZE:
                yield sample_list
                sample_list = []

    return __reader__


# 每次生成一个Batch，使用set_batch_generator配置数据源
def batch_generator_creator():
    def __reader__():
        for _ in range(BATCH_NUM):
            batch_image, batch_label = get_random_images_and_labels([BATCH_SIZE, 64], [BATCH_SIZE, 1])
            yield batch_image, batch_label

    return __reader__


place = fluid.CPUPlace()  # 或者 fluid.CUDAPlace(0)
with fluid.dygraph.guard(place):
    # 使用sample数据生成器作为DataLoader的数据源
    data_loader1 = fluid.io.DataLoader.from_generator(capacity=10)
    data_loader1.set_sample_generator(sample_generator_creator(), batch_size=32, places=place)

    # 使用sample list数据生成器作为DataLoader的数据源
    data_loader2 = fluid.io.DataLoader.from_generator(capacity=10)
    data_loader2.set_sample_list_generator(sample_list_generator_creator(), places=place)

    # 使用batch数据生成器作为DataLoader的数据源
    data_loader3 = fluid.io.DataLoader.from_generator(capacity=10)
    data_loader3.set_batch_generator(batch_generator_creator(), places=place)

    for name, loader in (("sample", data_loader1), ("sample list", data_loader2), ("batch", data_loader3)):
        image, label = next(iter(loader()))
        print("{} generator: image {} {}, label {} {}".format(name, image.shape, image.dtype, label.shape,
                                                              label.dtype))


class MyLayer(fluid.dygraph.Layer):
    def __init__(self):
        super(MyLayer, self).__init__()
        self.linear = fluid.dygraph.nn.Linear(64, 10, act='softmax')

    def forward(self, inputs, label=None):
        x = self.linear(inputs)
        if label is not None:
            loss = fluid.layers.cross_entropy(x, label)
            avg_loss = fluid.layers.mean(loss)
            return x, avg_loss
        else:
            return x


for use_multiprocess in (False, True):
    with fluid.dygraph.guard(place):

        # 创建执行的网络对象
        my_layer = MyLayer()

        # 添加优化器
        adam = fluid.optimizer.AdamOptimizer(
            learning_rate=0.001, parameter_list=my_layer.parameters())

        # 配置DataLoader
        train_loader = fluid.io.DataLoader.from_generator(capacity=10, use_multiprocess=use_multiprocess)
        train_loader.set_sample_list_generator(sample_list_generator_creator(), places=place)

        # 执行训练/预测
        for epoch in range(EPOCHS):
            losses = []
            for data in train_loader():
                # 拆解载入数据
                image, label = data

                # 执行前向
                x, avg_loss = my_layer(image, label)

                # 执行反向
                avg_loss.backward()

                # 梯度更新
                adam.minimize(avg_loss)
                my_layer.clear_gradients()
                losses.append(float(avg_loss.numpy()[0]))
            print("use_multiprocess={} epoch {}: mean loss {:.4f} over {} batches".format(
                use_multiprocess, epoch, np.mean(losses), len(losses)))
