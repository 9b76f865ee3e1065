"""MTCNN face detection (Zhang et al., 2016: a proposal net over an image pyramid, then two nets
that refine and score its boxes) in torch, with the trained weights that the `mtcnn` wheel ships.

The `mtcnn` package (PyPI, MIT) carries P-Net, R-Net and O-Net's weights as joblib+lz4 arrays in
`mtcnn/assets/weights/`; its own code runs them in TensorFlow, so it is never imported here: the
arrays are read from the installed package's files (`importlib.util.find_spec`, which imports
nothing) and loaded into the same three networks written in torch, in Keras' layout (NHWC
kernels, 'same' pooling, the fully connected layers reading a (W, H, C) flattening). The
pipeline follows the package's: an AREA-resized pyramid from `min_face` down to 12 px by
`factor`, P-Net boxes over `thresholds[0]` (regressed, NMS 0.5 per scale and 0.7 over all),
squared, 24x24 bilinear crops scored by R-Net (over `thresholds[1]`, NMS 0.7), squared, 48x48 by
O-Net (over `thresholds[2]`, NMS 0.7 on the smaller box). Inputs are RGB uint8 arrays.
`detect(rgb, angles)` also refines P-Net's upright proposals in crops turned by each angle (a
turned face that P-Net's weak window proposes upright, for two small crops a proposal), keeping
what is found turned (over `_TURNED_ONET`) where no upright face is. O-Net's boxes keep only
those whose five landmarks lie where a face's do, unless it is sure (`_face_like`): petals, snow
and rock passed O-Net with "eyes" too close together for the nose and mouth below them.

`Mtcnn.detect` may be called from many threads at once (the nets are read only, built once per
process under a lock). It leaves torch's thread settings alone: `torch.set_num_threads` also
writes a process-wide value that threads read when they first use torch, so setting and
restoring it from the image fetch's pool threads changed other threads' counts at random (the
main thread's, in tests/images/test_faces.py). Two fetch threads each running MTCNN with torch's
default two intra-op threads cost 63 ms of CPU a 480 px photograph against 53-56 with one.
"""

from __future__ import annotations

import math
import os
import threading
from importlib.util import find_spec

import numpy as np

_NETS = None
_NETS_LOCK = threading.Lock()


def _arrays(name: str) -> list[np.ndarray]:
    spec = find_spec("mtcnn")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(
            "the mtcnn package is not installed; its wheel carries the face detector's weights "
            "(`make bootstrap` installs it from requirements.lock)"
        )
    import joblib

    path = os.path.join(spec.submodule_search_locations[0], "assets", "weights", f"{name}.lz4")
    return [np.asarray(a, dtype=np.float32) for a in joblib.load(path)]


def _nets():
    """P-Net, R-Net and O-Net with the package's weights, built once per process."""
    global _NETS
    with _NETS_LOCK:
        if _NETS is None:
            _NETS = _build()
    return _NETS


