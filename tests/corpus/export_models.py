#!/usr/bin/python3
"""Exports the corpus of real PyTorch models to ONNX (TorchScript exporter).

    /usr/bin/python3 tests/corpus/export_models.py OUTDIR [--models a,b,c]
        [--jobs N] [--list]

For each model NAME writes, under OUTDIR:
  NAME.onnx            torch.onnx.export of the model (random weights,
                       torch.manual_seed(0), eval mode, constant folding)
  NAME/input_K.npy     its K-th input, in the order of the graph's inputs,
                       from numpy RandomState(seed of NAME)
  NAME/torch_output_K.npy  PyTorch's eager outputs for those inputs
  NAME/shape_S/...     for a model with dynamic axes, the same files at the
                       S-th other shape of its inputs (S = 1, 2, ...): one
                       added network answers every shape (issue 30)
and merges one entry per model into OUTDIR/manifest.json (entries of other
models, e.g. those of make_opset_graphs.py, are kept). A model the exporter
refuses is recorded as {"name", "export_error"} instead of crashing the run.

Needs Debian's python3-torch 1.13, python3-torchvision 0.14 and python3-onnx
(hence /usr/bin/python3). No weights are downloaded (weights=None).
"""

import argparse
import concurrent.futures
import json
import math
import multiprocessing
import os
import sys
import time
import traceback
import warnings
import zlib

import numpy as np
import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision

OPSET = 17
MANIFEST = "manifest.json"


def register_roi_align_opset16():
    """torchvision 0.14 registers one symbolic for torchvision::roi_align,
    at opset 11: RoiAlign without coordinate_transformation_mode. At opset
    16 and later that attribute defaults to half_pixel, i.e. aligned=True,
    while Faster R-CNN's MultiScaleRoIAlign uses aligned=False: the export
    would compute other boxes than the model (ORT and PyTorch disagreed by
    up to 230 px). This symbolic, registered for opset 16, names the mode."""
    from torch.onnx import register_custom_op_symbolic
    from torch.onnx.symbolic_helper import parse_args
    from torch.onnx.symbolic_opset9 import _cast_Long
    from torch.onnx.symbolic_opset11 import select, squeeze

    @parse_args("v", "v", "f", "i", "i", "i", "i")
    def roi_align(g, input, rois, spatial_scale, pooled_height, pooled_width,
                  sampling_ratio, aligned):
        index = lambda v: g.op("Constant", value_t=torch.tensor(
            v, dtype=torch.long))
        batch_indices = _cast_Long(
            g, squeeze(g, select(g, rois, 1, index([0])), 1), False)
        rois = select(g, rois, 1, index([1, 2, 3, 4]))
        return g.op(
            "RoiAlign", input, rois, batch_indices,
            coordinate_transformation_mode_s=(
                "half_pixel" if aligned else "output_half_pixel"),
            spatial_scale_f=spatial_scale, output_height_i=pooled_height,
            output_width_i=pooled_width,
            sampling_ratio_i=max(0, sampling_ratio))

    register_custom_op_symbolic("torchvision::roi_align", roi_align, 16)


def seed_of(name):
    return zlib.crc32(name.encode()) & 0x7FFFFFFF


# --------------------------------------------------------------------------
# Hand-written transformer / recurrent models.


class SelfAttention(nn.Module):
    """Multi-head self-attention written out (as HF's BERT/GPT-2 do)."""

    def __init__(self, hidden, heads):
        super().__init__()
        self.heads = heads
        self.head_dim = hidden // heads
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)
        self.out = nn.Linear(hidden, hidden)

    def split_heads(self, x):
        # HF style: the shape is computed from x.size(), so the export has
        # Shape -> Gather -> Unsqueeze -> Concat -> Reshape.
        new_shape = x.size()[:-1] + (self.heads, self.head_dim)
        return x.view(new_shape).permute(0, 2, 1, 3)

    def forward(self, x, additive_mask):
        q = self.split_heads(self.query(x))
        k = self.split_heads(self.key(x))
        v = self.split_heads(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim)
        scores = scores + additive_mask
        probs = torch.softmax(scores, dim=-1)
        ctx = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous()
        new_shape = ctx.size()[:-2] + (self.heads * self.head_dim,)
        return self.out(ctx.view(new_shape))


