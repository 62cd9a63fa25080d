"""A fluid 1.x DCGAN in the shape of the fluid book's 09.gan program, on the embedded 8x8 digits.

Two programs share the discriminator's parameters by name: ``d_program`` trains D on a batch of real
images (label 1) and generated ones (label 0); ``dg_program`` runs G and then D and trains only G's
parameters (``parameter_list``) towards D saying 1. G is conv2d_transpose upsampling with batch_norm, D
strided conv2d with leaky_relu; both losses are sigmoid_cross_entropy_with_logits, G's target a
fill_constant_batch_size_like of ones.

Run with: python -m minifluid.compat examples/legacy/gan_digits.py [--epochs 10] [--seed 1]
Each epoch prints D's and G's mean losses, D's mean output on real and on generated images, and how far
the generated images' mean is from the real images' mean (it shrinks as G learns).
"""
import argparse

import numpy as np

import paddle
import paddle.dataset.digits as digits
import paddle.fluid as fluid

NOISE = 32
G_STEPS = 1  # generator steps per discriminator step


def discriminator(img):
    """Logit that ``img`` ([N, 1, 8, 8], pixels in [-1, 1]) is real. Parameters are named, so the copy in
    dg_program is the same D."""
    h = fluid.layers.conv2d(img, 32, 3, stride=2, padding=1, param_attr="D_c1_w", bias_attr="D_c1_b")
    h = fluid.layers.leaky_relu(h, alpha=0.2)  # [N, 32, 4, 4]
    h = fluid.layers.conv2d(h, 64, 3, stride=2, padding=1, param_attr="D_c2_w", bias_attr="D_c2_b")
    h = fluid.layers.leaky_relu(h, alpha=0.2)  # [N, 64, 2, 2]
    return fluid.layers.fc(h, 1, param_attr="D_fc_w", bias_attr="D_fc_b")


def generator(z):
    """[N, NOISE] noise -> [N, 1, 8, 8] images in [-1, 1]."""
    h = fluid.layers.fc(z, 64 * 2 * 2, param_attr="G_fc_w", bias_attr="G_fc_b")
    h = fluid.layers.batch_norm(h, act="relu", param_attr="G_bn0_w", bias_attr="G_bn0_b")
    h = fluid.layers.reshape(h, [-1, 64, 2, 2])
    h = fluid.layers.conv2d_transpose(h, 32, filter_size=4, stride=2, padding=1, param_attr="G_dc1_w",
                                      bias_attr=False)  # [N, 32, 4, 4]
    h = fluid.layers.batch_norm(h, act="relu", param_attr="G_bn1_w", bias_attr="G_bn1_b")
    return fluid.layers.conv2d_transpose(h, 1, filter_size=4, stride=2, padding=1, param_attr="G_dc2_w",
                                         bias_attr="G_dc2_b", act="tanh")  # [N, 1, 8, 8]


def build(lr=2e-3):
    d_program, dg_program, startup = fluid.Program(), fluid.Program(), fluid.Program()
    with fluid.program_guard(d_program, startup):
        img = fluid.layers.data(name="img", shape=[1, 8, 8], dtype="float32")
        label = fluid.layers.data(name="label", shape=[1], dtype="float32")
        d_logit = discriminator(img)
        d_loss = fluid.layers.mean(fluid.layers.sigmoid_cross_entropy_with_logits(x=d_logit, label=label))
        d_prob = fluid.layers.sigmoid(d_logit)
    with fluid.program_guard(dg_program, startup):
        noise = fluid.layers.data(name="noise", shape=[NOISE], dtype="float32")
        fake = generator(noise)
        g_program = dg_program.clone()  # G alone, to make D's fake images (batch_norm on batch statistics)
        dg_logit = discriminator(fake)
        ones = fluid.layers.fill_constant_batch_size_like(input=noise, shape=[-1, 1], dtype="float32", value=1.0)
        dg_loss = fluid.layers.mean(fluid.layers.sigmoid_cross_entropy_with_logits(x=dg_logit, label=ones))
    d_params = [p.name for p in d_program.global_block().all_parameters()]
    g_params = [p.name for p in dg_program.global_block().all_parameters() if p.name.startswith("G_")]
    with fluid.program_guard(d_program, startup):
        fluid.optimizer.Adam(learning_rate=lr, beta1=0.5).minimize(d_loss, parameter_list=d_params)
    with fluid.program_guard(dg_program, startup):
        fluid.optimizer.Adam(learning_rate=lr, beta1=0.5).minimize(dg_loss, parameter_list=g_params)
    return dict(d_program=d_program, dg_program=dg_program, g_program=g_program, startup=startup,
                d_loss=d_loss, d_prob=d_prob, dg_loss=dg_loss, fake=fake)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    np.random.seed(args.seed)
    rng = np.random.RandomState(args.seed)
    net = build()
    net["startup"].random_seed = args.seed
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(net["startup"])
    reader = paddle.batch(paddle.reader.shuffle(digits.train(), buf_size=1500), batch_size=args.batch_size,
                          drop_last=True)
    real_all = digits.load("train")[0] * 2 - 1
    probe = rng.uniform(-1, 1, [256, NOISE]).astype("float32")

    def mean_gap():
        sample, = exe.run(net["g_program"], feed={"noise": probe}, fetch_list=[net["fake"]])
        return float(np.abs(sample.reshape(len(probe), -1).mean(0) - real_all.mean(0)).mean())

    print("before training mean_gap %.4f" % mean_gap(), flush=True)
    for epoch in range(args.epochs):
        d_losses, g_losses, p_real, p_fake = [], [], [], []
        for batch in reader():
            real = np.array([x for x, _ in batch], "float32").reshape(-1, 1, 8, 8) * 2 - 1
            n = len(real)
            noise = rng.uniform(-1, 1, [n, NOISE]).astype("float32")
            fake, = exe.run(net["g_program"], feed={"noise": noise}, fetch_list=[net["fake"]])
            images = np.concatenate([real, fake])
            labels = np.concatenate([np.ones([n, 1]), np.zeros([n, 1])]).astype("float32")
            d_loss, prob = exe.run(net["d_program"], feed={"img": images, "label": labels},
                                   fetch_list=[net["d_loss"], net["d_prob"]])
            d_losses.append(float(d_loss))
            p_real.append(float(prob[:n].mean()))
            p_fake.append(float(prob[n:].mean()))
            for _ in range(G_STEPS):
                noise = rng.uniform(-1, 1, [n, NOISE]).astype("float32")
                g_loss, = exe.run(net["dg_program"], feed={"noise": noise}, fetch_list=[net["dg_loss"]])
                g_losses.append(float(g_loss))
        gap = mean_gap()
        print("epoch %d d_loss %.4f g_loss %.4f d_real %.3f d_fake %.3f mean_gap %.4f"
              % (epoch, np.mean(d_losses), np.mean(g_losses), np.mean(p_real), np.mean(p_fake), gap), flush=True)


if __name__ == "__main__":
    main()
