"""Image loading and augmentation (``paddle.dataset.image``) on Pillow, the optional extra ``image``.

Images are numpy arrays laid out as fluid's OpenCV-based module returned them: colour images ``uint8
[H, W, 3]`` in **BGR** order, grey ones ``uint8 [H, W]``. ``simple_transform`` resizes the short side,
crops (random crop and a coin-flip mirror when training, centre crop otherwise), transposes colour images
to CHW, converts to float32 and subtracts ``mean``; ``random_crop`` and the flip draw from numpy's global
generator, as fluid's did. Deliberate differences: resizing is Pillow's bicubic filter, which smooths when
shrinking where OpenCV's ``INTER_CUBIC`` does not (pixel values differ slightly from fluid's); a file or
bytes that cannot be decoded raise ``ValueError`` instead of returning ``None``.

Pillow is imported at first use: without it, each function raises ``ImportError`` saying
``pip install "minifluid[image]"``.
"""
import io
import os
import pickle

import numpy as np

__all__ = ["load_image_bytes", "load_image", "resize_short", "to_chw", "center_crop", "random_crop",
           "left_right_flip", "simple_transform", "load_and_transform", "batch_images_from_tar"]


def _pil():
    try:
        from PIL import Image
    except ImportError as e:
        raise ImportError('paddle.dataset.image (and flowers) decode and resize images with Pillow, which is '
                          'not installed: pip install "minifluid[image]" (or pip install Pillow)') from e
    return Image


def _to_array(img, is_color, short):
    from PIL import ImageOps
    img = ImageOps.exif_transpose(img)  # OpenCV's decoders apply the EXIF orientation too
    img = img.convert("RGB" if is_color else "L")
    if short is not None:  # resize_short on the decoded image: the same pixels, no array round trip
        w, h = _short_side_size(img.height, img.width, short)
        img = img.resize((w, h), _pil().BICUBIC)
    if is_color:  # BGR, as OpenCV decodes (a view when resized: the caller crops and copies it)
        return np.asarray(img)[:, :, ::-1] if short is not None else np.ascontiguousarray(np.asarray(img)[:, :, ::-1])
    return np.asarray(img) if short is not None else np.asarray(img).copy()


def _decode(source, what, is_color, short=None):
    Image = _pil()
    try:
        with Image.open(source) as img:
            return _to_array(img, is_color, short)
    except (OSError, SyntaxError, ValueError) as e:  # PIL.UnidentifiedImageError is an OSError
        raise ValueError("cannot decode %s as an image: %s" % (what, e)) from e


def transform_bytes(data, resize_size, crop_size, is_train, is_color=True, mean=None):
    """``simple_transform(load_image_bytes(data, is_color), ...)``, the same numbers, with the resize done
    on the decoded image (flowers' default mappers)."""
    im = _decode(io.BytesIO(data), "%d bytes" % len(data), is_color, resize_size)
    return _crop_and_normalise(im, crop_size, is_train, is_color, mean)


def batch_images_from_tar(data_file, dataset_name, img2label, num_per_batch=1024):
    """Copy the images of tar ``data_file`` named in ``img2label`` (``{member name: label}``) into pickled
    batch files ``<data_file>_batch/<dataset_name>/batch_<i>`` (``{'label': [...], 'data': [jpeg bytes]}``,
    ``num_per_batch`` images each, archive order), and return the list file ``<data_file>_batch/
    <dataset_name>.txt`` naming them. When the batch folder exists, nothing is read or written again."""
    from . import archive
    batch_dir = data_file + "_batch"
    out_path, meta_file = os.path.join(batch_dir, dataset_name), os.path.join(batch_dir, dataset_name + ".txt")
    if os.path.exists(out_path):
        return meta_file
    os.makedirs(out_path)
    batches, data, labels = [], [], []

    def dump():
        batches.append(os.path.abspath(os.path.join(out_path, "batch_%d" % len(batches))))
        with open(batches[-1], "wb") as f:
            pickle.dump({"label": labels[:], "data": data[:]}, f, protocol=2)
        del data[:], labels[:]

    for member in archive.tar_members(data_file):
        name = member.name if member.name in img2label else "./" + member.name
        if name in img2label:
            data.append(member.read())
            labels.append(img2label[name])
            if len(data) == num_per_batch:
                dump()
    if data:
        dump()
    with open(meta_file, "a") as meta:
        meta.writelines(path + "\n" for path in batches)
    return meta_file