class EncoderLayer(nn.Module):
    def __init__(self, hidden, heads, ffn, pre_norm=False):
        super().__init__()
        self.pre_norm = pre_norm
        self.attn = SelfAttention(hidden, heads)
        self.ln1 = nn.LayerNorm(hidden)
        self.fc1 = nn.Linear(hidden, ffn)
        self.fc2 = nn.Linear(ffn, hidden)
        self.ln2 = nn.LayerNorm(hidden)

    def forward(self, x, mask):
        if self.pre_norm:  # GPT-2
            x = x + self.attn(self.ln1(x), mask)
            return x + self.fc2(F.gelu(self.fc1(self.ln2(x)), approximate="tanh"))
        x = self.ln1(x + self.attn(x, mask))  # BERT (post-norm)
        return self.ln2(x + self.fc2(F.gelu(self.fc1(x))))


class BertEncoder(nn.Module):
    def __init__(self, vocab=1000, hidden=256, heads=4, layers=2, max_pos=128):
        super().__init__()
        self.word = nn.Embedding(vocab, hidden)
        self.pos = nn.Embedding(max_pos, hidden)
        self.token_type = nn.Embedding(2, hidden)
        self.ln = nn.LayerNorm(hidden)
        self.layers = nn.ModuleList(
            [EncoderLayer(hidden, heads, 4 * hidden) for _ in range(layers)])
        self.pool = nn.Linear(hidden, hidden)

    def forward(self, input_ids, attention_mask):
        seq = input_ids.size(1)
        pos_ids = torch.arange(seq, dtype=torch.long,
                               device=input_ids.device).unsqueeze(0)
        x = self.word(input_ids) + self.pos(pos_ids) + self.token_type(
            torch.zeros_like(input_ids))
        x = self.ln(x)
        # [B, S] -> [B, 1, 1, S]; 0 where attended, -10000 where masked.
        mask = attention_mask[:, None, None, :].to(x.dtype)
        mask = (1.0 - mask) * -10000.0
        for layer in self.layers:
            x = layer(x, mask)
        pooled = torch.tanh(self.pool(x[:, 0]))
        return x, pooled


class GptDecoder(nn.Module):
    def __init__(self, vocab=1000, hidden=256, heads=4, layers=2, max_pos=128):
        super().__init__()
        self.wte = nn.Embedding(vocab, hidden)
        self.wpe = nn.Embedding(max_pos, hidden)
        self.layers = nn.ModuleList(
            [EncoderLayer(hidden, heads, 4 * hidden, pre_norm=True)
             for _ in range(layers)])
        self.ln_f = nn.LayerNorm(hidden)
        self.lm_head = nn.Linear(hidden, vocab, bias=False)
        self.lm_head.weight = self.wte.weight  # tied

    def forward(self, input_ids):
        seq = input_ids.size(1)
        pos = torch.arange(seq, dtype=torch.long, device=input_ids.device)
        x = self.wte(input_ids) + self.wpe(pos).unsqueeze(0)
        # Causal mask built at run time from the sequence length.
        ones = torch.ones(seq, seq, dtype=x.dtype, device=x.device)
        future = torch.triu(ones, diagonal=1)  # 1 above the diagonal
        mask = (future * -1e9)[None, None, :, :]
        for layer in self.layers:
            x = layer(x, mask)
        return self.lm_head(self.ln_f(x))


class LstmTagger(nn.Module):
    def __init__(self, vocab=500, emb=64, hidden=128, tags=17):
        super().__init__()
        self.emb = nn.Embedding(vocab, emb)
        self.lstm = nn.LSTM(emb, hidden, num_layers=2, bidirectional=True,
                            batch_first=True)
        self.fc = nn.Linear(2 * hidden, tags)

    def forward(self, input_ids):
        h, _ = self.lstm(self.emb(input_ids))
        return torch.log_softmax(self.fc(h), dim=-1)


