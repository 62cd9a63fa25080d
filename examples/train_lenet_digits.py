"""A LeNet-style conv net on the digits (reshaped to [N, 1, 8, 8]), next to the MLP of train_digits.py.

Same programs, optimizer, batches and seed as train_digits.py; only the model differs:
[conv2d 3x3 + batch_norm + relu] x (16, 32) -> max pool 2 -> [conv2d + batch_norm + relu] x 64 ->
avg pool 2 -> fc(10). The test program is a ``clone(for_test=True)``, so batch_norm uses its moving
statistics there.
Prints both first-epoch test accuracies; exits with status 1 unless the conv net's first epoch beats
the MLP's and its final accuracy reaches 0.95.

Run:  python examples/train_lenet_digits.py [--epochs 3] [--batch-size 64] [--seed 1]
"""
import os
import sys
import time

import minifluid as fluid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train_digits  # noqa: E402  (the sibling example: shared programs and training loop)


def conv_bn(x, num_filters):
    """3x3 convolution (same padding, no bias: batch_norm adds one), batch norm, relu."""
    x = fluid.layers.conv2d(x, num_filters=num_filters, filter_size=3, padding=1, bias_attr=False)
    return fluid.layers.batch_norm(x, act="relu")


def lenet(image):
    x = fluid.layers.reshape(image, [-1, 1, 8, 8])
    x = conv_bn(x, 16)
    x = conv_bn(x, 32)
    x = fluid.layers.pool2d(x, pool_size=2, pool_type="max", pool_stride=2)
    x = conv_bn(x, 64)
    x = fluid.layers.pool2d(x, pool_size=2, pool_type="avg", pool_stride=2)
    return fluid.layers.fc(x, size=10)


def main(argv=None):
    args = train_digits.parse_args(argv, default_epochs=3)
    start = time.perf_counter()
    mlp_acc, mlp_loss = train_digits.train(train_digits.mlp, 1, args.batch_size, args.seed, args.mode, tag="mlp")
    lenet_acc, lenet_loss = train_digits.train(lenet, args.epochs, args.batch_size, args.seed, args.mode,
                                               tag="lenet")
    if args.plot:
        train_digits.save_plot(args.plot, {"mlp": (mlp_acc, mlp_loss), "lenet": (lenet_acc, lenet_loss)})
    print(f"first-epoch test accuracy: lenet {lenet_acc[0]:.4f} vs mlp {mlp_acc[0]:.4f}")
    print(f"[lenet] final test accuracy {lenet_acc[-1]:.4f} (both models in {time.perf_counter() - start:.1f} s)")
    if lenet_acc[0] <= mlp_acc[0] or lenet_acc[-1] < train_digits.TARGET_ACCURACY:
        print(f"[lenet] expected a better first epoch than the MLP's and a final accuracy of at least "
              f"{train_digits.TARGET_ACCURACY} (exit status 1)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