def load_image_bytes(bytes, is_color=True):
    """Decode an encoded image (JPEG, PNG, ...) held in ``bytes``: BGR ``uint8 [H, W, 3]``, or
    ``uint8 [H, W]`` when not ``is_color``."""
    return _decode(io.BytesIO(bytes), "%d bytes" % len(bytes), is_color)


def load_image(file, is_color=True):
    """Load the image file ``file``: BGR ``uint8 [H, W, 3]``, or ``uint8 [H, W]`` when not ``is_color``."""
    if not os.path.isfile(file):
        raise FileNotFoundError("load_image: no image file %s" % file)
    return _decode(file, file, is_color)


def _resize(im, w, h):
    """Bicubic resize of a uint8 HW / HWC image, or of any other dtype one channel at a time."""
    Image = _pil()
    if im.dtype == np.uint8 and (im.ndim == 2 or im.shape[2] in (3, 4)):
        return np.asarray(Image.fromarray(im).resize((w, h), Image.BICUBIC))
    planes = [np.asarray(Image.fromarray(np.ascontiguousarray(p, np.float32), "F").resize((w, h), Image.BICUBIC))
              for p in (im[None] if im.ndim == 2 else im.transpose(2, 0, 1))]
    out = np.stack(planes, axis=-1)[..., 0] if im.ndim == 2 else np.stack(planes, axis=-1)
    if np.issubdtype(im.dtype, np.integer):
        out = np.clip(np.rint(out), np.iinfo(im.dtype).min, np.iinfo(im.dtype).max)
    return out.astype(im.dtype)


def _short_side_size(h, w, size):
    """``(width, height)`` with the shorter side ``size``, the aspect ratio kept (rounded down)."""
    return (size, size * h // w) if h > w else (size * w // h, size)


def resize_short(im, size):
    """Resize ``im`` (HWC or HW) so that its shorter side is ``size``, keeping the aspect ratio."""
    return _resize(im, *_short_side_size(im.shape[0], im.shape[1], size))


def to_chw(im, order=(2, 0, 1)):
    """Transpose an HWC image to CHW (or to ``order``)."""
    assert len(im.shape) == len(order)
    return im.transpose(order)


def center_crop(im, size, is_color=True):
    """The centred ``size`` x ``size`` crop of an HWC (or HW) image."""
    h, w = im.shape[:2]
    h_start, w_start = (h - size) // 2, (w - size) // 2
    return im[h_start:h_start + size, w_start:w_start + size]


def random_crop(im, size, is_color=True):
    """A ``size`` x ``size`` crop at a position drawn from numpy's global generator."""
    h, w = im.shape[:2]
    h_start = np.random.randint(0, h - size + 1)
    w_start = np.random.randint(0, w - size + 1)
    return im[h_start:h_start + size, w_start:w_start + size]


def left_right_flip(im, is_color=True):
    """The image mirrored left to right."""
    return im[:, ::-1]


def simple_transform(im, resize_size, crop_size, is_train, is_color=True, mean=None):
    """Resize the short side to ``resize_size``, crop ``crop_size`` (random + coin-flip mirror when
    ``is_train``, centred otherwise), CHW for colour, float32, minus ``mean`` (per channel or per pixel)."""
    return _crop_and_normalise(resize_short(im, resize_size), crop_size, is_train, is_color, mean)


def _crop_and_normalise(im, crop_size, is_train, is_color, mean):
    if is_train:
        im = random_crop(im, crop_size, is_color=is_color)
        if np.random.randint(2) == 0:
            im = left_right_flip(im, is_color)
    else:
        im = center_crop(im, crop_size, is_color=is_color)
    if len(im.shape) == 3:
        im = to_chw(im)
    im = im.astype('float32')
    if mean is not None:
        mean = np.array(mean, dtype=np.float32)
        if mean.ndim == 1 and is_color:
            mean = mean[:, np.newaxis, np.newaxis]
        elif mean.ndim != 1 and mean.shape != im.shape:
            raise ValueError("simple_transform: an element-wise mean must have the image's shape %s, got %s"
                             % (im.shape, mean.shape))
        im -= mean
    return im


def load_and_transform(filename, resize_size, crop_size, is_train, is_color=True, mean=None):
    """``simple_transform(load_image(filename, is_color), ...)``."""
    return simple_transform(load_image(filename, is_color), resize_size, crop_size, is_train, is_color, mean)