class OutOnly(nn.Module):
    """Segmentation models return a dict; keep the tensor 'out'."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x)["out"]


class Detector(nn.Module):
    """Takes one image tensor [3, H, W]; returns boxes, labels, scores."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, image):
        det = self.model([image])[0]
        return det["boxes"], det["labels"], det["scores"]


# --------------------------------------------------------------------------
# The corpus. Each spec: build() -> module, inputs (name, kind, shape, extra),
# output names, dynamic axes, notes.

CLS_DYN = {"input": {0: "batch"}, "output": {0: "batch"}}
# Batch and image size (the CNN of issue 30's dynamic shapes).
CLS_DYN_HW = {"input": {0: "batch", 2: "height", 3: "width"},
              "output": {0: "batch"}}


def tv(fn, **kw):
    return lambda: getattr(torchvision.models, fn)(weights=None, **kw)


def calibrate_bn(part, shape, seed, steps=3):
    """Gives BatchNorm layers running statistics of their own: a fresh
    model's (mean 0, var 1) leave a deep random CNN's features almost
    independent of its input (constant logits, detection scores that tie
    exactly), and make every BatchNorm an identity. A few train-mode
    forward passes on random normalized images, cumulative averages."""
    bns = [m for m in part.modules()
           if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    if not bns:
        return
    for m in bns:
        m.reset_running_stats()
        m.momentum = None
    g = torch.Generator().manual_seed(seed)
    part.train()
    with torch.no_grad():
        for _ in range(steps):
            part((torch.rand(shape, generator=g) - 0.45) / 0.225)
    part.eval()


def calibrated(build, shape, part=lambda m: m, after=None):
    def b():
        m = build()
        calibrate_bn(part(m), shape, seed=1)
        if after:
            with torch.no_grad():
                after(m)
        return m
    return b


def cls(name, size, note=None, after=None, dynamic_axes=CLS_DYN,
        shape_sets=()):
    return dict(name=name,
                build=calibrated(tv(name), [2, 3, size, size], after=after),
                inputs=[("input", "image", [1, 3, size, size], None)],
                outputs=["output"], dynamic_axes=dynamic_axes, note=note,
                shape_sets=[[s] for s in shape_sets])


def seg(name):
    def build():
        m = getattr(torchvision.models.segmentation, name)(
            weights=None, weights_backbone=None, aux_loss=None)
        return OutOnly(m)
    return dict(name=name, build=calibrated(build, [2, 3, 160, 160]),
                inputs=[("input", "image", [1, 3, 160, 160], None)],
                outputs=["output"], dynamic_axes=CLS_DYN,
                note="output 'out' of the segmentation dict only")


def det(name, fn, after=None, note=None, **kw):
    def build():
        m = getattr(torchvision.models.detection, fn)(
            weights=None, weights_backbone=None, **kw)
        return Detector(m)
    # The backbone's BatchNorms only (the detector's train mode wants
    # targets); then the heads are scaled so that random scores spread out
    # (no exact ties, whose order is up to the runtime).
    return dict(name=name, build=calibrated(
        build, [2, 3, 320, 320], part=lambda m: m.model.backbone, after=after),
                inputs=[("image", "image", [3, 320, 320], None)],
                outputs=["boxes", "labels", "scores"], dynamic_axes={},
                note="outputs have data-dependent shapes [N,4], [N], [N]; "
                     "the order of near-tied scores may differ between "
                     "runtimes" + ("; " + note if note else ""))


SPECS = [
    cls("resnet50", 160),
    cls("mobilenet_v3_large", 160, dynamic_axes=CLS_DYN_HW,
        shape_sets=[[2, 3, 160, 160], [1, 3, 224, 224], [3, 3, 96, 128],
                    [1, 3, 200, 120]]),
    cls("efficientnet_b0", 160),
    cls("shufflenet_v2_x1_0", 160),
    cls("densenet121", 160),
    cls("regnet_y_400mf", 160),
    cls("convnext_tiny", 160),
    cls("vit_b_16", 224, "ViT needs its image size, 224; its head, zeros "
        "when built, drawn from N(0, 0.05)",
        after=lambda m: nn.init.normal_(m.heads.head.weight, std=0.05)),
    cls("swin_t", 224),
    det("ssdlite320_mobilenet_v3_large", "ssdlite320_mobilenet_v3_large",
        after=lambda m: [p.mul_(4.0) for p in
                         m.model.head.classification_head.parameters()],
        score_thresh=0.001, detections_per_img=20),
    det("fasterrcnn_mobilenet_v3_large_fpn", "fasterrcnn_mobilenet_v3_large_fpn",
        after=lambda m: m.model.roi_heads.box_predictor.cls_score.weight.mul_(10.0),
        min_size=320, max_size=320, box_score_thresh=0.001,
        box_detections_per_img=20, rpn_pre_nms_top_n_test=200,
        rpn_post_nms_top_n_test=100,
        note="RoiAlign written with coordinate_transformation_mode "
             "output_half_pixel (register_roi_align_opset16)"),
    seg("deeplabv3_mobilenet_v3_large"),
    seg("lraspp_mobilenet_v3_large"),
    dict(name="bert_encoder", build=BertEncoder,
         inputs=[("input_ids", "tokens", [2, 16], 1000),
                 ("attention_mask", "mask", [2, 16], None)],
         outputs=["last_hidden_state", "pooler_output"],
         dynamic_axes={"input_ids": {0: "batch", 1: "seq"},
                       "attention_mask": {0: "batch", 1: "seq"},
                       "last_hidden_state": {0: "batch", 1: "seq"},
                       "pooler_output": {0: "batch"}},
         shape_sets=[[[1, 8]] * 2, [[3, 32]] * 2, [[4, 5]] * 2,
                     [[1, 64]] * 2],
         note="hand-written attention, HF-style size() reshapes; "
              "mask additive -10000"),
    dict(name="gpt_decoder", build=GptDecoder,
         inputs=[("input_ids", "tokens", [1, 32], 1000)],
         outputs=["logits"],
         dynamic_axes={"input_ids": {0: "batch", 1: "seq"},
                       "logits": {0: "batch", 1: "seq"}},
         shape_sets=[[[1, 8]], [[2, 16]], [[3, 5]], [[1, 64]]],
         note="causal mask from torch.triu at run time; tied LM head"),
    dict(name="lstm_tagger", build=LstmTagger,
         inputs=[("input_ids", "tokens", [1, 20], 500)],
         outputs=["tag_log_probs"],
         dynamic_axes={"input_ids": {1: "seq"}, "tag_log_probs": {1: "seq"}},
         shape_sets=[[[1, 5]], [[1, 33]], [[1, 1]], [[1, 64]]],
         note="2-layer bidirectional nn.LSTM, batch_first"),
]

# Tried in order when a model fails to export: the nearest alternative.
FALLBACKS = {
    "ssdlite320_mobilenet_v3_large": det(
        "retinanet_resnet50_fpn", "retinanet_resnet50_fpn",
        after=lambda m:
            m.model.head.classification_head.cls_logits.weight.mul_(30.0),
        min_size=320,
        max_size=320, score_thresh=0.001, detections_per_img=20,
        topk_candidates=200),
}


def make_inputs(spec, shapes=None, salt=0):
    """The spec's inputs, at `shapes` (one per input) instead of its own
    when given; `salt` > 0 draws another sample for another shape set."""
    rng = np.random.RandomState((seed_of(spec["name"]) + salt) % 2**32)
    arrays = []
    for k, (name, kind, shape, extra) in enumerate(spec["inputs"]):
        if shapes is not None:
            shape = list(shapes[k])
        if kind == "image":
            a = rng.random_sample(shape).astype(np.float32)
        elif kind == "tokens":
            a = rng.randint(0, extra, size=shape).astype(np.int64)
        elif kind == "mask":
            # 1 for real tokens, 0 for padding at the end of later rows.
            a = np.ones(shape, dtype=np.int64)
            for b in range(1, shape[0]):
                a[b, shape[1] - rng.randint(1, shape[1] // 2):] = 0
        else:
            raise ValueError(kind)
        arrays.append((name, a))
    return arrays


def export_one(spec, outdir):
    name = spec["name"]
    t_build = time.time()
    torch.manual_seed(0)
    model = spec["build"]()
    model.eval()
    build_s = time.time() - t_build
    inputs = make_inputs(spec)
    args = tuple(torch.from_numpy(a) for _, a in inputs)
    path = os.path.join(outdir, name + ".onnx")
    t0 = time.time()
    # Not under torch.no_grad(): without autograd nn.MultiheadAttention
    # (ViT) takes its fast path, aten::_native_multi_head_attention, which
    # the 1.13 exporter cannot write.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model, args, path, export_params=True, opset_version=OPSET,
            do_constant_folding=True,
            input_names=[n for n, _ in inputs],
            output_names=spec["outputs"],
            dynamic_axes=spec["dynamic_axes"] or None)
    export_s = time.time() - t0
    m = onnx.load(path, load_external_data=False)
    graph_inputs = [i.name for i in m.graph.input]
    if graph_inputs != [n for n, _ in inputs]:
        raise RuntimeError("graph inputs %s differ from %s" %
                           (graph_inputs, [n for n, _ in inputs]))
    d = os.path.join(outdir, name)
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(d):  # stale inputs / outputs of an earlier run
        if f.endswith(".npy"):
            os.remove(os.path.join(d, f))
    for k, (_, a) in enumerate(inputs):
        np.save(os.path.join(d, "input_%d.npy" % k), a)
    # PyTorch's own (eager) outputs, a second reference beside ORT's.
    with torch.no_grad():
        outs = model(*args)
    if isinstance(outs, torch.Tensor):
        outs = (outs,)
    for k, o in enumerate(outs):
        np.save(os.path.join(d, "torch_output_%d.npy" % k), o.numpy())
    shape_sets = []
    for S, shapes in enumerate(spec.get("shape_sets", []), start=1):
        sd = os.path.join(d, "shape_%d" % S)
        os.makedirs(sd, exist_ok=True)
        for f in os.listdir(sd):
            if f.endswith(".npy"):
                os.remove(os.path.join(sd, f))
        arrays = make_inputs(spec, shapes, salt=S)
        for k, (_, a) in enumerate(arrays):
            np.save(os.path.join(sd, "input_%d.npy" % k), a)
        with torch.no_grad():
            outs = model(*(torch.from_numpy(a) for _, a in arrays))
        if isinstance(outs, torch.Tensor):
            outs = (outs,)
        for k, o in enumerate(outs):
            np.save(os.path.join(sd, "torch_output_%d.npy" % k), o.numpy())
        shape_sets.append([{"name": n, "dtype": str(a.dtype),
                            "shape": list(a.shape)} for n, a in arrays])
    opset = [o.version for o in m.opset_import if o.domain in ("", "ai.onnx")]
    entry = {
        "name": name,
        "file": name + ".onnx",
        "exporter": "torchscript",
        "torch": torch.__version__,
        "opset": opset[0] if opset else None,
        "ir_version": m.ir_version,
        "nodes": len(m.graph.node),
        "inputs": [{"name": n, "dtype": str(a.dtype), "shape": list(a.shape)}
                   for n, a in inputs],
        "outputs": [o.name for o in m.graph.output],
        "dynamic_axes": {k: {str(a): v for a, v in ax.items()}
                         for k, ax in spec["dynamic_axes"].items()},
        "file_bytes": os.path.getsize(path),
        "shape_sets": shape_sets,
        "export_s": round(export_s, 2),
        "build_s": round(build_s, 2),
    }
    if spec.get("note"):
        entry["note"] = spec["note"]
    return entry


def load_manifest(outdir):
    p = os.path.join(outdir, MANIFEST)
    if os.path.exists(p):
        with open(p) as f:
            return json.load(f)
    return {"models": []}


def save_manifest(outdir, manifest, entries):
    """Replaces the entries of the same names, keeps the others."""
    names = {e["name"] for e in entries}
    models = [e for e in manifest["models"] if e["name"] not in names]
    manifest["models"] = models + entries
    p = os.path.join(outdir, MANIFEST)
    with open(p + ".tmp", "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    os.replace(p + ".tmp", p)


def short_error(e):
    msg = "%s: %s" % (type(e).__name__, str(e).strip())
    lines = [l for l in msg.splitlines() if l.strip()]
    return " / ".join(lines[:3])[:500]


def specs_by_name():
    """Every model that can be exported, fallbacks included, by name."""
    known = {s["name"]: s for s in SPECS}
    known.update({s["name"]: s for s in FALLBACKS.values()})
    return known


def start_worker(threads):
    """Sets up a process that exports: the opset-16 RoiAlign symbolic and
    its share of the cores."""
    register_roi_align_opset16()
    torch.set_num_threads(threads)


def export_chain(job):
    """Exports the model named job[0] into job[1]; when the exporter refuses
    it and it has a fallback, the fallback too. Returns the manifest
    entries, one per model tried. Runs in a worker process under --jobs."""
    name, outdir = job
    entries = []
    todo = [specs_by_name()[name]]
    while todo:
        s = todo.pop(0)
        t0 = time.time()
        try:
            entry = export_one(s, outdir)
            print("%-36s ok  opset %d  %5d nodes  %7.1f MB  %.1f s" % (
                s["name"], entry["opset"], entry["nodes"],
                entry["file_bytes"] / 1e6, entry["export_s"]), flush=True)
        except Exception as e:  # the exporter refused: record why
            entry = {"name": s["name"], "exporter": "torchscript",
                     "opset": OPSET, "export_error": short_error(e)}
            print("%-36s export_error (%.1f s): %s" % (
                s["name"], time.time() - t0, entry["export_error"]),
                flush=True)
            if os.environ.get("GLINT_CORPUS_VERBOSE"):
                traceback.print_exc()
            p = os.path.join(outdir, s["name"] + ".onnx")
            if os.path.exists(p):
                os.remove(p)
            if s["name"] in FALLBACKS:
                fb = FALLBACKS[s["name"]]
                entry["replaced_by"] = fb["name"]
                todo.append(fb)
        entries.append(entry)
    return entries


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("outdir", nargs="?")
    ap.add_argument("--models", default="",
                    help="comma-separated names (default: all)")
    ap.add_argument("--list", action="store_true", help="print names, exit")
    ap.add_argument("--jobs", type=int, default=1,
                    help="models exported at once, each in a process of "
                    "its own with its share of the cores (default 1)")
    a = ap.parse_args()
    if a.list:
        for s in SPECS:
            print(s["name"])
        return 0
    if not a.outdir:
        ap.error("OUTDIR is required")
    specs = SPECS
    if a.models:
        wanted = [m for m in a.models.split(",") if m]
        known = specs_by_name()
        unknown = [m for m in wanted if m not in known]
        if unknown:
            ap.error("unknown models: %s (see --list)" % ",".join(unknown))
        specs = [known[m] for m in wanted]
    os.makedirs(a.outdir, exist_ok=True)
    jobs = max(1, min(a.jobs, len(specs)))
    threads = max(1, min(4, os.cpu_count() or 1) // jobs)
    manifest = load_manifest(a.outdir)
    manifest["torch"] = torch.__version__
    manifest["torchvision"] = torchvision.__version__
    jobs_list = [(s["name"], a.outdir) for s in specs]
    if jobs == 1:
        start_worker(threads)
        for entries in map(export_chain, jobs_list):
            save_manifest(a.outdir, manifest, entries)
        return 0
    # "spawn": a forked child would inherit torch's thread pools. A worker
    # that dies (a crash in the exporter) raises BrokenProcessPool here
    # rather than leaving the run waiting for it.
    with concurrent.futures.ProcessPoolExecutor(
            jobs, mp_context=multiprocessing.get_context("spawn"),
            initializer=start_worker, initargs=(threads,)) as pool:
        for entries in pool.map(export_chain, jobs_list):  # in list order
            save_manifest(a.outdir, manifest, entries)
    return 0


if __name__ == "__main__":
    sys.exit(main())