def _build():
    import torch
    from torch.nn import functional as fn

    # channels-last: the inputs already are (NHWC arrays seen as NCHW), and oneDNN's
    # channels-last convolutions and pooling cost 0.3-0.6x the NCHW ones here
    def conv(w, b):
        kernel = torch.from_numpy(w).permute(3, 2, 0, 1)
        return kernel.contiguous(memory_format=torch.channels_last), torch.from_numpy(b)

    def dense(w, b):
        return torch.from_numpy(w).t().contiguous(), torch.from_numpy(b)

    def slopes(a):
        return torch.from_numpy(a.reshape(-1).copy())

    class Net:
        """Conv+PReLU blocks, each followed by its max pooling (kernel, 'same' padding) or none,
        then a 1x1-conv head (P-Net: fully convolutional) or a PReLU dense layer and dense heads
        reading Keras' flattening: NHWC, then Permute((2, 1, 3)), so (N, W, H, C).

        The layers are torch's functions called on plain tensors, not nn.Modules: the same
        kernels and so the same outputs, without a module call's Python overhead (about a tenth
        of a small P-Net level's cost, and P-Net runs on ~25 levels for each region searched)."""

        def __init__(self, w, pools, dense_head):
            self.pools = pools
            self.blocks = [
                (*conv(w[3 * i], w[3 * i + 1]), slopes(w[3 * i + 2])) for i in range(len(pools))
            ]
            k = 3 * len(pools)
            self.fc = (*dense(w[k], w[k + 1]), slopes(w[k + 2])) if dense_head else None
            k += 3 if dense_head else 0
            self.head = fn.linear if dense_head else fn.conv2d
            head = dense if dense_head else conv
            self.reg, self.cls = head(w[k], w[k + 1]), head(w[-2], w[-1])
            # O-Net: the five landmarks' head between (x of each, then y of each, in shares of
            # the crop's width and height)
            self.marks = head(w[k + 2], w[k + 3]) if len(w) > k + 4 else None

        def __call__(self, x):
            for (weight, bias, a), pool in zip(self.blocks, self.pools, strict=True):
                x = fn.prelu(fn.conv2d(x, weight, bias), a)
                if pool:
                    kernel, same = pool
                    x = fn.max_pool2d(x, kernel, 2, ceil_mode=same)
            if self.fc is not None:
                weight, bias, a = self.fc
                x = fn.prelu(
                    fn.linear(x.permute(0, 3, 2, 1).reshape(x.shape[0], -1), weight, bias), a
                )
            marks = self.head(x, *self.marks) if self.marks is not None else None
            return self.head(x, *self.reg), fn.softmax(self.head(x, *self.cls), dim=1), marks

    return (
        Net(_arrays("pnet"), [(2, True), None, None], False),
        Net(_arrays("rnet"), [(3, True), (3, False), None], True),
        Net(_arrays("onet"), [(3, True), (3, False), (2, True), None], True),
    )


def _nms(b: np.ndarray, threshold: float, smaller: bool = False) -> np.ndarray:
    """Boxes (x1, y1, x2, y2, score) kept by non-maximum suppression: overlap over the union, or
    over the smaller box (`smaller`); greedy, highest score first (ties in input order).

    Up to `_NMS_MATRIX` boxes, every pair's overlap is computed at once and the greedy pass only
    reads rows of it; more boxes go through `_nms_greedy`, one kept box at a time. Both give the
    same boxes (the same float32 arithmetic): on the 972 calls of 30 photographs' searches the
    matrix costs 0.27x the greedy loop's CPU; a photograph's whole face search, 90 of them
    alternating, 128.9 and 141.9 -> 128.0 and 135.8 ms, the same boxes."""
    if len(b) < 2:
        return b
    if len(b) > _NMS_MATRIX:
        return _nms_greedy(b, threshold, smaller)
    order = np.argsort(-b[:, 4], kind="stable")
    s = b[order]
    area = (s[:, 2] - s[:, 0] + 1) * (s[:, 3] - s[:, 1] + 1)
    iw = np.maximum(0, np.minimum(s[:, None, 2], s[:, 2]) - np.maximum(s[:, None, 0], s[:, 0]) + 1)
    ih = np.maximum(0, np.minimum(s[:, None, 3], s[:, 3]) - np.maximum(s[:, None, 1], s[:, 1]) + 1)
    inter = iw * ih
    base = np.minimum(area[:, None], area) if smaller else area[:, None] + area - inter
    with np.errstate(divide="ignore", invalid="ignore"):
        clash = ~(inter / base <= threshold)  # NaN (a degenerate box) clashes, as in the loop
    alive = np.ones(len(s), bool)
    keep = []
    for i in range(len(s)):
        if alive[i]:
            keep.append(i)
            alive[i + 1 :] &= ~clash[i, i + 1 :]
    return b[order[keep]]


_NMS_MATRIX = 1024  # boxes: the pairwise matrices stay under ~4 MiB each


def _nms_greedy(b: np.ndarray, threshold: float, smaller: bool = False) -> np.ndarray:
    """_nms one kept box at a time (memory linear in the boxes)."""
    order = np.argsort(-b[:, 4], kind="stable")
    area = (b[:, 2] - b[:, 0] + 1) * (b[:, 3] - b[:, 1] + 1)
    keep = []
    while order.size:
        i, rest = order[0], order[1:]
        keep.append(i)
        iw = np.maximum(0, np.minimum(b[i, 2], b[rest, 2]) - np.maximum(b[i, 0], b[rest, 0]) + 1)
        ih = np.maximum(0, np.minimum(b[i, 3], b[rest, 3]) - np.maximum(b[i, 1], b[rest, 1]) + 1)
        inter = iw * ih
        base = np.minimum(area[i], area[rest]) if smaller else area[i] + area[rest] - inter
        order = rest[inter / base <= threshold]
    return b[keep]


