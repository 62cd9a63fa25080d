"""Seed 002: the paddle 2.x ``paddle.io.Dataset`` notebook, in full.

Changes from the notebook: the packaged 8x8 digits (``paddle.dataset.digits``) replace
``mnist.json.gz`` (so images are [64] and ``in_features=64``; 'valid' and 'eval' read the digits
test split), the loss is printed every 5 batches instead of every 200 (an epoch here is 15
batches of 100), and the parameters are saved to a temporary folder, not as 'mnist' in the current
one. Everything else is the notebook's code.

Run with: python -m minifluid.compat examples/legacy/paddle2_dataset_seed002.py
"""
import os
import tempfile

import paddle
import json  # noqa: F401  (the notebook's imports)
import gzip  # noqa: F401
import numpy as np
from paddle.nn import Linear  # noqa: F401
import paddle.nn.functional as F
from paddle.dataset import digits


# 创建一个类MnistDataset，继承paddle.io.Dataset 这个类
# MnistDataset的作用和上面load_data()函数的作用相同，均是构建一个迭代器
class MnistDataset(paddle.io.Dataset):
    def __init__(self, mode):
        # datafile = 'mnist.json.gz'; data = json.load(gzip.open(datafile)) -> the packaged digits
        # 读取到的数据区分训练集，验证集，测试集
        if mode == 'train':
            # 获得训练数据集
            imgs, labels = digits.load('train')
        elif mode == 'valid':
            # 获得验证数据集
            imgs, labels = digits.load('test')
        elif mode == 'eval':
            # 获得测试数据集
            imgs, labels = digits.load('test')
        else:
            raise Exception("mode can only be one of ['train', 'valid', 'eval']")

        # 校验数据
        imgs_length = len(imgs)  # noqa: F841
        assert len(imgs) == len(labels), \
            "length of train_imgs({}) should be the same as train_labels({})".format(len(imgs), len(labels))

        self.imgs = imgs
        self.labels = labels

    def __getitem__(self, idx):
        img = np.array(self.imgs[idx]).astype('float32')
        label = np.array(self.labels[idx]).astype('float32')

        return img, label

    def __len__(self):
        return len(self.imgs)


# 声明数据加载函数，使用MnistDataset数据集
train_dataset = MnistDataset(mode='train')
# 使用paddle.io.DataLoader 定义DataLoader对象用于加载Python生成器产生的数据，
# DataLoader 返回的是一个批次数据迭代器，并且是异步的；
data_loader = paddle.io.DataLoader(train_dataset, batch_size=100, shuffle=True)
# 迭代的读取数据并打印数据的形状
for i, data in enumerate(data_loader()):
    images, labels = data
    print(i, images.shape, labels.shape)
    if i >= 2:
        break


# 数据处理部分之后的代码，数据读取的部分调用Load_data函数
# 定义网络结构，同上一节所使用的网络结构
class MNIST(paddle.nn.Layer):
    def __init__(self):
        super(MNIST, self).__init__()
        # 定义一层全连接层，输出维度是1
        self.fc = paddle.nn.Linear(in_features=64, out_features=1)

    def forward(self, inputs):
        outputs = self.fc(inputs)
        return outputs


# 异步数据读取并训练的完整案例代码如下所示
def train(model):
    model = MNIST()
    model.train()
    opt = paddle.optimizer.SGD(learning_rate=0.001, parameters=model.parameters())
    EPOCH_NUM = 10
    for epoch_id in range(EPOCH_NUM):
        for batch_id, data in enumerate(data_loader()):
            images, labels = data
            images = paddle.to_tensor(images)
            labels = paddle.to_tensor(labels).astype('float32')

            # 前向计算的过程
            predicts = model(images)

            # 计算损失，取一个批次样本损失的平均值
            loss = F.square_error_cost(predicts, labels)
            avg_loss = paddle.mean(loss)

            # 每训练了5批次的数据，打印下当前Loss的情况 (the notebook: every 200)
            if batch_id % 5 == 0:
                print("epoch: {}, batch: {}, loss is: {}".format(epoch_id, batch_id, avg_loss.numpy()))

            # 后向传播，更新参数的过程
            avg_loss.backward()
            opt.step()
            opt.clear_grad()

    # 保存模型参数 (the notebook: paddle.save(model.state_dict(), 'mnist'), into the current folder)
    path = os.path.join(tempfile.mkdtemp(prefix="minifluid-seed002-"), 'mnist')
    paddle.save(model.state_dict(), path)
    print("saved the parameters to", path)


# 创建模型
model = MNIST()
# 启动训练过程
train(model)
