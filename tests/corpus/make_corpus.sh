#!/bin/bash
# Builds the model corpus and ONNX Runtime's reference outputs in one go.
#
#   tests/corpus/make_corpus.sh OUTDIR [MODELS]
#
# MODELS: comma-separated names from export_models.py --list and/or
# make_opset_graphs.py --list (default: all of both). Steps:
#   1. export_models.py      PyTorch exports      -> OUTDIR/NAME.onnx, NAME/input_K.npy
#   2. make_opset_graphs.py  opset 18-23 graphs   -> the same, exporter onnx.helper
#   3. ort_reference.js      ORT outputs          -> OUTDIR/NAME/ort_output_K.npy
#   4. check_reference.py    ORT vs PyTorch eager / numpy outputs
# (npm ci --ignore-scripts in tests/corpus first when node_modules is missing.)
# Exits non-zero when a step fails, ORT fails on a model, or ORT's outputs
# disagree with the second reference. A model the exporter refuses is not a
# failure: the manifest records why.
#
# Environment: PYTHON (default /usr/bin/python3, which has Debian's torch,
# torchvision and onnx), NODE (default node), ORT_THREADS (default 2),
# ORT_TIME_ITERS (timed ORT runs per model, default 5; 0: none),
# EXPORT_JOBS (models exported at once, default 2: the exporter runs on
# one core for most of a model, and the tests reserve two for this).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PYTHON="${PYTHON:-/usr/bin/python3}"
NODE="${NODE:-node}"
ORT_THREADS="${ORT_THREADS:-2}"
ORT_TIME_ITERS="${ORT_TIME_ITERS:-5}"
EXPORT_JOBS="${EXPORT_JOBS:-2}"

if [[ $# -lt 1 || $# -gt 2 || "$1" == -* ]]; then
  echo "usage: $0 OUTDIR [MODEL,MODEL,...]" >&2
  exit 2
fi
out="$1"
models="${2:-}"
mkdir -p "$out"

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
t_all=$(now)

# Split MODELS between the two generators.
torch_models="" helper_models="" run_torch=1 run_helper=1
if [[ -n "$models" ]]; then
  torch_list="$("$PYTHON" "$here/export_models.py" --list)"
  helper_list="$("$PYTHON" "$here/make_opset_graphs.py" --list)"
  IFS=',' read -r -a wanted <<<"$models"
  for m in "${wanted[@]}"; do
    [[ -z "$m" ]] && continue
    if grep -qxF "$m" <<<"$torch_list"; then
      torch_models+="${torch_models:+,}$m"
    elif grep -qxF "$m" <<<"$helper_list"; then
      helper_models+="${helper_models:+,}$m"
    else
      echo "make_corpus: unknown model $m (see export_models.py --list, make_opset_graphs.py --list)" >&2
      exit 2
    fi
  done
  [[ -z "$torch_models" ]] && run_torch=0
  [[ -z "$helper_models" ]] && run_helper=0
fi

if [[ ! -d "$here/node_modules/onnxruntime-node" ]]; then
  echo "== npm ci in $here"
  (cd "$here" && npm ci --ignore-scripts --no-audit --no-fund)
fi

if ((run_torch)); then
  echo "== export_models.py"
  t=$(now)
  "$PYTHON" "$here/export_models.py" "$out" --jobs "$EXPORT_JOBS" \
    ${torch_models:+--models "$torch_models"}
  echo "== export_models.py: $(since "$t") s"
fi
if ((run_helper)); then
  echo "== make_opset_graphs.py"
  t=$(now)
  "$PYTHON" "$here/make_opset_graphs.py" "$out" ${helper_models:+--models "$helper_models"}
  echo "== make_opset_graphs.py: $(since "$t") s"
fi

echo "== ort_reference.js"
t=$(now)
status=0
"$NODE" "$here/ort_reference.js" "$out" ${models:+--models "$models"} \
  --threads "$ORT_THREADS" --time "$ORT_TIME_ITERS" || status=$?
echo "== ort_reference.js: $(since "$t") s"

echo "== check_reference.py"
"$PYTHON" "$here/check_reference.py" "$out" ${models:+--models "$models"} || status=$?

echo "== make_corpus: $(since "$t_all") s in all, $(du -sh "$out" | cut -f1) in $out, exit $status"
exit $status