def _overlap(box: np.ndarray, others: np.ndarray) -> float:
    """The largest intersection of `box` with one of `others`, over the smaller of the two."""
    if not len(others):
        return 0.0
    iw = np.maximum(0, np.minimum(box[2], others[:, 2]) - np.maximum(box[0], others[:, 0]))
    ih = np.maximum(0, np.minimum(box[3], others[:, 3]) - np.maximum(box[1], others[:, 1]))
    area = (box[2] - box[0]) * (box[3] - box[1])
    areas = (others[:, 2] - others[:, 0]) * (others[:, 3] - others[:, 1])
    return float(np.max(iw * ih / np.maximum(1e-9, np.minimum(area, areas))))


def _square(b: np.ndarray) -> np.ndarray:
    b = b.copy()
    w, h = b[:, 2] - b[:, 0], b[:, 3] - b[:, 1]
    side = np.maximum(w, h)
    b[:, 0] += (w - side) / 2
    b[:, 1] += (h - side) / 2
    b[:, 2] = b[:, 0] + side
    b[:, 3] = b[:, 1] + side
    return b


def _regress(b: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    b = b.copy()
    w, h = b[:, 2] - b[:, 0] + 1, b[:, 3] - b[:, 1] + 1
    b[:, :4] += offsets * np.stack([w, h, w, h], 1)
    return b


def _crops(image: np.ndarray, boxes: np.ndarray, size: int, angle: float = 0.0):
    """size x size bilinear crops of `image` (H, W, 3 float) at `boxes`, zero outside it, as an
    (N, 3, size, size) tensor (TensorFlow's crop_and_resize, which the package uses). `angle`:
    the boxes are in the frame of the image turned by that many degrees (counter-clockwise, as
    OpenCV's getRotationMatrix2D turns) about its origin, and each crop is drawn turned with
    it. The crops' sampling maps are stacked so that one `cv2.remap` call draws many of them
    (the same pixels as a call a box, at a fifth of the cost for R-Net's 24 px crops)."""
    import cv2
    import torch

    n = len(boxes)
    out = np.empty((n, size, size, 3), np.float32)
    steps = np.arange(size, dtype=np.float32) / (size - 1)
    x1, y1, x2, y2 = (boxes[:, i : i + 1].astype(np.float32) for i in range(4))
    xs = (x1 + steps * (x2 - x1)).astype(np.float32)  # (n, size): each crop's sample columns
    ys = (y1 + steps * (y2 - y1)).astype(np.float32)
    cos, sin = _turn(angle)
    per = max(1, _REMAP_ROWS // size)  # OpenCV's maps stay under 32,767 rows
    for a in range(0, n, per):
        k = min(n, a + per) - a
        if angle:
            tx, ty = xs[a : a + k, None, :], ys[a : a + k, :, None]
            mx = (cos * tx - sin * ty).astype(np.float32).reshape(k * size, size)
            my = (sin * tx + cos * ty).astype(np.float32).reshape(k * size, size)
        else:
            mx = np.broadcast_to(xs[a : a + k, None, :], (k, size, size)).reshape(k * size, size)
            my = np.broadcast_to(ys[a : a + k, :, None], (k, size, size)).reshape(k * size, size)
        drawn = cv2.remap(
            image, mx, my, cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT, borderValue=0
        )
        out[a : a + k] = drawn.reshape(k, size, size, 3)
    return torch.from_numpy(out).permute(0, 3, 1, 2)


def _turn(angle: float) -> tuple[float, float]:
    r = math.radians(angle)
    return math.cos(r), math.sin(r)


def _into_turned(b: np.ndarray, angle: float) -> np.ndarray:
    """Square boxes (x1, y1, x2, y2, score) of the upright image as the same squares about the
    same centres in the turned frame (`_crops`' `angle`)."""
    cos, sin = _turn(angle)
    cx, cy = (b[:, 0] + b[:, 2]) / 2, (b[:, 1] + b[:, 3]) / 2
    tx, ty = cos * cx + sin * cy, cos * cy - sin * cx  # OpenCV's turn: (x, y) -> M (x, y)
    hw, hh = (b[:, 2] - b[:, 0]) / 2, (b[:, 3] - b[:, 1]) / 2
    return np.stack([tx - hw, ty - hh, tx + hw, ty + hh, b[:, 4]], 1).astype(np.float32)


def _out_of_turned(b: np.ndarray, angle: float) -> np.ndarray:
    """Boxes of the turned frame as the upright boxes around them."""
    cos, sin = _turn(angle)
    xs, ys = b[:, [0, 2, 0, 2]], b[:, [1, 1, 3, 3]]
    ux, uy = cos * xs - sin * ys, sin * xs + cos * ys
    return np.stack([ux.min(1), uy.min(1), ux.max(1), uy.max(1), b[:, 4]], 1).astype(np.float32)


_REMAP_ROWS = 32000
# O-Net's score a face refined turned needs at least: each turn is one more try at every
# proposal, so one more chance for a detailed background to pass (a turned crop of scikit-learn's
# temple photograph scores 0.84). On bench/faces.py's grid, 0.8 -> 0.85: false faces 2 -> 1,
# recall 0.950 -> 0.946, small faces in large images 0.917 -> 0.906.
_TURNED_ONET = 0.85


# O-Net's landmarks (two eyes, the nose, the mouth's corners) where a face's are, measured down
# from the line between the eyes (from its midpoint, perpendicular to it: the crop's turn and
# the face's roll left out) in eye distances: the eyes above the nose, the nose above the mouth's
# centre, and neither further down than its score allows: (O-Net's score at least, the nose at
# most, the mouth at most), the first row a box meets keeping it. The surer O-Net, the further
# from a frontal face's (nose ~0.5, mouth ~1.0) they may lie: a face in three-quarter view has
# its eyes close together (PASCAL VOC's real faces reach 1.6 to the mouth at O-Net 0.97-1.0), a
# cartoon's mouth under a caption 1.21 at 0.92. Flowers, snow and rock, a roof's finial passed
# O-Net at 0.80-0.94 with "eyes" too close together for the nose and mouth below them (mouth
# 1.22-1.47): on Pillow's 287 face-free test images 14 boxes -> 4 (three puppies' faces, a
# daisy), the same faces found on bench/faces.py's grid and dlib's PASCAL VOC photographs.
_LANDMARKS = ((0.95, np.inf, np.inf), (0.9, 0.8, 1.3), (0.85, 0.75, 1.2), (0.0, 0.62, 1.1))


def _face_like(marks: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """Which of O-Net's boxes have their landmarks (rows: x of each of the five, then y of
    each, in shares of the square crop) where a face's are, for their scores (_LANDMARKS)."""
    eyes = marks[:, [0, 1]], marks[:, [5, 6]]
    ex, ey = eyes[0][:, 1] - eyes[0][:, 0], eyes[1][:, 1] - eyes[1][:, 0]
    apart = np.hypot(ex, ey)
    mid_x, mid_y = eyes[0].mean(1), eyes[1].mean(1)
    with np.errstate(divide="ignore", invalid="ignore"):
        # down the face: the eye line turned a quarter clockwise, in eye distances
        nose = ((marks[:, 7] - mid_y) * ex - (marks[:, 2] - mid_x) * ey) / apart**2
        mx, my = marks[:, [3, 4]].mean(1), marks[:, [8, 9]].mean(1)
        mouth = ((my - mid_y) * ex - (mx - mid_x) * ey) / apart**2
    ordered = (apart > 0) & (nose > 0) & (mouth > nose)
    sure, *rows = _LANDMARKS
    keep = scores >= sure[0]
    for least, nose_most, mouth_most in rows:
        keep |= ordered & (scores >= least) & (nose <= nose_most) & (mouth <= mouth_most)
    return keep


class Mtcnn:
    """Faces in RGB arrays, as (x1, y1, x2, y2, score) rows; see the module docstring."""

    def __init__(
        self,
        min_face: int = 20,
        thresholds: tuple[float, float, float] = (0.6, 0.7, 0.8),
        factor: float = 0.709,
    ) -> None:
        if min_face < 12:
            raise ValueError(f"Mtcnn: min_face={min_face}; P-Net's window is 12 px, use >= 12")
        self.min_face, self.thresholds, self.factor = min_face, tuple(thresholds), factor
        self.nets = _nets()

    def detect(self, rgb: np.ndarray, angles: tuple[float, ...] = ()) -> np.ndarray:
        """(n, 5) float32 rows (x1, y1, x2, y2, score) of the faces in `rgb` (H, W, 3 uint8).

        `angles`: P-Net's proposals from the upright pyramid are also refined by R-Net and O-Net
        in crops turned by each of these angles (degrees, as `cv2.getRotationMatrix2D` turns),
        which finds turned faces that P-Net's weak window proposes upright but the later nets
        reject there, for two small crops a proposal rather than a turned copy's whole pyramid.
        A face found turned is given as the upright box around its turned box."""
        import torch

        with torch.inference_mode():
            return self._detect(rgb, tuple(angles))

    def _detect(self, rgb: np.ndarray, angles: tuple[float, ...] = ()) -> np.ndarray:
        import cv2
        import torch

        pnet = self.nets[0]
        none = np.empty((0, 5), np.float32)
        height, width = rgb.shape[:2]
        image = (rgb.astype(np.float32) - 127.5) / 128.0
        scale, found = 12.0 / self.min_face, []
        while min(height, width) * scale >= 12:
            w, h = math.ceil(width * scale), math.ceil(height * scale)
            level = cv2.resize(image, (w, h), interpolation=cv2.INTER_AREA)
            reg, prob, _ = pnet(torch.from_numpy(level).permute(2, 0, 1)[None])
            p, r = prob[0, 1].numpy(), reg[0].numpy()
            ys, xs = np.nonzero(p > self.thresholds[0])
            if len(ys):
                x1, y1 = xs * 2 + 1.0, ys * 2 + 1.0  # P-Net: stride 2, a 12 px cell
                x2, y2 = xs * 2 + 12.0, ys * 2 + 12.0
                cw, ch = x2 - x1, y2 - y1
                b = np.stack(
                    [
                        x1 + r[0, ys, xs] * cw,
                        y1 + r[1, ys, xs] * ch,
                        x2 + r[2, ys, xs] * cw,
                        y2 + r[3, ys, xs] * ch,
                        p[ys, xs],
                    ],
                    1,
                ).astype(np.float32)
                b[:, :4] /= scale
                found.append(_nms(b, 0.5))
            scale *= self.factor
        if not found:
            return none
        proposals = _square(_nms(np.concatenate(found), 0.7))
        upright = self._refine(image, proposals, 0.0)
        out = [upright]
        for angle in angles:
            if angle % 360:
                turned = _out_of_turned(
                    self._refine(image, _into_turned(proposals, angle), angle), angle
                )
                # a face found upright keeps its upright box (the box around a turned one is
                # wider): what is found turned over half of it is the same face
                out.append(turned[[_overlap(t, upright) < 0.5 for t in turned]])
        return np.concatenate(out)

    def _refine(self, image: np.ndarray, b: np.ndarray, angle: float) -> np.ndarray:
        """R-Net, then O-Net, on square boxes of the frame turned by `angle`; the faces' boxes
        in that frame."""
        _pnet, rnet, onet = self.nets
        for net, size, threshold in (
            (rnet, 24, self.thresholds[1]),
            (onet, 48, self.thresholds[2]),
        ):
            if not len(b):
                return np.empty((0, 5), np.float32)
            reg, prob, marks = net(_crops(image, b, size, angle))
            b = b.copy()
            b[:, 4] = prob[:, 1].numpy()
            b = _regress(b, reg.numpy())
            keep = b[:, 4] > threshold
            if net is onet:
                if angle:
                    keep &= b[:, 4] > _TURNED_ONET
                keep &= _face_like(marks.numpy(), b[:, 4])
            b = b[keep]
            b = _nms(b, 0.7, smaller=net is onet)
            if net is rnet:
                b = _square(b)
        return b
