"""check_op cases of spp, unpool and conv_shift against loop references (each output element by hand)."""
import numpy as np

from .vision_cases import case, rng


def distinct(*shape):
    """No ties: a max has one winner, so central differences see one route."""
    return rng.permutation(np.arange(int(np.prod(shape)), dtype=np.float64)).reshape(shape) * 0.1 - 3.0


def spp_ref(x, pyramid_height, pooling_type):
    n, c, h, w = x.shape
    levels = []
    for p in range(pyramid_height):
        bins = 2 ** p
        kh, kw = -(-h // bins), -(-w // bins)
        ph, pw = (kh * bins - h + 1) // 2, (kw * bins - w + 1) // 2
        out = np.zeros((n, c, bins, bins))
        for i in range(bins):
            for j in range(bins):
                r0, r1 = max(i * kh - ph, 0), min(i * kh - ph + kh, h)
                c0, c1 = max(j * kw - pw, 0), min(j * kw - pw + kw, w)
                window = x[:, :, r0:r1, c0:c1]
                out[:, :, i, j] = window.max(axis=(2, 3)) if pooling_type == "max" else window.mean(axis=(2, 3))
        levels.append(out.reshape(n, -1))
    return np.concatenate(levels, axis=1)


for _kind in ("max", "avg"):
    case("spp", _kind, inputs={"X": distinct(2, 3, 7, 6)}, attrs={"pyramid_height": 3, "pooling_type": _kind},
         reference=lambda X, _kind=_kind: spp_ref(X, 3, _kind))


def unpool_ref(x, indices, out_hw):
    out = np.zeros(x.shape[:2] + out_hw)
    for b, ch, i, j in np.ndindex(*x.shape):
        k = indices[b, ch, i, j]
        out[b, ch, k // out_hw[1], k % out_hw[1]] = x[b, ch, i, j]
    return out


_positions = np.stack([rng.permutation(5 * 7)[:6] for _ in range(4)]).reshape(2, 2, 2, 3).astype(np.int32)
case("unpool", inputs={"X": rng.standard_normal((2, 2, 2, 3)), "Indices": _positions},
     attrs={"ksize": [3, 3], "strides": [2, 3], "paddings": [0, 1]},
     reference=lambda X, Indices: unpool_ref(X, Indices, (5, 7)))


def conv_shift_ref(x, y):
    m, n = x.shape[1], y.shape[1]
    out = np.zeros_like(x)
    for i in range(m):
        for j in range(n):
            out[:, i] += x[:, (i + j - (n - 1) // 2) % m] * y[:, j]
    return out


case("conv_shift", inputs={"X": rng.standard_normal((3, 8)), "Y": rng.standard_normal((3, 5))},
     reference=lambda X, Y: conv_shift_ref(X, Y))
